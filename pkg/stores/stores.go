// Package stores opens the stores a service is configured for — MongoDB,
// Redis and Kafka — in one call at start-up, and hands back their readiness
// checks and one closer, so that no service writes its own connection block.
package stores

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
)

// Config names the stores to open; a nil field is a store the service does
// not use.
type Config struct {
	Mongo *extmongo.Config
	Redis *extredis.Config
	Kafka *extkafka.Config
}

// Stores are the open connections of one service.
type Stores struct {
	// DB is the service's own database (nil without Mongo).
	DB *mongo.Database
	// Redis is nil without Redis.
	Redis *redis.Client
	// Writer publishes to Kafka with the settings of extkafka.NewWriter (nil
	// without Kafka).
	Writer *kafka.Writer

	ready   map[string]func(context.Context) error
	closers []func(context.Context) error
}

// Open connects to every configured store of the service named service. On
// failure it closes what it had opened and names the store that failed.
func Open(ctx context.Context, service string, cfg Config) (*Stores, error) {
	s := &Stores{ready: map[string]func(context.Context) error{}}
	if cfg.Mongo != nil {
		client, db, err := extmongo.Connect(ctx, cfg.Mongo.URI, cfg.Mongo.DatabaseFor(service))
		if err != nil {
			return nil, err
		}
		s.DB = db
		s.ready["mongodb"] = extmongo.Check(db)
		s.closers = append(s.closers, client.Disconnect)
	}
	if cfg.Redis != nil {
		rdb, err := extredis.Connect(ctx, cfg.Redis.URL)
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		s.Redis = rdb
		s.ready["redis"] = extredis.Check(rdb)
		s.closers = append(s.closers, func(context.Context) error { return rdb.Close() })
	}
	if cfg.Kafka != nil {
		if len(cfg.Kafka.Brokers) == 0 {
			_ = s.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("open stores of %s: no Kafka brokers", service)
		}
		w := extkafka.NewWriter(cfg.Kafka.Brokers)
		s.Writer = w
		s.ready["kafka"] = extkafka.Check(cfg.Kafka.Brokers)
		s.closers = append(s.closers, func(context.Context) error { return w.Close() })
	}
	return s, nil
}

// Ready returns the readiness checks of the open stores, by store name
// ("mongodb", "redis", "kafka"), for bootstrap.App.Ready.
func (s *Stores) Ready() map[string]func(context.Context) error {
	out := make(map[string]func(context.Context) error, len(s.ready))
	for k, v := range s.ready {
		out[k] = v
	}
	return out
}

// Close closes the stores in the reverse order of opening: the Kafka writer
// flushes first, the MongoDB client disconnects last.
func (s *Stores) Close(ctx context.Context) error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i](ctx))
	}
	s.closers = nil
	return errors.Join(errs...)
}
