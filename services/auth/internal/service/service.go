// Package service wires the auth service: configuration, stores, the outbox
// relay, the credential synchronisation and the routes.
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
	"quarters.dev/services/auth/internal/adapters"
	"quarters.dev/services/auth/internal/app"
	"quarters.dev/services/auth/internal/ports"
)

// Config is the auth service's configuration.
type Config struct {
	Mongo      extmongo.Config
	Redis      extredis.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// CredentialSync is how often Redis is re-synchronised with the
	// credential sets in MongoDB.
	CredentialSync time.Duration `env:"QUARTERS_CREDENTIAL_SYNC_INTERVAL" default:"1m"`
}

// Build connects the auth service's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Redis: &cfg.Redis, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		db := st.DB
		orgTopic := cfg.Kafka.Topic("orgs")
		if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers, extkafka.TopicSpec{Name: orgTopic, Partitions: 4}); err != nil {
			_ = st.Close(ctx)
			return nil, fmt.Errorf("prepare topics: %w", err)
		}

		relay := outbox.NewRelay(st.Writer, outbox.Config{Logger: rt.Log, Registerer: rt.Registry},
			adapters.OrgCollection(db))
		orgs := adapters.NewOrgs(db, adapters.OrgEvents(orgTopic), relay.Notifier(adapters.OrgCollection(db)))
		creds, err := adapters.NewCredentials(ctx, db)
		if err != nil {
			_ = st.Close(ctx)
			return nil, err
		}
		tokens := authn.NewStore(st.Redis)
		svc := &app.Service{Orgs: orgs, Credentials: creds, Tokens: tokens}
		n, err := svc.SyncTokens(ctx)
		if err != nil {
			return nil, fmt.Errorf("synchronise credential sets to Redis: %w", err)
		}
		rt.Log.Info("credential sets synchronised", "count", n)

		e := rt.HTTP(ports.BodyLimits)
		ports.Routes(e, svc, cfg.AdminToken)
		return &bootstrap.App{
			API:   e,
			Ready: st.Ready(),
			Workers: []func(context.Context) error{
				relay.Run,
				func(ctx context.Context) error { return syncLoop(ctx, rt, svc, cfg.CredentialSync) },
			},
			Closers: []func(context.Context) error{
				func(context.Context) error { return tokens.Close() },
				st.Close,
			},
		}, nil
	}
}

// syncLoop keeps Redis converged with the credential sets: after a Redis
// flush, or a revocation whose Redis half failed, the next pass repairs it.
func syncLoop(ctx context.Context, rt *bootstrap.Runtime, svc *app.Service, every time.Duration) error {
	if every <= 0 {
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := svc.SyncTokens(ctx); err != nil {
				rt.Log.Warn("credential synchronisation failed", "error", err)
			}
		}
	}
}
