// Package service wires the availability service: configuration, stores,
// the outbox relay, the event consumers and the routes.
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
	"quarters.dev/services/availability/internal/adapters"
	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/ports"
)

// Config is the availability service's configuration.
type Config struct {
	Mongo      extmongo.Config
	Redis      extredis.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// ConsumerGroup prefixes the Kafka consumer groups of the projections
	// ("<group>.orgs", "<group>.listings", "<group>.reservations").
	ConsumerGroup string `env:"QUARTERS_AVAILABILITY_CONSUMER_GROUP" default:"availability"`
	// ListingWait bounds how long a calendar or block call about a listing
	// never heard of waits for its publish event before answering 404.
	ListingWait time.Duration `env:"QUARTERS_AVAILABILITY_LISTING_WAIT" default:"500ms"`
	// Now is the clock that decides today's date; nil means time.Now.
	// Tests set it.
	Now func() time.Time
}

// topicPartitions is the partition count of the topics this service creates
// when they are missing (the same for every aggregate kind).
const topicPartitions = 4

// Build connects the availability service's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Redis: &cfg.Redis, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		db := st.DB
		topics := map[string]string{}
		var specs []extkafka.TopicSpec
		for _, kind := range []string{"orgs", "listings", "reservations", "calendars"} {
			topics[kind] = cfg.Kafka.Topic(kind)
			specs = append(specs, extkafka.TopicSpec{Name: topics[kind], Partitions: topicPartitions})
		}
		if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers, specs...); err != nil {
			_ = st.Close(ctx)
			return nil, fmt.Errorf("prepare topics: %w", err)
		}
		relay := outbox.NewRelay(st.Writer, outbox.Config{Logger: rt.Log, Registerer: rt.Registry},
			adapters.CalendarCollection(db))
		svc := &app.Service{
			Orgs:         adapters.NewOrgs(db),
			Listings:     adapters.NewListings(db),
			Reservations: adapters.NewReservations(db),
			Calendars:    adapters.NewCalendars(db, adapters.CalendarEvents(topics["calendars"]), relay.Notifier(adapters.CalendarCollection(db))),
			ListingWait:  cfg.ListingWait,
			Now:          cfg.Now,
		}
		consumers := &ports.Consumers{Svc: svc, Log: rt.Log}
		var consumerOpts []extkafka.ConsumerOption
		if rt.Tracer != nil {
			consumerOpts = append(consumerOpts, extkafka.WithTracerProvider(rt.Tracer))
		}
		consume := func(kind string, h extkafka.Handler) func(context.Context) error {
			c := extkafka.NewConsumer(cfg.Kafka.Brokers, cfg.ConsumerGroup+"."+kind, []string{topics[kind]}, h,
				rt.Log, rt.Registry, consumerOpts...)
			return c.Run
		}

		store := authn.NewStore(st.Redis)
		e := rt.HTTP(nil)
		ports.Routes(e, authn.Middleware(store), svc, cfg.AdminToken)
		return &bootstrap.App{
			API:   e,
			Ready: st.Ready(),
			Workers: []func(context.Context) error{
				relay.Run,
				consume("orgs", consumers.Org),
				consume("listings", consumers.Listing),
				consume("reservations", consumers.Reservation),
			},
			Closers: []func(context.Context) error{
				func(context.Context) error { return store.Close() },
				st.Close,
			},
		}, nil
	}
}
