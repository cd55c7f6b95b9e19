// Package app holds the auth service's use cases: organisations and their
// settings, credential sets, and the token exchange.
package app

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/services/auth/internal/domain"
)

// Orgs stores organisations. Create and Update write the org.created and
// org.updated events in the same single-document update as the state.
type Orgs interface {
	Create(ctx context.Context, o domain.Org) error
	Get(ctx context.Context, id string) (domain.Org, error)
	// Update loads the org, lets change modify it and stores it under a
	// version guard, retrying on a concurrent change. change reports whether
	// anything changed; nothing is written otherwise.
	Update(ctx context.Context, id string, change func(*domain.Org) (bool, error)) (domain.Org, error)
}

// Credentials stores credential sets.
type Credentials interface {
	Insert(ctx context.Context, c domain.Credential) error
	Delete(ctx context.Context, clientID string) error
	Get(ctx context.Context, clientID string) (domain.Credential, error)
	List(ctx context.Context, orgID string) ([]domain.Credential, error)
	// Revoke stamps RevokedAt unless already stamped and returns the set.
	Revoke(ctx context.Context, orgID, clientID string, at time.Time) (domain.Credential, error)
	ForEach(ctx context.Context, fn func(domain.Credential) error) error
}

// Tokens is the Redis side of authentication: what every service checks.
type Tokens interface {
	PutCredential(ctx context.Context, clientID, orgID, secretHash string) error
	RevokeCredential(ctx context.Context, clientID string) error
	VerifySecret(ctx context.Context, clientID, secret string) (authn.Principal, error)
	Mint(ctx context.Context, p authn.Principal) (string, error)
}

// Service is the auth service's application layer.
type Service struct {
	Orgs        Orgs
	Credentials Credentials
	Tokens      Tokens
	Now         func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// NewID returns an opaque random id with a short prefix.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// CreateOrg creates an organisation.
func (s *Service) CreateOrg(ctx context.Context, c domain.OrgChanges) (domain.Org, error) {
	o, err := domain.NewOrg(NewID("org_"), c, s.now())
	if err != nil {
		return domain.Org{}, err
	}
	if err := s.Orgs.Create(ctx, o); err != nil {
		return domain.Org{}, fmt.Errorf("create org: %w", err)
	}
	return o, nil
}

// GetOrg returns an organisation.
// CheckOrg answers not found for an unknown org.
func (s *Service) CheckOrg(ctx context.Context, id string) error {
	_, err := s.Orgs.Get(ctx, id)
	return err
}

func (s *Service) GetOrg(ctx context.Context, id string) (domain.Org, error) {
	return s.Orgs.Get(ctx, id)
}

// UpdateOrg changes an organisation's settings.
func (s *Service) UpdateOrg(ctx context.Context, id string, c domain.OrgChanges) (domain.Org, error) {
	now := s.now()
	return s.Orgs.Update(ctx, id, func(o *domain.Org) (bool, error) {
		changed, err := o.Apply(c)
		if changed {
			o.UpdatedAt = now
		}
		return changed, err
	})
}

// NewCredential is a freshly created set with its secret, shown only once.
type NewCredential struct {
	domain.Credential
	Secret string
}

// CreateCredential creates a credential set for an organisation. The set is
// usable on every service once this returns; if it cannot be made usable, it
// is not kept.
func (s *Service) CreateCredential(ctx context.Context, orgID string, name *string) (NewCredential, error) {
	n, err := domain.CredentialName(name)
	if err != nil {
		return NewCredential{}, err
	}
	if _, err := s.Orgs.Get(ctx, orgID); err != nil {
		return NewCredential{}, err
	}
	secret, hash := authn.NewSecret()
	c := domain.Credential{
		ClientID:   authn.NewClientID(),
		OrgID:      orgID,
		Name:       n,
		SecretHash: hash,
		CreatedAt:  s.now(),
	}
	if err := s.Credentials.Insert(ctx, c); err != nil {
		return NewCredential{}, fmt.Errorf("store credential set: %w", err)
	}
	if err := s.Tokens.PutCredential(ctx, c.ClientID, c.OrgID, c.SecretHash); err != nil {
		// The secret is never shown, so a set that is not usable must not
		// linger: remove it and let the operator try again.
		if derr := s.Credentials.Delete(context.WithoutCancel(ctx), c.ClientID); derr != nil {
			err = errors.Join(err, derr)
		}
		return NewCredential{}, apperr.Wrap(apperr.Unavailable, err, "The credential set could not be activated. Retry shortly.")
	}
	return NewCredential{Credential: c, Secret: secret}, nil
}

// ListCredentials lists an organisation's sets, oldest first.
func (s *Service) ListCredentials(ctx context.Context, orgID string) ([]domain.Credential, error) {
	if _, err := s.Orgs.Get(ctx, orgID); err != nil {
		return nil, err
	}
	return s.Credentials.List(ctx, orgID)
}

// RevokeCredential revokes a set: every token minted from it fails from the
// next call on. Revoking a revoked set again succeeds and re-applies the
// revocation to Redis.
func (s *Service) RevokeCredential(ctx context.Context, orgID, clientID string) error {
	if _, err := s.Orgs.Get(ctx, orgID); err != nil {
		return err
	}
	if _, err := s.Credentials.Revoke(ctx, orgID, clientID, s.now()); err != nil {
		return err
	}
	if err := s.Tokens.RevokeCredential(ctx, clientID); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "The revocation could not be applied yet. Retry the request.")
	}
	return nil
}

// ErrInvalidClient means the client id or secret is wrong, unknown or revoked.
var ErrInvalidClient = errors.New("invalid client")

// IssueToken exchanges a client id and secret for an access token.
func (s *Service) IssueToken(ctx context.Context, clientID, secret string) (string, error) {
	p, err := s.Tokens.VerifySecret(ctx, clientID, secret)
	if errors.Is(err, authn.ErrUnauthenticated) {
		// Redis may have lost the set (a restart without persistence):
		// the database is the record, so restore an active set from it.
		p, err = s.restore(ctx, clientID, secret)
	}
	if err != nil {
		return "", err
	}
	return s.Tokens.Mint(ctx, p)
}

func (s *Service) restore(ctx context.Context, clientID, secret string) (authn.Principal, error) {
	c, err := s.Credentials.Get(ctx, clientID)
	if apperr.Is(err, apperr.NotFound) {
		return authn.Principal{}, ErrInvalidClient
	}
	if err != nil {
		return authn.Principal{}, err
	}
	if !c.Active() || subtle.ConstantTimeCompare([]byte(authn.Hash(secret)), []byte(c.SecretHash)) != 1 {
		return authn.Principal{}, ErrInvalidClient
	}
	if err := s.Tokens.PutCredential(ctx, c.ClientID, c.OrgID, c.SecretHash); err != nil {
		return authn.Principal{}, err
	}
	return s.Tokens.VerifySecret(ctx, clientID, secret)
}

// SyncTokens writes every set's state to Redis: active sets are put, revoked
// ones removed. It runs at start and periodically, so Redis converges to the
// database after a flush or a failed revocation.
func (s *Service) SyncTokens(ctx context.Context) (int, error) {
	n := 0
	err := s.Credentials.ForEach(ctx, func(c domain.Credential) error {
		n++
		if c.Active() {
			return s.Tokens.PutCredential(ctx, c.ClientID, c.OrgID, c.SecretHash)
		}
		return s.Tokens.RevokeCredential(ctx, c.ClientID)
	})
	return n, err
}
