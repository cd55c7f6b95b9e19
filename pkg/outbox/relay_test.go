package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace"

	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/outbox"
	"quarters.dev/pkg/testenv"
)

// orgDoc is a storage model the way a service's repository writes it.
type orgDoc struct {
	ID             string `bson:"_id"`
	Name           string `bson:"name"`
	Version        int64  `bson:"version"`
	outbox.Pending `bson:",inline"`
}

type env struct {
	coll    *mongo.Collection
	topic   string
	writer  *kafka.Writer
	reg     *prometheus.Registry
	brokers []string
}

func newEnv(t *testing.T, ctx context.Context) *env {
	t.Helper()
	e := &env{reg: prometheus.NewRegistry()}
	e.coll = testenv.Mongo(t).Collection("orgs")
	e.brokers = testenv.KafkaBrokers(t)
	e.topic = testenv.TopicPrefix(t) + "orgs"
	if err := extkafka.EnsureTopics(ctx, e.brokers, extkafka.TopicSpec{Name: e.topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	e.writer = extkafka.NewWriter(e.brokers)
	t.Cleanup(func() { _ = e.writer.Close() })
	return e
}

func (e *env) relay(pub outbox.Publisher) *outbox.Relay {
	if pub == nil {
		pub = e.writer
	}
	return outbox.NewRelay(pub, outbox.Config{
		Interval:       100 * time.Millisecond,
		PublishTimeout: 2 * time.Second,
		FlushTimeout:   2 * time.Second,
		Registerer:     e.reg,
	}, e.coll)
}

// create inserts a new org together with its creation event.
func (e *env) create(ctx context.Context, id string) (string, error) {
	d := orgDoc{ID: id, Name: "created", Version: 1}
	ev := e.event(ctx, id, 1, "created")
	d.Add(ev)
	_, err := e.coll.InsertOne(ctx, d)
	return ev.ID, err
}

// rename changes an org's name with a version-guarded update carrying the
// event, reloading and retrying when another writer got there first.
func (e *env) rename(ctx context.Context, id, name string) (string, error) {
	for {
		var cur orgDoc
		if err := e.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&cur); err != nil {
			return "", err
		}
		ev := e.event(ctx, id, cur.Version+1, name)
		update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
			{Key: "name", Value: name}, {Key: "version", Value: cur.Version + 1},
		}}}, ev)
		if err != nil {
			return "", err
		}
		res, err := e.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "version", Value: cur.Version}}, update)
		if err != nil {
			return "", err
		}
		if res.MatchedCount == 1 {
			return ev.ID, nil
		}
	}
}

// event builds an event whose value is "<version>:<name>".
func (e *env) event(ctx context.Context, id string, version int64, name string) outbox.Event {
	return outbox.NewEvent(ctx, outbox.NewID(), e.topic, id, fmt.Appendf(nil, "%d:%s", version, name))
}

func (e *env) doc(t *testing.T, ctx context.Context, id string) orgDoc {
	t.Helper()
	var d orgDoc
	if err := e.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return d
}

// collector reads every partition of the topic from the start.
type collector struct {
	mu   sync.Mutex
	msgs []kafka.Message
}

func (e *env) collect(t *testing.T, ctx context.Context) *collector {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for p := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: e.topic, Partition: p, MaxWait: 100 * time.Millisecond,
			ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 200 * time.Millisecond})
		wg.Go(func() {
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue
				}
				c.mu.Lock()
				c.msgs = append(c.msgs, m)
				c.mu.Unlock()
			}
		})
	}
	return c
}

func (c *collector) snapshot() []kafka.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]kafka.Message(nil), c.msgs...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func eventIDs(msgs []kafka.Message) map[string]int {
	ids := map[string]int{}
	for _, m := range msgs {
		ids[header(m, outbox.HeaderEventID)]++
	}
	return ids
}

func TestEventWrittenWithStateIsPublishedAndRemoved(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)

	traceID := trace.TraceID{0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	reqCtx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled}))
	var ids []string
	id, err := e.create(reqCtx, "org-1")
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	for _, name := range []string{"Acme", "Acme Rentals"} {
		id, err := e.rename(reqCtx, "org-1", name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if d := e.doc(t, ctx, "org-1"); len(d.Outbox) != 3 || d.OutboxPending != 3 || d.OutboxSeq != 3 {
		t.Fatalf("before the relay: %d events, pending %d, seq %d; want 3, 3, 3", len(d.Outbox), d.OutboxPending, d.OutboxSeq)
	}

	relay := e.relay(nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	relay.Notify()

	waitFor(t, 20*time.Second, "three events in Kafka", func() bool { return len(msgs.snapshot()) >= 3 })
	got := msgs.snapshot()
	var values []string
	for i, m := range got {
		values = append(values, string(m.Value))
		if string(m.Key) != "org-1" || m.Topic != e.topic {
			t.Errorf("message %d: key %q topic %q", i, m.Key, m.Topic)
		}
		if header(m, outbox.HeaderEventID) != ids[i] {
			t.Errorf("message %d carries event id %q, want %q", i, header(m, outbox.HeaderEventID), ids[i])
		}
		if tp := header(m, "traceparent"); !strings.Contains(tp, traceID.String()) {
			t.Errorf("message %d traceparent %q does not carry trace %s", i, tp, traceID)
		}
	}
	if want := "[1:created 2:Acme 3:Acme Rentals]"; fmt.Sprint(values) != want {
		t.Fatalf("published %v, want %s in order", values, want)
	}

	waitFor(t, 10*time.Second, "the events removed from the document", func() bool {
		d := e.doc(t, ctx, "org-1")
		return len(d.Outbox) == 0 && d.OutboxPending == 0
	})
	d := e.doc(t, ctx, "org-1")
	if d.Name != "Acme Rentals" || d.Version != 3 || d.OutboxSeq != 3 {
		t.Fatalf("state after the relay: %+v", d)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := metric(t, e.reg, "quarters_outbox_published_events_total"); n != 3 {
		t.Errorf("published counter %v, want 3", n)
	}
	if n := metric(t, e.reg, "quarters_outbox_backlog_events"); n != 0 {
		t.Errorf("backlog %v, want 0", n)
	}
	if n := len(msgs.snapshot()); n != 3 {
		t.Errorf("%d messages in Kafka, want exactly 3", n)
	}
}

// metric sums the series of a metric family in reg (0 when it has none).
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return v
}

// series counts the series of a metric family in reg.
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// switchPublisher sends through a writer that can be swapped while the relay
// runs: first one whose broker address refuses connections (Kafka is down),
// then the real one (Kafka is back).
type switchPublisher struct{ cur atomic.Pointer[kafka.Writer] }

func (p *switchPublisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	return p.cur.Load().WriteMessages(ctx, msgs...)
}

func TestEventsWaitInTheStoreWhileKafkaIsDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	e := newEnv(t, ctx)

	// Kafka is unreachable: its address refuses connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := extkafka.NewWriter([]string{l.Addr().String()})
	l.Close()
	defer dead.Close()
	pub := &switchPublisher{}
	pub.cur.Store(dead)

	var ids []string
	for i := range 3 {
		id, err := e.create(ctx, "org-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	relay := e.relay(pub)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	relay.Notify()

	waitFor(t, 20*time.Second, "a failed publish", func() bool { return metric(t, e.reg, "quarters_outbox_relay_failures_total") > 0 })
	if n := metric(t, e.reg, "quarters_outbox_backlog_events"); n != 3 {
		t.Errorf("backlog while Kafka is down = %v, want 3", n)
	}
	for i := range 3 {
		if d := e.doc(t, ctx, "org-"+strconv.Itoa(i)); d.OutboxPending != 1 || len(d.Outbox) != 1 {
			t.Fatalf("org-%d lost its pending event while Kafka was down: %+v", i, d.Pending)
		}
	}

	// Kafka is back.
	pub.cur.Store(e.writer)
	msgs := e.collect(t, ctx)
	waitFor(t, 30*time.Second, "the waiting events in Kafka", func() bool {
		seen := eventIDs(msgs.snapshot())
		for _, id := range ids {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "the events removed from the documents", func() bool {
		n, err := e.coll.CountDocuments(ctx, bson.D{{Key: outbox.FieldPending, Value: bson.D{{Key: "$gt", Value: 0}}}})
		return err == nil && n == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// crashingPublisher publishes, then makes the relay's context end before it
// can remove the events: the process dies between the two steps.
type crashingPublisher struct {
	outbox.Publisher
	crash context.CancelFunc
}

func (p crashingPublisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	err := p.Publisher.WriteMessages(ctx, msgs...)
	p.crash()
	return err
}

func TestCrashBetweenPublishAndRemovePublishesAgainWithTheSameID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	id, err := e.create(ctx, "org-1")
	if err != nil {
		t.Fatal(err)
	}

	dyingCtx, die := context.WithCancel(ctx)
	dying := outbox.NewRelay(crashingPublisher{Publisher: e.writer, crash: die}, outbox.Config{}, e.coll)
	if err := dying.Flush(dyingCtx); err == nil {
		t.Fatal("the relay removed the events although it died right after publishing")
	}
	if d := e.doc(t, ctx, "org-1"); d.OutboxPending != 1 || len(d.Outbox) != 1 || d.Outbox[0].ID != id {
		t.Fatalf("after the crash the document holds %+v, want the published event still pending", d.Pending)
	}

	next := e.relay(nil)
	if err := next.Flush(ctx); err != nil {
		t.Fatalf("next relay: %v", err)
	}
	if d := e.doc(t, ctx, "org-1"); d.OutboxPending != 0 || len(d.Outbox) != 0 {
		t.Fatalf("after the next relay the document holds %+v", d.Pending)
	}
	waitFor(t, 20*time.Second, "two deliveries", func() bool { return len(msgs.snapshot()) >= 2 })
	got := msgs.snapshot()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2", len(got))
	}
	for i, m := range got {
		if header(m, outbox.HeaderEventID) != id || string(m.Value) != "1:created" {
			t.Errorf("delivery %d: event id %q value %q, want %q and 1:created", i, header(m, outbox.HeaderEventID), m.Value, id)
		}
	}
}

func TestConcurrentWritesWhileTheRelayRemovesLoseNoEvent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	relay := e.relay(nil)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()

	const orgs, writers, renames = 4, 8, 20
	var (
		mu      sync.Mutex
		written = map[string]bool{}
	)
	record := func(id string) {
		mu.Lock()
		written[id] = true
		mu.Unlock()
	}
	for i := range orgs {
		id, err := e.create(ctx, "org-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		record(id)
		relay.Notify()
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			org := "org-" + strconv.Itoa(w%orgs)
			for n := range renames {
				id, err := e.rename(ctx, org, fmt.Sprintf("w%d-%d", w, n))
				if err != nil {
					errs <- err
					return
				}
				record(id)
				relay.Notify()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := orgs + writers*renames
	if len(written) != total {
		t.Fatalf("%d events written, want %d", len(written), total)
	}

	waitFor(t, 30*time.Second, "every written event in Kafka", func() bool {
		seen := eventIDs(msgs.snapshot())
		for id := range written {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "every outbox empty", func() bool {
		n, err := e.coll.CountDocuments(ctx, bson.D{{Key: outbox.FieldPending, Value: bson.D{{Key: "$gt", Value: 0}}}})
		return err == nil && n == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}

	// Per org, first deliveries come in version order.
	last := map[string]int{}
	firstSeen := map[string]bool{}
	for _, m := range msgs.snapshot() {
		id := header(m, outbox.HeaderEventID)
		if firstSeen[id] {
			continue
		}
		firstSeen[id] = true
		v, _, _ := strings.Cut(string(m.Value), ":")
		version, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("value %q", m.Value)
		}
		if version <= last[string(m.Key)] {
			t.Fatalf("%s: version %d delivered after %d", m.Key, version, last[string(m.Key)])
		}
		last[string(m.Key)] = version
	}
	for i := range orgs {
		d := e.doc(t, ctx, "org-"+strconv.Itoa(i))
		if d.OutboxSeq != d.Version || d.Version != int64(last["org-"+strconv.Itoa(i)]) {
			t.Errorf("org-%d: version %d, seq %d, last delivered version %d", i, d.Version, d.OutboxSeq, last["org-"+strconv.Itoa(i)])
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("ran out of time")
	}
}

func TestRunFlushesOnShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	// No interval and no Notify will come: only the last pass can publish.
	relay := outbox.NewRelay(e.writer, outbox.Config{Interval: time.Hour, FlushTimeout: 5 * time.Second, Registerer: e.reg}, e.coll)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	// The first pass has run (and found nothing) once it reported a backlog.
	waitFor(t, 20*time.Second, "the first pass", func() bool { return series(t, e.reg, "quarters_outbox_backlog_events") > 0 })
	id, err := e.create(ctx, "org-1")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := e.doc(t, ctx, "org-1"); d.OutboxPending != 0 {
		t.Fatalf("after shutdown the document still holds %+v", d.Pending)
	}
	waitFor(t, 20*time.Second, "the event in Kafka", func() bool { return eventIDs(msgs.snapshot())[id] == 1 })
}

func TestOversizedEventHoldsBackOnlyItsDocument(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	big := orgDoc{ID: "org-big", Name: "big", Version: 1}
	big.Add(outbox.NewEvent(ctx, outbox.NewID(), e.topic, "org-big", make([]byte, 2<<20)))
	if _, err := e.coll.InsertOne(ctx, big); err != nil {
		t.Fatal(err)
	}
	id, err := e.create(ctx, "org-small")
	if err != nil {
		t.Fatal(err)
	}
	// A counter left positive without events is reset, not retried forever.
	if _, err := e.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "org-stray"}, {Key: "version", Value: int64(1)}, {Key: outbox.FieldPending, Value: 1}}); err != nil {
		t.Fatal(err)
	}
	relay := e.relay(nil)
	if err := relay.Flush(ctx); err == nil {
		t.Fatal("flush reported success with an event Kafka cannot take")
	}
	if d := e.doc(t, ctx, "org-small"); d.OutboxPending != 0 {
		t.Fatalf("org-small still holds %+v", d.Pending)
	}
	if d := e.doc(t, ctx, "org-big"); d.OutboxPending != 1 || len(d.Outbox) != 1 {
		t.Fatalf("org-big holds %d events, pending %d; want its event kept", len(d.Outbox), d.OutboxPending)
	}
	if d := e.doc(t, ctx, "org-stray"); d.OutboxPending != 0 {
		t.Fatalf("org-stray pending %d, want 0", d.OutboxPending)
	}
	if n := metric(t, e.reg, "quarters_outbox_backlog_events"); n != 1 {
		t.Errorf("backlog %v, want 1", n)
	}
	waitFor(t, 20*time.Second, "org-small's event in Kafka", func() bool { return eventIDs(msgs.snapshot())[id] == 1 })
}

// An idle relay sweeps less and less often, but it still finds, within its
// longest pause, the events of a writer that never called Notify (a
// process that stopped before its relay ran); Notify is still served at
// once.
func TestIdleSweepBacksOffAndStillFindsUnnotifiedEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	relay := outbox.NewRelay(e.writer, outbox.Config{
		Interval: 50 * time.Millisecond, MaxIdleInterval: 400 * time.Millisecond,
		PublishTimeout: 2 * time.Second, FlushTimeout: 2 * time.Second, Registerer: e.reg,
	}, e.coll)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	defer func() { stop(); <-done }()

	time.Sleep(1500 * time.Millisecond) // idle: the pause has grown to its bound
	unnotified, err := e.create(ctx, "org-quiet")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the unnotified event published", func() bool { return eventIDs(msgs.snapshot())[unnotified] == 1 })
	waitFor(t, 20*time.Second, "the unnotified event removed", func() bool { return e.doc(t, ctx, "org-quiet").OutboxPending == 0 })

	notified, err := e.rename(ctx, "org-quiet", "Quiet Rentals")
	if err != nil {
		t.Fatal(err)
	}
	relay.Notify()
	waitFor(t, 20*time.Second, "the notified event published", func() bool { return eventIDs(msgs.snapshot())[notified] == 1 })
}

// duringPublish runs a function once, while the relay publishes a page.
type duringPublish struct {
	pub  outbox.Publisher
	once sync.Once
	fn   func()
}

func (d *duringPublish) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	err := d.pub.WriteMessages(ctx, msgs...)
	d.once.Do(d.fn)
	return err
}

// A page's published events are removed together; a document written
// between the relay's read and its removal keeps the event written then,
// and loses the ones that were published.
func TestDocumentChangedDuringPublishKeepsItsNewEvent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	var created []string
	for i := range 5 {
		id, err := e.create(ctx, "org-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, id)
	}
	var renamed string
	pub := &duringPublish{pub: e.writer, fn: func() {
		id, err := e.rename(ctx, "org-2", "renamed")
		if err != nil {
			t.Error(err)
		}
		renamed = id
	}}
	relay := e.relay(pub)
	if err := relay.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	for i := range 5 {
		d := e.doc(t, ctx, "org-"+strconv.Itoa(i))
		want := 0
		if i == 2 {
			want = 1
		}
		if len(d.Outbox) != want || d.OutboxPending != want {
			t.Fatalf("org-%d after the first pass: %d events, pending %d; want %d", i, len(d.Outbox), d.OutboxPending, want)
		}
	}
	if got := e.doc(t, ctx, "org-2").Outbox[0].ID; got != renamed {
		t.Fatalf("org-2 kept event %s, want the rename's %s", got, renamed)
	}
	if err := relay.Flush(ctx); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	if d := e.doc(t, ctx, "org-2"); d.OutboxPending != 0 {
		t.Fatalf("org-2 after the second pass: pending %d", d.OutboxPending)
	}
	waitFor(t, 20*time.Second, "all six events in Kafka", func() bool {
		seen := eventIDs(msgs.snapshot())
		for _, id := range append(created, renamed) {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
}

// NotifyDoc publishes the named document at once, reading it by _id: a
// document written without a notification waits for the sweep.
func TestNotifyDocPublishesThatDocument(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e := newEnv(t, ctx)
	msgs := e.collect(t, ctx)
	relay := outbox.NewRelay(e.writer, outbox.Config{
		Interval: time.Hour, PublishTimeout: 2 * time.Second, FlushTimeout: 2 * time.Second, Registerer: e.reg,
	}, e.coll)
	first, err := e.create(ctx, "org-first")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	// The sweep Run starts with; the next one is due in an hour.
	waitFor(t, 10*time.Second, "the first sweep", func() bool {
		return eventIDs(msgs.snapshot())[first] > 0 && e.doc(t, ctx, "org-first").OutboxPending == 0
	})

	silent, err := e.create(ctx, "org-silent")
	if err != nil {
		t.Fatal(err)
	}
	notified, err := e.create(ctx, "org-notified")
	if err != nil {
		t.Fatal(err)
	}
	notify := relay.Notifier(e.coll)
	notify("org-notified")
	waitFor(t, 10*time.Second, "the notified document's event in Kafka", func() bool {
		return eventIDs(msgs.snapshot())[notified] > 0
	})
	waitFor(t, 10*time.Second, "the notified document's outbox empty", func() bool {
		return e.doc(t, ctx, "org-notified").OutboxPending == 0
	})
	// Another notification makes another pass, which still leaves the
	// silent document to the sweep (due in an hour).
	renamed, err := e.rename(ctx, "org-notified", "again")
	if err != nil {
		t.Fatal(err)
	}
	notify("org-notified")
	waitFor(t, 10*time.Second, "the second event in Kafka", func() bool {
		return eventIDs(msgs.snapshot())[renamed] > 0
	})
	if eventIDs(msgs.snapshot())[silent] > 0 || e.doc(t, ctx, "org-silent").OutboxPending != 1 {
		t.Fatal("a pass for one document published another")
	}
	// Notify asks for a sweep, which finds it.
	relay.Notify()
	waitFor(t, 10*time.Second, "the silent document's event after Notify", func() bool {
		return eventIDs(msgs.snapshot())[silent] > 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
