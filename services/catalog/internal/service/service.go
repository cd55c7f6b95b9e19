// Package service wires the catalog: configuration, stores and routes.
package service

import (
	"context"
	"fmt"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/services/catalog/internal/adapters"
	"quarters.dev/services/catalog/internal/ports"
)

// Config is the catalog's configuration.
type Config struct {
	extredis.Config
	MongoURI      string `env:"QUARTERS_MONGO_URI" required:"true"`
	MongoDatabase string `env:"QUARTERS_MONGO_DATABASE" default:"quarters_catalog"`
}

// Build connects the catalog's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		client, db, err := extmongo.Connect(ctx, cfg.MongoURI, cfg.MongoDatabase)
		if err != nil {
			return nil, err
		}
		rdb, err := extredis.Connect(ctx, cfg.URL)
		if err != nil {
			return nil, err
		}
		listings, err := adapters.NewListings(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("prepare listings: %w", err)
		}
		e := rt.HTTP(nil)
		ports.Routes(e, authn.Middleware(authn.NewStore(rdb)), listings)
		return &bootstrap.App{
			API: e,
			Ready: map[string]func(context.Context) error{
				"mongodb": extmongo.Check(db),
				"redis":   extredis.Check(rdb),
			},
			Closers: []func(context.Context) error{
				func(context.Context) error { return rdb.Close() },
				client.Disconnect,
			},
		}, nil
	}
}
