// Package extkafka holds the kafka-go settings every service shares. The
// library's defaults do not fit domain events: a Writer literal acknowledges
// nothing, batches for a second and spreads one key over several partitions,
// and ReadMessage commits before the message is handled. Here writers wait for
// all in-sync replicas, keep one key on one partition and return only when the
// write is acknowledged; topics are created up front; consumers commit an
// offset only after the handler has succeeded; and trace context travels in
// message headers.
package extkafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
)

const (
	// writeTimeout bounds one produce request and its response.
	writeTimeout = 10 * time.Second
	// batchTimeout is how long a writer waits to fill a batch. Writes are
	// synchronous, so this is added to every publish; keep it to a few ms.
	batchTimeout = 5 * time.Millisecond
	// checkTimeout bounds a readiness check whose context has no deadline.
	checkTimeout = 3 * time.Second
	// adminTimeout bounds one admin request (metadata, topic creation).
	adminTimeout = 10 * time.Second
)

// NewWriter returns a synchronous writer for brokers. Each message names its
// own topic. Messages with the same key go to the same partition, in the order
// given, and WriteMessages returns only after every in-sync replica has them.
func NewWriter(brokers []string) *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(brokers...),
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           batchTimeout,
		Async:                  false,
		WriteTimeout:           writeTimeout,
		ReadTimeout:            writeTimeout,
		MaxAttempts:            5,
		WriteBackoffMin:        100 * time.Millisecond,
		WriteBackoffMax:        time.Second,
		AllowAutoTopicCreation: false,
	}
}

// TopicSpec describes a topic that EnsureTopics creates when it is missing.
type TopicSpec struct {
	Name       string
	Partitions int
	// ReplicationFactor defaults to the number of brokers, at most three.
	ReplicationFactor int
}

// EnsureTopics creates the topics in specs that do not exist yet and waits
// until every one of them has a leader for each partition. Existing topics are
// left as they are, so calling it on every start is safe.
func EnsureTopics(ctx context.Context, brokers []string, specs ...TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: adminTimeout}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return fmt.Errorf("read Kafka metadata from %v: %w", brokers, err)
	}
	existing := make(map[string]bool, len(meta.Topics))
	for _, t := range meta.Topics {
		if t.Error == nil {
			existing[t.Name] = true
		}
	}
	defaultRF := min(len(meta.Brokers), 3)
	if defaultRF < 1 {
		defaultRF = 1
	}
	var create []kafka.TopicConfig
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return errors.New("ensure Kafka topics: empty topic name")
		}
		if s.Partitions < 1 {
			return fmt.Errorf("ensure Kafka topic %s: partitions must be at least 1, got %d", s.Name, s.Partitions)
		}
		names = append(names, s.Name)
		if existing[s.Name] {
			continue
		}
		rf := s.ReplicationFactor
		if rf == 0 {
			rf = defaultRF
		}
		create = append(create, kafka.TopicConfig{Topic: s.Name, NumPartitions: s.Partitions, ReplicationFactor: rf})
	}
	if len(create) > 0 {
		resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: create})
		if err != nil {
			return fmt.Errorf("create Kafka topics: %w", err)
		}
		for name, terr := range resp.Errors {
			if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
				return fmt.Errorf("create Kafka topic %s: %w", name, terr)
			}
		}
	}
	return waitForLeaders(ctx, client, names)
}

// waitForLeaders polls metadata until each topic reports every partition with
// a leader: a topic just created may not accept writes for a moment.
func waitForLeaders(ctx context.Context, client *kafka.Client, names []string) error {
	delay := 20 * time.Millisecond
	for {
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
		var missing string
		switch {
		case err != nil:
			missing = err.Error()
		default:
			missing = unreadyTopic(meta, names)
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for Kafka topics to get leaders (%s): %w", missing, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

func unreadyTopic(meta *kafka.MetadataResponse, names []string) string {
	byName := make(map[string]kafka.Topic, len(meta.Topics))
	for _, t := range meta.Topics {
		byName[t.Name] = t
	}
	for _, n := range names {
		t, ok := byName[n]
		switch {
		case !ok:
			return n + " missing"
		case t.Error != nil:
			return n + ": " + t.Error.Error()
		case len(t.Partitions) == 0:
			return n + " has no partitions"
		}
		for _, p := range t.Partitions {
			if p.Error != nil || p.Leader.Host == "" {
				return fmt.Sprintf("%s partition %d has no leader", n, p.ID)
			}
		}
	}
	return ""
}

// Check returns a readiness check that opens a fresh connection to the brokers
// (the first that answers) and asks for the cluster's brokers; a shared client
// would answer from its metadata cache while the cluster is gone. Without a
// deadline on ctx the check is bounded by a few seconds.
func Check(brokers []string) func(ctx context.Context) error {
	dialer := &kafka.Dialer{Timeout: checkTimeout}
	return func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, checkTimeout)
			defer cancel()
		}
		var errs []error
		for _, b := range brokers {
			err := checkBroker(ctx, dialer, b)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			return errors.New("no Kafka brokers configured")
		}
		return fmt.Errorf("Kafka unreachable: %w", errors.Join(errs...))
	}
}

func checkBroker(ctx context.Context, dialer *kafka.Dialer, broker string) error {
	conn, err := dialer.DialContext(ctx, "tcp", broker)
	if err != nil {
		return fmt.Errorf("dial %s: %w", broker, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	bs, err := conn.Brokers()
	if err != nil {
		return fmt.Errorf("read brokers from %s: %w", broker, err)
	}
	if len(bs) == 0 {
		return fmt.Errorf("%s reports no brokers", broker)
	}
	return nil
}

// HeaderCarrier adapts a message's headers to OpenTelemetry propagation.
type HeaderCarrier struct{ Headers *[]kafka.Header }

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Get returns the value of the first header named key.
func (c HeaderCarrier) Get(key string) string {
	for _, h := range *c.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces every header named key with one carrying value.
func (c HeaderCarrier) Set(key, value string) {
	hs := (*c.Headers)[:0:0]
	for _, h := range *c.Headers {
		if h.Key != key {
			hs = append(hs, h)
		}
	}
	*c.Headers = append(hs, kafka.Header{Key: key, Value: []byte(value)})
}

// Keys lists the header names.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(*c.Headers))
	for _, h := range *c.Headers {
		keys = append(keys, h.Key)
	}
	return keys
}

// Inject writes the trace context of ctx into msg's headers. A nil prop uses
// W3C Trace Context.
func Inject(ctx context.Context, prop propagation.TextMapPropagator, msg *kafka.Message) {
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	prop.Inject(ctx, HeaderCarrier{Headers: &msg.Headers})
}

// Extract returns ctx carrying the trace context found in msg's headers. A nil
// prop uses W3C Trace Context.
func Extract(ctx context.Context, prop propagation.TextMapPropagator, msg kafka.Message) context.Context {
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	headers := msg.Headers
	return prop.Extract(ctx, HeaderCarrier{Headers: &headers})
}

// Config is the Kafka part of a service's configuration.
type Config struct {
	Brokers     []string `env:"QUARTERS_KAFKA_BROKERS" required:"true"`
	TopicPrefix string   `env:"QUARTERS_KAFKA_TOPIC_PREFIX" default:"quarters."`
}

// Topic returns the full name of the topic of an aggregate kind ("orgs").
func (c Config) Topic(kind string) string { return c.TopicPrefix + kind }
