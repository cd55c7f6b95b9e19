package extkafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Handler applies one message. It must store its effect durably before it
// returns nil, and must tolerate seeing the same message again: after a
// rebalance or a crash a message is delivered once more.
type Handler func(ctx context.Context, msg kafka.Message) error

// Consumer reads topics as a member of a consumer group. It commits a
// message's offset only after the handler has succeeded, and retries a failing
// handler with backoff until it succeeds or the consumer stops: a message is
// never skipped. Offsets are committed in the background every commit
// interval and when the consumer stops, so a crash delivers again at most
// the messages of the last interval (handlers tolerate that); a commit per
// message would cost a broker round trip on every message.
type Consumer struct {
	brokers []string
	groupID string
	topics  []string
	handler Handler
	log     *slog.Logger
	metrics *consumerMetrics

	prop       propagation.TextMapPropagator
	tracer     trace.Tracer
	minBackoff time.Duration
	maxBackoff time.Duration
	maxWait    time.Duration
	commitWait time.Duration
}

// commitInterval is how often the offsets of handled messages are committed.
const commitInterval = 200 * time.Millisecond

// ConsumerOption adjusts a Consumer.
type ConsumerOption func(*Consumer)

// WithPropagator sets how trace context is read from headers (default W3C
// Trace Context).
func WithPropagator(p propagation.TextMapPropagator) ConsumerOption {
	return func(c *Consumer) { c.prop = p }
}

// WithTracerProvider makes the consumer start a span for each message (by
// default spans are not recorded).
func WithTracerProvider(tp trace.TracerProvider) ConsumerOption {
	return func(c *Consumer) { c.tracer = tp.Tracer("quarters.dev/pkg/extkafka") }
}

// WithRetryBackoff sets the delays between attempts of a failing handler:
// the first is min, each next one doubles, up to max.
func WithRetryBackoff(minDelay, maxDelay time.Duration) ConsumerOption {
	return func(c *Consumer) { c.minBackoff, c.maxBackoff = minDelay, maxDelay }
}

// NewConsumer returns a consumer of topics in group groupID. Nothing connects
// until Run. Metrics are registered on reg; several consumers may share one
// registry.
func NewConsumer(brokers []string, groupID string, topics []string, handler Handler, logger *slog.Logger, reg prometheus.Registerer, opts ...ConsumerOption) *Consumer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Consumer{
		brokers:    brokers,
		groupID:    groupID,
		topics:     topics,
		handler:    handler,
		log:        logger.With("consumer_group", groupID),
		metrics:    newConsumerMetrics(reg),
		prop:       propagation.TraceContext{},
		tracer:     noop.NewTracerProvider().Tracer(""),
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 30 * time.Second,
		maxWait:    500 * time.Millisecond,
		commitWait: 5 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Run consumes until ctx is cancelled, then leaves the group and returns nil.
// A message being retried when ctx is cancelled is left uncommitted, so the
// next member of the group gets it again.
func (c *Consumer) Run(ctx context.Context) error {
	if len(c.topics) == 0 || c.groupID == "" || c.handler == nil {
		return errors.New("kafka consumer needs a group, topics and a handler")
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:               c.brokers,
		GroupID:               c.groupID,
		GroupTopics:           c.topics,
		MinBytes:              1,
		MaxBytes:              10 << 20,
		MaxWait:               c.maxWait,
		CommitInterval:        commitInterval,
		StartOffset:           kafka.FirstOffset,
		WatchPartitionChanges: true,
		Logger:                kafka.LoggerFunc(c.logf(slog.LevelDebug)),
		ErrorLogger:           kafka.LoggerFunc(c.logf(slog.LevelWarn)),
	})
	defer func() {
		if err := r.Close(); err != nil {
			c.log.Warn("close kafka reader", "error", err)
		}
	}()
	c.log.Info("kafka consumer started", "topics", c.topics)
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("fetch from %v in group %s: %w", c.topics, c.groupID, err)
		}
		if !c.handle(ctx, msg) {
			return nil
		}
		// The effect is stored: commit even if shutdown has begun meanwhile.
		// With a commit interval this only records the offset; the reader
		// commits it in the background and when it closes.
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.commitWait)
		err = r.CommitMessages(commitCtx, msg)
		cancel()
		if err != nil {
			// The message will be delivered again; handlers expect that.
			c.metrics.commitErrors.WithLabelValues(c.groupID).Inc()
			c.log.Warn("commit kafka offset", "topic", msg.Topic, "partition", msg.Partition, "offset", msg.Offset, "error", err)
		}
		c.metrics.lag.WithLabelValues(c.groupID, msg.Topic, strconv.Itoa(msg.Partition)).Set(float64(max(msg.HighWaterMark-msg.Offset-1, 0)))
	}
}

// handle runs the handler until it succeeds. It reports false when ctx was
// cancelled first.
func (c *Consumer) handle(ctx context.Context, msg kafka.Message) bool {
	delay := c.minBackoff
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, msg)
		if err == nil {
			outcome := "ok"
			if attempt > 1 {
				outcome = "ok_after_retry"
			}
			c.metrics.messages.WithLabelValues(c.groupID, msg.Topic, outcome).Inc()
			return true
		}
		c.metrics.handlerErrors.WithLabelValues(c.groupID, msg.Topic).Inc()
		c.log.Error("handle kafka message; will retry",
			"topic", msg.Topic, "partition", msg.Partition, "offset", msg.Offset,
			"attempt", attempt, "retry_in", delay, "error", err)
		select {
		case <-ctx.Done():
			c.metrics.messages.WithLabelValues(c.groupID, msg.Topic, "interrupted").Inc()
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, c.maxBackoff)
	}
}

func (c *Consumer) attempt(ctx context.Context, msg kafka.Message) (err error) {
	ctx = c.prop.Extract(ctx, HeaderCarrier{Headers: &msg.Headers})
	ctx, span := c.tracer.Start(ctx, msg.Topic+" process",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.destination.name", msg.Topic),
			attribute.String("messaging.consumer.group.name", c.groupID),
			attribute.Int("messaging.destination.partition.id", msg.Partition),
			attribute.Int64("messaging.kafka.offset", msg.Offset),
		))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	return c.handler(ctx, msg)
}

func (c *Consumer) logf(level slog.Level) func(string, ...any) {
	return func(format string, args ...any) {
		c.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

type consumerMetrics struct {
	messages      *prometheus.CounterVec
	handlerErrors *prometheus.CounterVec
	commitErrors  *prometheus.CounterVec
	lag           *prometheus.GaugeVec
}

func newConsumerMetrics(reg prometheus.Registerer) *consumerMetrics {
	return &consumerMetrics{
		messages: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_kafka_consumer_messages_total",
			Help: "Messages consumed, by outcome: ok, ok_after_retry, or interrupted by shutdown before the handler succeeded.",
		}, []string{"group", "topic", "outcome"})),
		handlerErrors: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_kafka_consumer_handler_errors_total",
			Help: "Failed handler attempts; each is retried.",
		}, []string{"group", "topic"})),
		commitErrors: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarters_kafka_consumer_commit_errors_total",
			Help: "Offset commits that failed; the message will be delivered again.",
		}, []string{"group"})),
		lag: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "quarters_kafka_consumer_lag_messages",
			Help: "Messages behind the partition's high-water mark after the last handled message.",
		}, []string{"group", "topic", "partition"})),
	}
}

// register adds c to reg, or returns the collector already registered under
// the same name so that several consumers in one process share their metrics.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A different metric under the same name is a programming error in
		// the process's wiring; the consumer still works, unregistered.
		return c
	}
	return c
}
