package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Idempotency remembers, per org and Idempotency-Key, the body a POST
// carried and the id it created, for a window (24 h). The key's value is
// "p:<body hash>" while the first request runs and "d:<body hash>:<id>"
// once it succeeded.
type Idempotency struct {
	rdb    redis.UniversalClient
	window time.Duration
}

// NewIdempotency returns the store.
func NewIdempotency(rdb redis.UniversalClient, window time.Duration) *Idempotency {
	return &Idempotency{rdb: rdb, window: window}
}

func (s *Idempotency) key(orgID, key string) string {
	h := sha256.Sum256([]byte(key))
	return "quarters:bookings:idem:{" + orgID + "}:" + hex.EncodeToString(h[:])
}

// Begin claims key for a request whose body hashes to bodyHash. When an
// earlier request holds it, Begin returns that request's state instead:
// done with its id, or still running, and whether its body was the same.
func (s *Idempotency) Begin(ctx context.Context, orgID, key, bodyHash string) (claimed bool, prevID string, sameBody bool, err error) {
	k := s.key(orgID, key)
	ok, err := s.rdb.SetNX(ctx, k, "p:"+bodyHash, s.window).Result()
	if err != nil {
		return false, "", false, fmt.Errorf("idempotency key: %w", err)
	}
	if ok {
		return true, "", true, nil
	}
	v, err := s.rdb.Get(ctx, k).Result()
	if errors.Is(err, redis.Nil) {
		// Expired between the two calls: try once more.
		return s.Begin(ctx, orgID, key, bodyHash)
	}
	if err != nil {
		return false, "", false, fmt.Errorf("idempotency key: %w", err)
	}
	state, rest, _ := strings.Cut(v, ":")
	hash, id, _ := strings.Cut(rest, ":")
	if state == "d" {
		return false, id, hash == bodyHash, nil
	}
	return false, "", hash == bodyHash, nil
}

// Done records the id the request created.
func (s *Idempotency) Done(ctx context.Context, orgID, key, bodyHash, id string) error {
	return s.rdb.Set(ctx, s.key(orgID, key), "d:"+bodyHash+":"+id, s.window).Err()
}

// Abandon frees key after a request that created nothing, so that a retry
// runs again.
func (s *Idempotency) Abandon(ctx context.Context, orgID, key string) error {
	return s.rdb.Del(ctx, s.key(orgID, key)).Err()
}
