package extkafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"quarters.dev/pkg/testenv"
)

// testKafka is the shared test broker with a topic prefix of this test's own.
type testKafka struct {
	Brokers []string
	P       string
}

func startKafka(t *testing.T) testKafka {
	t.Helper()
	return testKafka{Brokers: testenv.KafkaBrokers(t), P: testenv.TopicPrefix(t)}
}

func TestEnsureTopicsAndKeyedOrder(t *testing.T) {
	t.Parallel()
	k := startKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	specs := []TopicSpec{{Name: k.P + "orgs", Partitions: 3}, {Name: k.P + "listings", Partitions: 2}}
	for range 2 { // a restart finds the topics in place
		if err := EnsureTopics(ctx, k.Brokers, specs...); err != nil {
			t.Fatalf("ensure topics: %v", err)
		}
	}
	meta, err := (&kafka.Client{Addr: kafka.TCP(k.Brokers...)}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{k.P + "orgs", k.P + "listings"}})
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]int{}
	for _, tp := range meta.Topics {
		partitions[tp.Name] = len(tp.Partitions)
	}
	if partitions[k.P+"orgs"] != 3 || partitions[k.P+"listings"] != 2 {
		t.Fatalf("partitions %v, want orgs 3 and listings 2", partitions)
	}
	if err := EnsureTopics(ctx, k.Brokers, TopicSpec{Name: "x"}); err == nil {
		t.Fatal("a topic without partitions was accepted")
	}

	w := NewWriter(k.Brokers)
	defer w.Close()
	const n = 20
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Topic: k.P + "orgs", Key: []byte("org-1"), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}

	// Every message of one key sits on one partition, in write order.
	var got []string
	partitionSeen := -1
	for p := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Brokers, Topic: k.P + "orgs", Partition: p, MaxWait: 100 * time.Millisecond})
		conn, err := kafka.DialLeader(ctx, "tcp", k.Brokers[0], k.P+"orgs", p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		for range last {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if partitionSeen != -1 && partitionSeen != p {
				t.Fatalf("key org-1 on partitions %d and %d", partitionSeen, p)
			}
			partitionSeen = p
			got = append(got, string(m.Value))
		}
		r.Close()
	}
	if len(got) != n {
		t.Fatalf("read %d messages, want %d", len(got), n)
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: order lost in %v", i, v, got)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	k := startKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The shared broker is reached through a proxy that this test can cut.
	broker := testenv.NewProxy(t, k.Brokers[0])
	check := Check([]string{broker.Addr})
	if err := check(ctx); err != nil {
		t.Fatalf("check with the broker up: %v", err)
	}
	broker.Cut()
	downCtx, downCancel := context.WithTimeout(ctx, 2*time.Second)
	defer downCancel()
	if err := check(downCtx); err == nil {
		t.Fatal("check passed with the broker stopped")
	}
}

// recorder is a handler that fails its first failures attempts at each listed
// value, and records what it applied.
type recorder struct {
	mu       sync.Mutex
	failures map[string]int
	applied  []string
	traceIDs map[string]trace.TraceID
	done     chan struct{}
	want     int
}

func (r *recorder) handle(ctx context.Context, msg kafka.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := string(msg.Value)
	if r.failures[v] > 0 {
		r.failures[v]--
		return errors.New("store unavailable")
	}
	r.applied = append(r.applied, v)
	r.traceIDs[v] = trace.SpanContextFromContext(ctx).TraceID()
	if len(r.applied) == r.want {
		close(r.done)
	}
	return nil
}

func TestConsumerRetriesThenCommitsAndPropagatesTrace(t *testing.T) {
	t.Parallel()
	k := startKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	topic := k.P + "reservations"
	if err := EnsureTopics(ctx, k.Brokers, TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(k.Brokers)
	defer w.Close()

	traceID := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
	writeCtx := trace.ContextWithSpanContext(ctx, sc)
	write := func(values ...string) {
		t.Helper()
		var msgs []kafka.Message
		for _, v := range values {
			m := kafka.Message{Topic: topic, Key: []byte("r-1"), Value: []byte(v)}
			Inject(writeCtx, nil, &m)
			msgs = append(msgs, m)
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	write("a", "b", "c")

	reg := prometheus.NewRegistry()
	rec := &recorder{failures: map[string]int{"b": 2}, traceIDs: map[string]trace.TraceID{}, done: make(chan struct{}), want: 3}
	c := NewConsumer(k.Brokers, k.P+"projections", []string{topic}, rec.handle, nil, reg, WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- c.Run(runCtx) }()
	select {
	case <-rec.done:
	case <-ctx.Done():
		t.Fatalf("handled %v before the deadline", rec.applied)
	}
	stopped := time.Now()
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("consumer took %v to stop", d)
	}
	if fmt.Sprint(rec.applied) != "[a b c]" {
		t.Fatalf("applied %v, want [a b c]: a failing message was skipped or reordered", rec.applied)
	}
	if rec.traceIDs["a"] != traceID {
		t.Fatalf("handler saw trace %v, want %v", rec.traceIDs["a"], traceID)
	}
	if got := testutil.ToFloat64(c.metrics.handlerErrors.WithLabelValues(k.P+"projections", topic)); got != 2 {
		t.Errorf("handler errors = %v, want 2", got)
	}
	if got := testutil.ToFloat64(c.metrics.messages.WithLabelValues(k.P+"projections", topic, "ok_after_retry")); got != 1 {
		t.Errorf("messages ok after retry = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.metrics.lag.WithLabelValues(k.P+"projections", topic, "0")); got != 0 {
		t.Errorf("lag = %v, want 0", got)
	}

	// The next member of the group starts after the committed offsets. A
	// message whose handler never succeeds before shutdown stays uncommitted.
	write("d")
	rec2 := &recorder{failures: map[string]int{"d": 1 << 30}, traceIDs: map[string]trace.TraceID{}, done: make(chan struct{}), want: 1}
	c2 := NewConsumer(k.Brokers, k.P+"projections", []string{topic}, rec2.handle, nil, reg, WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	runCtx2, stop2 := context.WithCancel(ctx)
	go func() { errc <- c2.Run(runCtx2) }()
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(c2.metrics.handlerErrors.WithLabelValues(k.P+"projections", topic)) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the second member failed d %v times in 30 s, want at least 5 retries",
				testutil.ToFloat64(c2.metrics.handlerErrors.WithLabelValues(k.P+"projections", topic)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop2()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(rec2.applied) != 0 {
		t.Fatalf("second member applied %v; a, b, c were committed and d always fails", rec2.applied)
	}

	rec3 := &recorder{failures: map[string]int{}, traceIDs: map[string]trace.TraceID{}, done: make(chan struct{}), want: 1}
	c3 := NewConsumer(k.Brokers, k.P+"projections", []string{topic}, rec3.handle, nil, reg)
	runCtx3, stop3 := context.WithCancel(ctx)
	defer stop3()
	go func() { errc <- c3.Run(runCtx3) }()
	select {
	case <-rec3.done:
	case <-ctx.Done():
		t.Fatal("the uncommitted message was not delivered again")
	}
	stop3()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if fmt.Sprint(rec3.applied) != "[d]" {
		t.Fatalf("third member applied %v, want [d]", rec3.applied)
	}
}

func TestHeaderCarrierSetReplaces(t *testing.T) {
	t.Parallel()
	hs := []kafka.Header{{Key: "traceparent", Value: []byte("old")}, {Key: "event-id", Value: []byte("e1")}}
	c := HeaderCarrier{Headers: &hs}
	c.Set("traceparent", "new")
	if got := c.Get("traceparent"); got != "new" {
		t.Fatalf("traceparent = %q, want new", got)
	}
	if len(hs) != 2 || c.Get("event-id") != "e1" {
		t.Fatalf("headers %v, want event-id kept and one traceparent", hs)
	}
}

func TestConsumerReadsSeveralTopicsAndSurvivesAPanickingHandler(t *testing.T) {
	t.Parallel()
	k := startKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	topics := []string{k.P + "listings", k.P + "agreements", k.P + "orgs"}
	specs := make([]TopicSpec, 0, len(topics))
	for _, name := range topics {
		specs = append(specs, TopicSpec{Name: name, Partitions: 2})
	}
	if err := EnsureTopics(ctx, k.Brokers, specs...); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(k.Brokers)
	defer w.Close()
	for _, name := range topics {
		if err := w.WriteMessages(ctx, kafka.Message{Topic: name, Key: []byte("k"), Value: []byte(name)}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu       sync.Mutex
		got      = map[string]bool{}
		panicked bool
		done     = make(chan struct{})
	)
	handler := func(_ context.Context, msg kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if !panicked {
			panicked = true
			panic("projection bug")
		}
		got[string(msg.Value)] = true
		if len(got) == len(topics) {
			close(done)
		}
		return nil
	}
	c := NewConsumer(k.Brokers, k.P+"bookings", topics, handler, nil, prometheus.NewRegistry(), WithRetryBackoff(10*time.Millisecond, 10*time.Millisecond))
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- c.Run(runCtx) }()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("handled %v before the deadline", got)
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := testutil.ToFloat64(c.metrics.messages.WithLabelValues(k.P+"bookings", topics[0], "ok_after_retry")) +
		testutil.ToFloat64(c.metrics.messages.WithLabelValues(k.P+"bookings", topics[1], "ok_after_retry")) +
		testutil.ToFloat64(c.metrics.messages.WithLabelValues(k.P+"bookings", topics[2], "ok_after_retry")); n != 1 {
		t.Errorf("%v messages succeeded after a retry, want the one whose handler panicked", n)
	}
}
