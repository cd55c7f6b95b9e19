// Package testenv hands tests the real dependencies that the test runner
// started for them: the embedded MongoDB-compatible store, the embedded Kafka
// broker and Redis, each reached over TCP by the real clients. It reads their
// addresses from the environment, the way end-to-end suites are handed their
// endpoints, so that neither pkg nor any service depends on the dev stack:
//
//	QUARTERS_TEST_MONGO_URI   MongoDB URI (the embedded store's carries its pool size)
//	QUARTERS_TEST_KAFKA       comma-separated Kafka brokers
//	QUARTERS_TEST_REDIS_URL   Redis URL (default redis://127.0.0.1:6379/0)
//
// `make test` starts the stores once and exports these; to run one package by
// hand, wrap the command the same way:
//
//	go run ./tools/devstack/cmd/testdeps -- go test ./services/auth/...
//
// Tests share the stores, so each takes names of its own: Database and
// TopicPrefix are unique per test.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Environment variables read by this package.
const (
	EnvMongoURI = "QUARTERS_TEST_MONGO_URI"
	EnvKafka    = "QUARTERS_TEST_KAFKA"
	EnvRedisURL = "QUARTERS_TEST_REDIS_URL"
)

const hint = "run the tests through `make test`, or wrap the command: go run ./tools/devstack/cmd/testdeps -- go test ./..."

// MongoURI returns the URI of the shared test store. The test fails when the
// store was not provided: a store-backed test never passes without its store.
func MongoURI(tb testing.TB) string {
	tb.Helper()
	uri := os.Getenv(EnvMongoURI)
	if uri == "" {
		tb.Fatalf("%s is not set: %s", EnvMongoURI, hint)
	}
	return uri
}

// Database returns a database name unique to this test. The database is
// dropped when the test ends.
func Database(tb testing.TB) string {
	tb.Helper()
	uri := MongoURI(tb)
	name := "t_" + Unique()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client, err := mongo.Connect(options.Client().ApplyURI(uri))
		if err != nil {
			return
		}
		defer client.Disconnect(ctx)
		_ = client.Database(name).Drop(ctx)
	})
	return name
}

// Mongo connects to the shared store and returns a database unique to this
// test; the client is closed and the database dropped when the test ends.
func Mongo(tb testing.TB) *mongo.Database {
	tb.Helper()
	uri := MongoURI(tb)
	name := Database(tb)
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		tb.Fatalf("connect to the test store: %v", err)
	}
	tb.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(name)
}

// KafkaBrokers returns the brokers of the shared test Kafka.
func KafkaBrokers(tb testing.TB) []string {
	tb.Helper()
	v := os.Getenv(EnvKafka)
	if v == "" {
		tb.Fatalf("%s is not set: %s", EnvKafka, hint)
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// TopicPrefix returns a topic prefix unique to this test ("t<hex>."), so that
// tests sharing the broker never read each other's events.
func TopicPrefix(tb testing.TB) string {
	tb.Helper()
	return "t" + Unique() + "."
}

// RedisURL returns the URL of the test Redis: QUARTERS_TEST_REDIS_URL, else
// the local one on 6379. The test fails when it does not answer.
func RedisURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(EnvRedisURL)
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("%s: %v", EnvRedisURL, err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("no Redis at %s (%v): %s", url, err, hint)
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

// Unique returns 12 random hex characters for names that must not collide
// between tests sharing a store.
func Unique() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
