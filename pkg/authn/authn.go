// Package authn authenticates every request of every service: an opaque
// bearer token or HTTP Basic with a credential set, both checked against Redis
// in one round trip, so that revoking a set fails its tokens on the very next
// call on every service. Nothing is cached in process, and when Redis cannot
// answer the request is refused.
package authn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// TokenTTL is the lifetime of an access token.
const TokenTTL = 24 * time.Hour

const (
	tokenPrefix  = "qt_"
	secretPrefix = "qs_"
	clientPrefix = "qc_"
	// A client id is clientPrefix and 24 hex digits.
	clientHexLen = 24
	// 32 random bytes in unpadded base64url.
	randomLen = 43
	// A token is tokenPrefix, the hex digits of its client id, '_', and
	// randomLen random characters. Naming the set lets validation read the
	// token and its set's state with one MGET.
	tokenLen = len(tokenPrefix) + clientHexLen + 1 + randomLen
)

// Principal is the authenticated caller: a credential set of an organisation.
type Principal struct {
	OrgID    string
	ClientID string
}

// ErrUnauthenticated means the credential is missing, malformed, unknown,
// expired or revoked. Callers never learn which.
var ErrUnauthenticated = errors.New("authn: not authenticated")

// Store keeps credential sets and tokens in Redis. Only SHA-256 hashes of
// secrets and tokens are stored: both are random and high-entropy, so a fast
// hash compared in constant time is the right stored form.
//
// Keys: "quarters:cred:{<clientId>}" holds "<orgId> <secret hash>" while the
// set is active; "quarters:tok:{<clientId>}:<token hash>" holds the client id
// for the token's lifetime. The braces keep a set's keys in one Redis Cluster
// slot, so one MGET reads a token with its set.
type Store struct {
	rdb    redis.UniversalClient
	reads  *reads
	prefix string
}

// NewStore returns a store under the key prefix "quarters:". Close it when
// done.
func NewStore(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, reads: newReads(rdb), prefix: "quarters:"}
}

// Close stops the store's read batching; it does not close the Redis client.
func (s *Store) Close() error {
	s.reads.close()
	return nil
}

func (s *Store) credKey(clientID string) string { return s.prefix + "cred:{" + clientID + "}" }
func (s *Store) tokenKey(clientID, hash string) string {
	return s.prefix + "tok:{" + clientID + "}:" + hash
}

// NewClientID returns a fresh opaque client id.
func NewClientID() string {
	var b [clientHexLen / 2]byte
	_, _ = rand.Read(b[:])
	return clientPrefix + hex.EncodeToString(b[:])
}

// NewSecret returns a fresh client secret and its stored hash.
func NewSecret() (secret string, hash string) {
	secret = secretPrefix + random()
	return secret, Hash(secret)
}

// Hash is the stored form of a secret or token.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// PutCredential records an active credential set. Called when a set is
// created and whenever the owner re-synchronises Redis from its database.
func (s *Store) PutCredential(ctx context.Context, clientID, orgID, secretHash string) error {
	if err := s.rdb.Set(ctx, s.credKey(clientID), orgID+" "+secretHash, 0).Err(); err != nil {
		return fmt.Errorf("store credential %s: %w", clientID, err)
	}
	return nil
}

// RevokeCredential removes a credential set in one operation: every token
// minted from it fails from the next validation on, on every service.
func (s *Store) RevokeCredential(ctx context.Context, clientID string) error {
	if err := s.rdb.Del(ctx, s.credKey(clientID)).Err(); err != nil {
		return fmt.Errorf("revoke credential %s: %w", clientID, err)
	}
	return nil
}

// VerifySecret checks a client id and secret.
func (s *Store) VerifySecret(ctx context.Context, clientID, secret string) (Principal, error) {
	if !validClientID(clientID) || len(secret) > 256 {
		return Principal{}, ErrUnauthenticated
	}
	vals, err := s.reads.mget(ctx, s.credKey(clientID))
	if err != nil {
		return Principal{}, fmt.Errorf("read credential: %w", err)
	}
	val, _ := vals[0].(string)
	org, stored, _ := strings.Cut(val, " ")
	given := Hash(secret)
	if org == "" || subtle.ConstantTimeCompare([]byte(stored), []byte(given)) != 1 {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{OrgID: org, ClientID: clientID}, nil
}

func validClientID(id string) bool {
	return len(id) == len(clientPrefix)+clientHexLen && strings.HasPrefix(id, clientPrefix) &&
		isHex(id[len(clientPrefix):])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Mint issues a token for a verified credential set.
func (s *Store) Mint(ctx context.Context, p Principal) (string, error) {
	if !validClientID(p.ClientID) {
		return "", fmt.Errorf("mint token: malformed client id %q", p.ClientID)
	}
	token := tokenPrefix + p.ClientID[len(clientPrefix):] + "_" + random()
	if err := s.rdb.Set(ctx, s.tokenKey(p.ClientID, Hash(token)), p.ClientID, TokenTTL).Err(); err != nil {
		return "", fmt.Errorf("store token: %w", err)
	}
	return token, nil
}

// Validate resolves a bearer token. The token and its set are read with one
// MGET: a token whose set is gone (revoked) is as dead as an expired one.
func (s *Store) Validate(ctx context.Context, token string) (Principal, error) {
	if !wellFormedToken(token) {
		return Principal{}, ErrUnauthenticated
	}
	tokKey, credKey, clientID := s.validationKeys(token)
	vals, err := s.reads.mget(ctx, tokKey, credKey)
	if err != nil {
		return Principal{}, fmt.Errorf("validate token: %w", err)
	}
	owner, _ := vals[0].(string)
	cred, _ := vals[1].(string)
	org, _, _ := strings.Cut(cred, " ")
	if owner != clientID || org == "" {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{ClientID: clientID, OrgID: org}, nil
}

// validationKeys returns a well-formed token's key, its set's key and its
// client id: tokenKey(clientID, Hash(token)) and credKey(clientID), cut
// from one string, as every authenticated request builds them.
func (s *Store) validationKeys(token string) (tokKey, credKey, clientID string) {
	hexID := token[len(tokenPrefix) : len(tokenPrefix)+clientHexLen]
	var hash [2 * sha256.Size]byte
	sum := sha256.Sum256([]byte(token))
	hex.Encode(hash[:], sum[:])
	var b strings.Builder
	b.Grow(2*len(s.prefix) + len("tok:{}:cred:{}") + 2*(len(clientPrefix)+clientHexLen) + len(hash))
	b.WriteString(s.prefix)
	b.WriteString("tok:{")
	b.WriteString(clientPrefix)
	b.WriteString(hexID)
	b.WriteString("}:")
	b.Write(hash[:])
	tokEnd := b.Len()
	b.WriteString(s.prefix)
	b.WriteString("cred:{")
	idStart := b.Len()
	b.WriteString(clientPrefix)
	b.WriteString(hexID)
	idEnd := b.Len()
	b.WriteString("}")
	all := b.String()
	return all[:tokEnd], all[tokEnd:], all[idStart:idEnd]
}

func wellFormedToken(t string) bool {
	if len(t) != tokenLen || !strings.HasPrefix(t, tokenPrefix) {
		return false
	}
	hexEnd := len(tokenPrefix) + clientHexLen
	if !isHex(t[len(tokenPrefix):hexEnd]) || t[hexEnd] != '_' {
		return false
	}
	for i := hexEnd + 1; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
