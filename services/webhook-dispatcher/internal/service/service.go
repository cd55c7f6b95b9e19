// Package service wires the webhook dispatcher: configuration, the store,
// the consumer of every domain topic, the dispatcher and the admin routes.
package service

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/stores"
	"quarters.dev/services/webhook-dispatcher/internal/adapters"
	"quarters.dev/services/webhook-dispatcher/internal/app"
	"quarters.dev/services/webhook-dispatcher/internal/ports"
)

// Config is the webhook dispatcher's configuration.
type Config struct {
	Mongo      extmongo.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// ConsumerGroup is the Kafka consumer group of the dispatcher's replicas.
	ConsumerGroup string `env:"QUARTERS_WEBHOOK_CONSUMER_GROUP" default:"webhook-dispatcher"`
	// HeaderPrefix is the middle segment of the x-…-event, x-…-delivery and
	// x-…-signature headers.
	HeaderPrefix string `env:"QUARTERS_WEBHOOK_HEADER_PREFIX" default:"legacy"`
	// AllowHTTP accepts http:// endpoints. Only the dev stack sets it.
	AllowHTTP bool `env:"QUARTERS_WEBHOOK_ALLOW_HTTP" default:"false"`
	// AllowPrivate lets deliveries reach loopback and private addresses.
	// Only the dev stack sets it.
	AllowPrivate bool `env:"QUARTERS_WEBHOOK_ALLOW_PRIVATE" default:"false"`
	// Timeout bounds one attempt in total.
	Timeout time.Duration `env:"QUARTERS_WEBHOOK_TIMEOUT" default:"10s"`
	// MaxInflight bounds concurrent attempts overall.
	MaxInflight int `env:"QUARTERS_WEBHOOK_MAX_INFLIGHT" default:"64"`
	// MaxInflightPerEndpoint bounds concurrent attempts to one endpoint.
	MaxInflightPerEndpoint int `env:"QUARTERS_WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT" default:"4"`
	// QueueSize bounds the deliveries queued in memory per endpoint.
	QueueSize int `env:"QUARTERS_WEBHOOK_QUEUE_SIZE" default:"1000"`
	// ScanInterval is how often pending deliveries that are not queued are
	// looked for.
	ScanInterval time.Duration `env:"QUARTERS_WEBHOOK_SCAN_INTERVAL" default:"5s"`
	// InterruptedAfter is how long an attempt may stay unrecorded before it
	// is taken to have been interrupted by a stop.
	InterruptedAfter time.Duration `env:"QUARTERS_WEBHOOK_INTERRUPTED_AFTER" default:"1m"`

	// RootCAs replaces the system's trusted roots for receivers. Tests set
	// it to trust their own receivers; it has no environment variable.
	RootCAs *x509.CertPool
	// Resolver replaces DNS for receivers (tests only).
	Resolver adapters.Resolver
}

func (c *Config) validate() error {
	switch {
	case c.MaxInflight < 1:
		return fmt.Errorf("QUARTERS_WEBHOOK_MAX_INFLIGHT must be at least 1")
	case c.MaxInflightPerEndpoint < 1 || c.MaxInflightPerEndpoint >= c.MaxInflight && c.MaxInflight > 1:
		return fmt.Errorf("QUARTERS_WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT must be at least 1 and below QUARTERS_WEBHOOK_MAX_INFLIGHT")
	case c.Timeout <= 0:
		return fmt.Errorf("QUARTERS_WEBHOOK_TIMEOUT must be positive")
	case c.InterruptedAfter <= c.Timeout:
		return fmt.Errorf("QUARTERS_WEBHOOK_INTERRUPTED_AFTER must exceed QUARTERS_WEBHOOK_TIMEOUT")
	case c.QueueSize < 1:
		return fmt.Errorf("QUARTERS_WEBHOOK_QUEUE_SIZE must be at least 1")
	case c.HeaderPrefix == "":
		return fmt.Errorf("QUARTERS_WEBHOOK_HEADER_PREFIX must not be empty")
	}
	return nil
}

// Build connects the dispatcher's store and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		if err := cfg.validate(); err != nil {
			return nil, err
		}
		if cfg.AllowHTTP || cfg.AllowPrivate {
			rt.Log.Warn("webhook safety relaxed: for development only",
				"allow_http", cfg.AllowHTTP, "allow_private", cfg.AllowPrivate)
		}
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		store, err := adapters.NewStore(ctx, st.DB)
		if err != nil {
			_ = st.Close(ctx)
			return nil, err
		}
		var specs []extkafka.TopicSpec
		for _, k := range adapters.Kinds {
			specs = append(specs, extkafka.TopicSpec{Name: cfg.Kafka.Topic(k), Partitions: 4})
		}
		if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers, specs...); err != nil {
			_ = st.Close(ctx)
			return nil, fmt.Errorf("prepare topics: %w", err)
		}

		metrics := adapters.NewMetrics(rt.Registry)
		sender := adapters.NewSender(adapters.SenderConfig{
			HeaderPrefix:    cfg.HeaderPrefix,
			Timeout:         cfg.Timeout,
			AllowHTTP:       cfg.AllowHTTP,
			AllowPrivate:    cfg.AllowPrivate,
			Resolver:        cfg.Resolver,
			RootCAs:         cfg.RootCAs,
			MaxConnsPerHost: 0,
		})
		endpoints, pending, records := store.Endpoints(), store.Pending(), store.Records()
		dispatcher := app.NewDispatcher(app.DispatcherConfig{
			MaxInflight:            cfg.MaxInflight,
			MaxInflightPerEndpoint: cfg.MaxInflightPerEndpoint,
			QueueSize:              cfg.QueueSize,
			ScanInterval:           cfg.ScanInterval,
			ScanAge:                cfg.ScanInterval,
			InterruptedAfter:       cfg.InterruptedAfter,
		}, pending, records, endpoints, sender, metrics, rt.Log)
		svc := &app.Service{Endpoints: endpoints, Pending: pending, Records: records, Orgs: store.Orgs(), Dispatcher: dispatcher}

		handler := ports.NewConsumer(svc, cfg.Kafka.Topic, rt.Log)
		handler.Malformed = metrics.Malformed
		var opts []extkafka.ConsumerOption
		if rt.Tracer != nil {
			opts = append(opts, extkafka.WithTracerProvider(rt.Tracer))
		}
		consumer := extkafka.NewConsumer(cfg.Kafka.Brokers, cfg.ConsumerGroup, handler.Topics(), handler.Handle,
			rt.Log, rt.Registry, opts...)

		e := rt.HTTP(nil)
		ports.Routes(e, svc, cfg.AdminToken)
		return &bootstrap.App{
			API:     e,
			Ready:   st.Ready(),
			Workers: []func(context.Context) error{consumer.Run, dispatcher.Run},
			Closers: []func(context.Context) error{
				func(context.Context) error { sender.CloseIdle(); return nil },
				st.Close,
			},
		}, nil
	}
}
