package domain

import (
	"strings"
	"time"
	"unicode/utf8"

	"quarters.dev/pkg/apperr"
)

// Credential is a credential set of an organisation. Its secret is never
// stored, only SecretHash.
type Credential struct {
	ClientID   string
	OrgID      string
	Name       string
	SecretHash string
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// Active reports whether the set may still authenticate.
func (c Credential) Active() bool { return c.RevokedAt == nil }

// CredentialName validates an optional set name.
func CredentialName(name *string) (string, error) {
	if name == nil {
		return "", nil
	}
	n := strings.TrimSpace(*name)
	if utf8.RuneCountInString(n) > MaxNameLength {
		return "", apperr.Invalid("Field name must be at most %d characters.", MaxNameLength)
	}
	return n, nil
}
