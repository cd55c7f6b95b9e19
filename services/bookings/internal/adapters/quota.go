package adapters

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Quota is the inquiry allowance: a sliding log of the accepted inquiries
// of each org in the last window, one sorted set per org (member the
// inquiry id, score the time it was accepted), decided by one script so
// that concurrent requests cannot both take the last slot.
type Quota struct {
	rdb    redis.UniversalClient
	window time.Duration
	prefix string
}

// NewQuota returns the allowance over window (24 h in production).
func NewQuota(rdb redis.UniversalClient, window time.Duration) *Quota {
	return &Quota{rdb: rdb, window: window, prefix: "quarters:bookings:inquiries:"}
}

// takeScript drops entries older than the window, then admits the member
// when fewer than the limit remain. The clock is Redis's own, so replicas
// of the service agree on it. The key expires one window after the last
// admission. Answers {1, 0} when admitted, {0, ms until the oldest entry
// leaves the window} when not.
var takeScript = redis.NewScript(`
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local member = ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local n = redis.call('ZCARD', key)
if n < limit then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] == nil then
  return {0, window}
end
local wait = tonumber(oldest[2]) + window - now
if wait < 1 then wait = 1 end
return {0, wait}
`)

// Take admits one inquiry of orgID if fewer than limit were admitted in the
// window before now.
func (q *Quota) Take(ctx context.Context, orgID, member string, limit int) (bool, time.Duration, error) {
	res, err := takeScript.Run(ctx, q.rdb, []string{q.prefix + orgID}, q.window.Milliseconds(), limit, member).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("inquiry allowance of %s: %w", orgID, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("inquiry allowance of %s: unexpected answer %v", orgID, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// GiveBack removes an admitted inquiry that was not stored.
func (q *Quota) GiveBack(ctx context.Context, orgID, member string) error {
	if err := q.rdb.ZRem(ctx, q.prefix+orgID, member).Err(); err != nil {
		return fmt.Errorf("give back inquiry slot of %s: %w", orgID, err)
	}
	return nil
}
