// Package domain holds the webhook dispatcher's types and rules: endpoints,
// the webhook events and their payloads, delivery ids and signatures, and the
// states a delivery record passes through.
package domain

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"quarters.dev/pkg/apperr"
)

// Endpoint is a receiver registered by an organisation. It receives every
// webhook event of its organisation.
type Endpoint struct {
	ID        string
	OrgID     string
	URL       string
	Secret    string
	CreatedAt time.Time
}

// MaxURLLength bounds an endpoint URL.
const MaxURLLength = 2048

// ValidateURL checks the shape of an endpoint URL when it is saved. Whether
// its address is allowed is decided when a connection is made, not here:
// a name that resolves to a public address today may not tomorrow.
func ValidateURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", apperr.Invalid("Field url is required.")
	}
	if len(s) > MaxURLLength {
		return "", apperr.Invalid("Field url must be at most %d characters.", MaxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "", apperr.Invalid("Field url must be an absolute http or https URL.")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", apperr.Invalid("Field url must be an absolute http or https URL.")
	}
	if u.User != nil {
		return "", apperr.Invalid("Field url must not carry credentials.")
	}
	if u.Fragment != "" {
		return "", apperr.Invalid("Field url must not carry a fragment.")
	}
	return s, nil
}

// NewSecret returns a random signing secret with 256 bits of entropy.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewEndpointID returns a random endpoint id.
func NewEndpointID() string { return "wh_" + strings.ReplaceAll(uuid.NewString(), "-", "") }

// Sign returns the signature header value of body under secret:
// "sha256=" and the lowercase hex HMAC-SHA256 of the exact body bytes.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature compares a signature header with the expected one in
// constant time, as receivers should.
func VerifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}
