// Package service wires the bookings service: configuration, stores, the
// outbox relay, the event consumer, the mailer and the routes.
package service

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/outbox"
	"quarters.dev/pkg/stores"
	"quarters.dev/services/bookings/internal/adapters"
	"quarters.dev/services/bookings/internal/app"
	"quarters.dev/services/bookings/internal/ports"
)

// Config is the bookings service's configuration.
type Config struct {
	Mongo      extmongo.Config
	Redis      extredis.Config
	Kafka      extkafka.Config
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" required:"true"`
	// SMTPURL is the relay confirmation emails go through:
	// smtp://[user:password@]host:port (STARTTLS when offered) or smtps://.
	SMTPURL string `env:"QUARTERS_SMTP_URL" required:"true"`
	// SMTPFrom is the sender of confirmation emails.
	SMTPFrom string `env:"QUARTERS_SMTP_FROM" default:"Quarters <no-reply@quarters.invalid>"`
	// SMTPTimeout bounds one delivery to the relay.
	SMTPTimeout time.Duration `env:"QUARTERS_SMTP_TIMEOUT" default:"15s"`
	// DashboardURL is the dashboard's base; a booking's dashboardUrl is
	// <base>/reservations/<id>.
	DashboardURL string `env:"QUARTERS_DASHBOARD_URL" required:"true"`
	// InquiryWindow is the span the inquiry allowance counts over.
	InquiryWindow time.Duration `env:"QUARTERS_INQUIRY_WINDOW" default:"24h"`
	// ProjectionWait bounds how long a call waits for an org or listing
	// created a moment ago to arrive through its events.
	ProjectionWait time.Duration `env:"QUARTERS_BOOKINGS_PROJECTION_WAIT" default:"3s"`
	// MailInterval is how often queued confirmation emails are looked for
	// besides the wake-up after each inquiry (retries become due this way).
	MailInterval time.Duration `env:"QUARTERS_BOOKINGS_MAIL_INTERVAL" default:"5s"`
}

type metrics struct {
	quotaRejections prometheus.Counter
	mail            *prometheus.CounterVec
	skipped         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		quotaRejections: f.NewCounter(prometheus.CounterOpts{
			Name: "quarters_bookings_inquiry_quota_rejections_total",
			Help: "Inquiries refused with 429 because the org's daily allowance was spent.",
		}),
		mail: f.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_bookings_confirmation_emails_total",
			Help: "Confirmation email attempts by outcome: sent, failed (retried later), given_up.",
		}, []string{"outcome"}),
		skipped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_bookings_events_skipped_total",
			Help: "Consumed events that could not be decoded and were skipped.",
		}, []string{"topic"}),
	}
}

// Build connects the bookings service's stores and returns the service.
func Build(cfg *Config) func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
	return func(ctx context.Context, rt *bootstrap.Runtime) (*bootstrap.App, error) {
		mailer, err := adapters.NewSMTP(cfg.SMTPURL, cfg.SMTPFrom, cfg.SMTPTimeout)
		if err != nil {
			return nil, err
		}
		st, err := stores.Open(ctx, rt.Name, stores.Config{Mongo: &cfg.Mongo, Redis: &cfg.Redis, Kafka: &cfg.Kafka})
		if err != nil {
			return nil, err
		}
		db, rdb, writer := st.DB, st.Redis, st.Writer
		built := false
		defer func() {
			if !built {
				_ = st.Close(context.WithoutCancel(ctx))
			}
		}()
		topics := ports.Topics{Orgs: cfg.Kafka.Topic("orgs"), Listings: cfg.Kafka.Topic("listings"), Agreements: cfg.Kafka.Topic("agreements")}
		resTopic, inqTopic := cfg.Kafka.Topic("reservations"), cfg.Kafka.Topic("inquiries")
		var specs []extkafka.TopicSpec
		for _, t := range []string{topics.Orgs, topics.Listings, topics.Agreements, resTopic, inqTopic} {
			specs = append(specs, extkafka.TopicSpec{Name: t, Partitions: 4})
		}
		if err := extkafka.EnsureTopics(ctx, cfg.Kafka.Brokers, specs...); err != nil {
			return nil, fmt.Errorf("prepare topics: %w", err)
		}
		relay := outbox.NewRelay(writer, outbox.Config{Logger: rt.Log, Registerer: rt.Registry},
			adapters.ReservationCollection(db), adapters.InquiryCollection(db))
		reservations, err := adapters.NewReservations(ctx, db, adapters.ReservationEvents(resTopic), relay.Notifier(adapters.ReservationCollection(db)))
		if err != nil {
			return nil, err
		}
		inquiries, err := adapters.NewInquiries(ctx, db, adapters.InquiryEvents(inqTopic), relay.Notifier(adapters.InquiryCollection(db)))
		if err != nil {
			return nil, err
		}
		m := newMetrics(rt.Registry)
		mail := app.NewMailer(inquiries, mailer, rt.Log.With("component", "mailer"), cfg.MailInterval, cfg.SMTPTimeout,
			func(o string) { m.mail.WithLabelValues(o).Inc() })
		projections := adapters.NewProjections(db)
		svc := &app.Service{
			Reservations:   reservations,
			Occupancy:      adapters.NewOccupancy(db),
			Inquiries:      inquiries,
			Projections:    projections,
			Writer:         projections,
			Quota:          adapters.NewQuota(rdb, cfg.InquiryWindow),
			Idempotency:    adapters.NewIdempotency(rdb, 24*time.Hour),
			Log:            rt.Log,
			ProjectionWait: cfg.ProjectionWait,
			QuotaRejected:  m.quotaRejections.Inc,
			MailQueued:     mail.Notify,
		}
		var consumerOpts []extkafka.ConsumerOption
		if rt.Tracer != nil {
			consumerOpts = append(consumerOpts, extkafka.WithTracerProvider(rt.Tracer))
		}
		consumer := extkafka.NewConsumer(cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix+"bookings",
			[]string{topics.Orgs, topics.Listings, topics.Agreements},
			ports.EventHandler(svc, topics, func(topic, reason string) {
				m.skipped.WithLabelValues(topic).Inc()
				rt.Log.Warn("skipped event", "topic", topic, "reason", reason)
			}),
			rt.Log, rt.Registry, consumerOpts...)

		store := authn.NewStore(rdb)
		e := rt.HTTP(nil)
		ports.Routes(e, svc, authn.Middleware(store), cfg.AdminToken, cfg.DashboardURL)
		built = true
		return &bootstrap.App{
			API:   e,
			Ready: st.Ready(),
			Workers: []func(context.Context) error{
				relay.Run,
				consumer.Run,
				mail.Run,
				func(ctx context.Context) error { return purgeLoop(ctx, rt, reservations) },
			},
			Closers: []func(context.Context) error{
				func(context.Context) error { return store.Close() },
				st.Close,
			},
		}, nil
	}
}

// purgeLoop removes deleted bookings once their deletion event is out.
func purgeLoop(ctx context.Context, rt *bootstrap.Runtime, r *adapters.Reservations) error {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := r.PurgeTombstones(ctx); err != nil {
				rt.Log.Warn("purge deleted reservations", "error", err)
			}
		}
	}
}
