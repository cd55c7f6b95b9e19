package adapters

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Metrics are the dispatcher's Prometheus metrics. The endpoint label holds
// endpoint ids only, and a lane's series is removed when the lane goes idle,
// so its cardinality is bounded by the endpoints that are busy.
type Metrics struct {
	deliveries     *prometheus.CounterVec
	attempt        prometheus.Histogram
	eventToAttempt prometheus.Histogram
	inflight       *prometheus.GaugeVec
	malformed      *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		deliveries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_webhook_deliveries_total",
			Help: "Delivery attempts by webhook event and outcome (delivered or failed).",
		}, []string{"event", "outcome"}),
		attempt: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "quarters_webhook_attempt_duration_seconds",
			Help:    "Duration of one delivery attempt, from dialling to the last byte read.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}),
		eventToAttempt: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "quarters_webhook_event_to_attempt_seconds",
			Help:    "Time from the domain event to the start of its delivery attempt.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		inflight: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "quarters_webhook_inflight",
			Help: "Delivery attempts under way, by endpoint id.",
		}, []string{"endpoint"}),
		malformed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_webhook_undecodable_events_total",
			Help: "Domain events that could not be decoded and were skipped, by topic.",
		}, []string{"topic"}),
	}
}

// Attempted counts one attempt.
func (m *Metrics) Attempted(d domain.Delivery, o domain.Outcome, claimedAt time.Time) {
	outcome := "failed"
	if o.Delivered {
		outcome = "delivered"
	}
	m.deliveries.WithLabelValues(d.Event, outcome).Inc()
	if o.Reason == domain.ReasonInterrupted {
		return
	}
	m.attempt.Observe(o.Duration.Seconds())
	if !d.Redelivery && !d.CreatedAt.IsZero() {
		m.eventToAttempt.Observe(max(claimedAt.Sub(d.CreatedAt).Seconds(), 0))
	}
}

// Inflight moves an endpoint's in-flight gauge.
func (m *Metrics) Inflight(endpointID string, delta int) {
	m.inflight.WithLabelValues(endpointID).Add(float64(delta))
}

// LaneClosed drops an idle endpoint's series.
func (m *Metrics) LaneClosed(endpointID string) { m.inflight.DeleteLabelValues(endpointID) }

// Malformed counts an undecodable event.
func (m *Metrics) Malformed(topic string) { m.malformed.WithLabelValues(topic).Inc() }
