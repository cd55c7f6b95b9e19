// Package extredis connects to Redis with timeouts suited to a request path.
package extredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is the Redis part of a service's configuration.
type Config struct {
	URL string `env:"QUARTERS_REDIS_URL" required:"true"`
}

// Connect parses the URL, applies short timeouts and checks that Redis
// answers.
func Connect(ctx context.Context, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("QUARTERS_REDIS_URL is not a Redis URL (redis://host:port/db, or unix:///path/redis.sock?db=0): %w", err)
	}
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	opts.PoolTimeout = 2 * time.Second
	if opts.PoolSize == 0 {
		opts.PoolSize = 64
	}
	opts.MinIdleConns = 4
	rdb := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("connect to Redis at %s: %w", opts.Addr, err)
	}
	return rdb, nil
}

// Check returns a readiness check.
func Check(rdb redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
}
