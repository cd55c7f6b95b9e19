// Package service wires the catalog: configuration, stores, the outbox
// relay, the org projection, the view of published listings and the routes.
package service

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/segmentio/kafka-go"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/outbox"
	"quarters.dev/pkg/stores"
	"quarters.dev/services/catalog/internal/adapters"
	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
	"quarters.dev/services/catalog/internal/ports"
	"quarters.dev/services/catalog/internal/view"
)

// Config is the catalog's configuration.
type Config struct {
	Mongo      extmongo.Config
	Redis      extredis.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// MediaURL is the public base of the image renditions' URIs.
	MediaURL *url.URL `env:"QUARTERS_MEDIA_URL" default:"https://media.quarters.dev"`
	// OrgWait is how long creating a property waits for an org the catalog
	// has not yet heard of before answering 404.
	OrgWait time.Duration `env:"QUARTERS_CATALOG_ORG_WAIT" default:"5s"`
	// ViewReload is how often the view of published listings is compared
	// with MongoDB, as a safety net behind the listing events.
	ViewReload time.Duration `env:"QUARTERS_CATALOG_VIEW_RELOAD_INTERVAL" default:"5m"`
}

// Topic partitions of the topic the catalog owns.
const listingPartitions = 4

// Build connects the catalog's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		if cfg.MediaURL == nil || (cfg.MediaURL.Scheme != "https" && cfg.MediaURL.Scheme != "http") || cfg.MediaURL.Host == "" {
			return nil, fmt.Errorf("QUARTERS_MEDIA_URL must be an absolute http(s) URL")
		}
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Redis: &cfg.Redis, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		app, err := build(ctx, rt, cfg, st)
		if err != nil {
			_ = st.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return app, nil
	}
}

func build(ctx context.Context, rt *bootstrap.Runtime, cfg *Config, st *stores.Stores) (*bootstrap.App, error) {
	db := st.DB
	listingTopic, orgTopic := cfg.Kafka.Topic("listings"), cfg.Kafka.Topic("orgs")
	if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers,
		extkafka.TopicSpec{Name: listingTopic, Partitions: listingPartitions},
		extkafka.TopicSpec{Name: orgTopic, Partitions: 4}); err != nil {
		return nil, fmt.Errorf("prepare topics: %w", err)
	}
	relay := outbox.NewRelay(st.Writer, outbox.Config{Logger: rt.Log, Registerer: rt.Registry},
		adapters.PropertyCollection(db))
	props, err := adapters.NewProperties(ctx, db, adapters.ListingEvents(listingTopic), relay.Notifier(adapters.PropertyCollection(db)))
	if err != nil {
		return nil, fmt.Errorf("prepare properties: %w", err)
	}
	orgs := adapters.NewOrgs(db)

	// The tail starts where the topic ends now, before the view is
	// loaded, so no event published in between is missed.
	tail, err := adapters.NewTail(ctx, cfg.Kafka.Brokers, listingTopic, rt.Log)
	if err != nil {
		return nil, err
	}
	published := view.New(ports.RenderListing)
	if err := load(ctx, published, props); err != nil {
		return nil, err
	}

	svc := &app.Service{
		Properties: props,
		Orgs:       orgs,
		Media:      domain.Media{BaseURL: cfg.MediaURL.String(), NewID: domain.NewID},
		OrgWait:    cfg.OrgWait,
		Changed: func(p domain.Property) {
			st := domain.ListingState{ID: p.ID, OrgID: p.OrgID, Version: p.Version}
			if p.Published() {
				st.Listing = p.Listing
			}
			if _, err := published.Apply(st); err != nil {
				rt.Log.Error("update the view of published listings", "listing", p.ID, "error", err)
			}
		},
	}
	var consumerOpts []extkafka.ConsumerOption
	if rt.Tracer != nil {
		consumerOpts = append(consumerOpts, extkafka.WithTracerProvider(rt.Tracer))
	}
	orgConsumer := extkafka.NewConsumer(cfg.Kafka.Brokers, rt.Name, []string{orgTopic},
		func(ctx context.Context, msg kafka.Message) error { return orgs.ApplyOrgEvent(ctx, msg.Value) },
		rt.Log, rt.Registry, consumerOpts...)

	store := authn.NewStore(st.Redis)
	e := rt.HTTP(nil)
	ports.Routes(e, authn.Middleware(store), authn.Admin(cfg.AdminToken), published, svc)
	return &bootstrap.App{
		API:   e,
		Ready: st.Ready(),
		Workers: []func(context.Context) error{
			relay.Run,
			orgConsumer.Run,
			func(ctx context.Context) error {
				return tail.Run(ctx, func(_ context.Context, msg kafka.Message) error {
					st, err := adapters.DecodeListingEvent(msg.Value)
					if err != nil {
						rt.Log.Warn("skip an undecodable listing event", "offset", msg.Offset, "error", err)
						return nil
					}
					_, err = published.Apply(st)
					return err
				})
			},
			func(ctx context.Context) error { return reloadLoop(ctx, rt, published, props, cfg.ViewReload) },
		},
		Closers: []func(context.Context) error{
			func(context.Context) error { return store.Close() },
			st.Close,
		},
	}, nil
}

func load(ctx context.Context, v *view.View, props *adapters.Properties) error {
	states, err := props.States(ctx)
	if err != nil {
		return fmt.Errorf("load published listings: %w", err)
	}
	_, err = v.Apply(states...)
	return err
}

// reloadLoop applies the record's state periodically, so the view converges
// even if an event were lost; states the view already holds are skipped.
func reloadLoop(ctx context.Context, rt *bootstrap.Runtime, v *view.View, props *adapters.Properties, every time.Duration) error {
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
			if err := load(ctx, v, props); err != nil {
				rt.Log.Warn("reload published listings", "error", err)
			}
		}
	}
}
