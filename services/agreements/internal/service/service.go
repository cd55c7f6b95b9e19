// Package service wires the agreements service: configuration, stores, the
// outbox relay, the consumer of org and reservation events, the document
// sweep and the routes.
package service

import (
	"context"
	"fmt"
	"time"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/outbox"
	"quarters.dev/pkg/stores"
	"quarters.dev/services/agreements/internal/adapters"
	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/ports"
)

// Config is the agreements service's configuration.
type Config struct {
	Mongo      extmongo.Config
	Redis      extredis.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// ConsumerGroup is the Kafka consumer group of the org and reservation
	// projections.
	ConsumerGroup string `env:"QUARTERS_AGREEMENTS_CONSUMER_GROUP" default:"agreements"`
	// DocumentSweep is how often archived files that nothing refers to are
	// looked for and deleted; 0 turns the sweep off.
	DocumentSweep time.Duration `env:"QUARTERS_DOCUMENT_SWEEP_INTERVAL" default:"15m"`
	// DocumentOrphanAge is how old an unreferenced file must be before the
	// sweep deletes it (younger ones may be uploads in progress).
	DocumentOrphanAge time.Duration `env:"QUARTERS_DOCUMENT_ORPHAN_AGE" default:"1h"`
}

// Build connects the agreements service's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Redis: &cfg.Redis, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		a, err := assemble(ctx, rt, cfg, st)
		if err != nil {
			_ = st.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return a, nil
	}
}

// assemble builds the service on its open stores.
func assemble(ctx context.Context, rt *bootstrap.Runtime, cfg *Config, st *stores.Stores) (*bootstrap.App, error) {
	db := st.DB
	topics := ports.Topics{Orgs: cfg.Kafka.Topic("orgs"), Reservations: cfg.Kafka.Topic("reservations")}
	agreementTopic := cfg.Kafka.Topic("agreements")
	if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers,
		extkafka.TopicSpec{Name: agreementTopic, Partitions: 4},
		extkafka.TopicSpec{Name: topics.Orgs, Partitions: 4},
		extkafka.TopicSpec{Name: topics.Reservations, Partitions: 4},
	); err != nil {
		return nil, fmt.Errorf("prepare topics: %w", err)
	}
	relay := outbox.NewRelay(st.Writer, outbox.Config{Logger: rt.Log, Registerer: rt.Registry},
		adapters.HistoryCollection(db))
	docs, err := adapters.NewDocuments(ctx, db)
	if err != nil {
		return nil, err
	}
	proj := adapters.NewProjections(db)
	svc := &app.Service{
		Histories:    adapters.NewHistories(db, adapters.AgreementEvents(agreementTopic), relay.Notifier(adapters.HistoryCollection(db))),
		Orgs:         proj.Orgs(),
		Reservations: proj.Reservations(),
		Documents:    docs,
		Log:          rt.Log,
	}
	var copts []extkafka.ConsumerOption
	if rt.Tracer != nil {
		copts = append(copts, extkafka.WithTracerProvider(rt.Tracer))
	}
	consumer := extkafka.NewConsumer(cfg.Kafka.Brokers, cfg.ConsumerGroup, []string{topics.Orgs, topics.Reservations},
		ports.EventHandler(topics, proj, rt.Log), rt.Log, rt.Registry, copts...)
	tokens := authn.NewStore(st.Redis)

	e := rt.HTTP(ports.BodyLimits)
	ports.Routes(e, svc, tokens, cfg.AdminToken)
	return &bootstrap.App{
		API:   e,
		Ready: st.Ready(),
		Workers: []func(context.Context) error{
			relay.Run,
			consumer.Run,
			func(ctx context.Context) error { return sweepLoop(ctx, rt, svc, docs, cfg) },
		},
		Closers: []func(context.Context) error{
			func(context.Context) error { return tokens.Close() },
			st.Close,
		},
	}, nil
}

// sweepLoop deletes archived files left without a reference.
func sweepLoop(ctx context.Context, rt *bootstrap.Runtime, svc *app.Service, docs app.Sweepable, cfg *Config) error {
	if cfg.DocumentSweep <= 0 {
		return nil
	}
	t := time.NewTicker(cfg.DocumentSweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n, err := svc.SweepDocuments(ctx, docs, cfg.DocumentOrphanAge)
			if err != nil {
				rt.Log.Warn("document sweep failed", "error", err)
			} else if n > 0 {
				rt.Log.Info("document sweep removed unreferenced files", "count", n)
			}
		}
	}
}
