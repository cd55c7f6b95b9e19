package stores_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/stores"
	"quarters.dev/pkg/testenv"
)

func TestOpenEveryStoreReportsReadyAndCloses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := stores.Config{
		Mongo: &extmongo.Config{URI: testenv.MongoURI(t), Database: testenv.Database(t)},
		Redis: &extredis.Config{URL: testenv.RedisURL(t)},
		Kafka: &extkafka.Config{Brokers: testenv.KafkaBrokers(t)},
	}
	s, err := stores.Open(ctx, "catalog", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.DB == nil || s.Redis == nil || s.Writer == nil {
		t.Fatalf("open stores: db %v, redis %v, writer %v", s.DB, s.Redis, s.Writer)
	}
	if s.DB.Name() != cfg.Mongo.Database {
		t.Errorf("database %q, want %q", s.DB.Name(), cfg.Mongo.Database)
	}
	ready := s.Ready()
	for _, name := range []string{"mongodb", "redis", "kafka"} {
		check, ok := ready[name]
		if !ok {
			t.Errorf("no readiness check for %s", name)
			continue
		}
		if err := check(ctx); err != nil {
			t.Errorf("%s not ready: %v", name, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Redis.Ping(ctx).Err(); err == nil {
		t.Error("Redis still answers after Close")
	}
}

func TestOpenOnlyWhatIsConfigured(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := stores.Open(ctx, "availability", stores.Config{Redis: &extredis.Config{URL: testenv.RedisURL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if s.DB != nil || s.Writer != nil {
		t.Fatal("opened a store that was not configured")
	}
	if got := len(s.Ready()); got != 1 {
		t.Fatalf("%d readiness checks, want 1 (redis)", got)
	}
}

func TestOpenFailureNamesTheStore(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = stores.Open(ctx, "bookings", stores.Config{
		Mongo: &extmongo.Config{URI: testenv.MongoURI(t), Database: testenv.Database(t)},
		Redis: &extredis.Config{URL: "redis://" + dead + "/0"},
	})
	if err == nil || !strings.Contains(err.Error(), "Redis") {
		t.Fatalf("open with Redis down: %v, want an error naming Redis", err)
	}
}
