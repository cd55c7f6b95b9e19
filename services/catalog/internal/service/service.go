// Package service wires the catalog: configuration, stores and routes.
package service

import (
	"context"
	"fmt"
	"time"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/services/catalog/internal/adapters"
	"quarters.dev/services/catalog/internal/ports"
	"quarters.dev/services/catalog/internal/view"
)

// Config is the catalog's configuration.
type Config struct {
	Mongo extmongo.Config
	Redis extredis.Config
	// ViewReload is how often the in-memory view of published listings is
	// rebuilt from MongoDB, as a safety net behind the write-through.
	ViewReload time.Duration `env:"QUARTERS_CATALOG_VIEW_RELOAD_INTERVAL" default:"30s"`
}

// Build connects the catalog's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		client, db, err := extmongo.Connect(ctx, cfg.Mongo.URI, cfg.Mongo.DatabaseFor(rt.Name))
		if err != nil {
			return nil, err
		}
		rdb, err := extredis.Connect(ctx, cfg.Redis.URL)
		if err != nil {
			return nil, err
		}
		listings, err := adapters.NewListings(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("prepare listings: %w", err)
		}
		published, err := view.New(ports.RenderList)
		if err != nil {
			return nil, err
		}
		if _, err := published.Reload(ctx, listings); err != nil {
			return nil, fmt.Errorf("load published listings: %w", err)
		}
		store := authn.NewStore(rdb)
		e := rt.HTTP(nil)
		ports.Routes(e, authn.Middleware(store), published)
		return &bootstrap.App{
			API: e,
			Ready: map[string]func(context.Context) error{
				"mongodb": extmongo.Check(db),
				"redis":   extredis.Check(rdb),
			},
			Workers: []func(context.Context) error{
				func(ctx context.Context) error { return reloadLoop(ctx, rt, published, listings, cfg.ViewReload) },
			},
			Closers: []func(context.Context) error{
				func(context.Context) error { return store.Close() },
				func(context.Context) error { return rdb.Close() },
				client.Disconnect,
			},
		}, nil
	}
}

// reloadLoop rebuilds the view from the record periodically, so that it
// converges even after a missed update.
func reloadLoop(ctx context.Context, rt *bootstrap.Runtime, v *view.View, src view.Source, every time.Duration) error {
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
			if _, err := v.Reload(ctx, src); err != nil {
				rt.Log.Warn("reload published listings", "error", err)
			}
		}
	}
}
