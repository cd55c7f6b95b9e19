// Package testenv gives tests the real dependencies: the local Redis (or an
// embedded one when none answers), the embedded MongoDB-compatible store and
// the embedded Kafka broker, each reached over TCP by the real clients.
package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"quarters.dev/tools/devstack/embedded"
)

// RedisURL returns the URL of a Redis for the test: QUARTERS_TEST_REDIS_URL,
// else the local one on 6379 when it answers, else an embedded one that lives
// as long as the test.
func RedisURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("QUARTERS_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("QUARTERS_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Logf("no Redis at %s (%v); using an embedded one", url, err)
		return "redis://" + miniredis.RunT(tb).Addr() + "/0"
	}
	return url
}

// Redis returns a client of RedisURL, closed when the test ends.
func Redis(tb testing.TB) *redis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(RedisURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// MongoURI starts an embedded store for the test and returns its URI (one
// connection per client, as the dev stack uses it).
func MongoURI(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := embedded.StartMongo(ctx, tb.TempDir(), "", nil)
	if err != nil {
		tb.Fatalf("start embedded MongoDB: %v", err)
	}
	tb.Cleanup(m.Stop)
	return m.URI
}

// Kafka starts an embedded broker for the test.
func Kafka(tb testing.TB) *embedded.Kafka {
	tb.Helper()
	k, err := embedded.StartKafka("", tb.TempDir())
	if err != nil {
		tb.Fatalf("start embedded Kafka: %v", err)
	}
	tb.Cleanup(k.Stop)
	return k
}
