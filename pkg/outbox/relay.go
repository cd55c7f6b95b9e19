package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/pkg/extmongo"
)

// Publisher writes messages to Kafka and returns once they are acknowledged.
// *kafka.Writer from extkafka.NewWriter satisfies it. When only some messages
// fail it should return kafka.WriteErrors, as kafka-go does, so that the
// relay removes exactly the acknowledged ones.
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Config tunes a Relay. The zero value of each field selects its default.
type Config struct {
	// VersionField is the aggregate's version field (default "version"). The
	// relay's compare-and-set includes it when a document has it.
	VersionField string
	// Interval between passes when nothing calls Notify (default 1 s); also
	// the pause after a pass that failed.
	Interval time.Duration
	// MaxIdleInterval (default 30 s) bounds how far the pause between
	// passes that nothing asked for grows: it doubles from Interval after
	// every pass that found nothing pending, and drops back to Interval
	// after a pass that found events. Writers call Notify, so the sweep
	// only finds what a stopped process left; on a store without indexes
	// (the embedded one) it is a scan of every document.
	MaxIdleInterval time.Duration
	// BatchSize is how many documents one pass reads and publishes at a time
	// (default 100).
	BatchSize int
	// PublishTimeout bounds one publish call (default 10 s).
	PublishTimeout time.Duration
	// FlushTimeout bounds the last pass when Run stops (default 5 s).
	FlushTimeout time.Duration
	Logger       *slog.Logger
	// Registerer receives the relay's metrics; nil leaves them unregistered.
	// One relay per registry.
	Registerer prometheus.Registerer
}

// Relay publishes the events pending in the documents of its collections and
// then removes them from the documents. Delivery is at least once: a relay
// that stops between publishing and removing publishes the same events again
// on its next pass, with the same event ids.
type Relay struct {
	pub     Publisher
	colls   []*mongo.Collection
	cfg     Config
	log     *slog.Logger
	wake    chan struct{}
	mu      sync.Mutex // one pass at a time
	metrics relayMetrics

	// sweep is set by Notify: the next pass looks for pending documents
	// in every collection. Otherwise a pass woken by NotifyDoc reads only
	// the documents named in docs (collection name → _id values).
	sweep  atomic.Bool
	docsMu sync.Mutex
	docs   map[string][]any
}

type relayMetrics struct {
	backlog   *prometheus.GaugeVec
	published *prometheus.CounterVec
	failures  *prometheus.CounterVec
}

// NewRelay returns a relay publishing through pub the events pending in colls.
func NewRelay(pub Publisher, cfg Config, colls ...*mongo.Collection) *Relay {
	if cfg.VersionField == "" {
		cfg.VersionField = "version"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxIdleInterval <= 0 {
		cfg.MaxIdleInterval = 30 * time.Second
	}
	if cfg.MaxIdleInterval < cfg.Interval {
		cfg.MaxIdleInterval = cfg.Interval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = 10 * time.Second
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := promauto.With(cfg.Registerer)
	return &Relay{
		pub:   pub,
		colls: colls,
		cfg:   cfg,
		log:   log.With("component", "outbox_relay"),
		wake:  make(chan struct{}, 1),
		metrics: relayMetrics{
			backlog: f.NewGaugeVec(prometheus.GaugeOpts{
				Name: "quarters_outbox_backlog_events",
				Help: "Events waiting in documents to be published, as of the relay's last pass.",
			}, []string{"collection"}),
			published: f.NewCounterVec(prometheus.CounterOpts{
				Name: "quarters_outbox_published_events_total",
				Help: "Events acknowledged by Kafka, redeliveries included.",
			}, []string{"collection"}),
			failures: f.NewCounterVec(prometheus.CounterOpts{
				Name: "quarters_outbox_relay_failures_total",
				Help: "Relay steps that failed, by stage (scan, decode, publish, remove); the events stay pending.",
			}, []string{"collection", "stage"}),
		},
	}
}

// Notify asks for a pass soon over every collection. It never blocks.
// Writers that know the document they wrote call NotifyDoc instead.
func (r *Relay) Notify() {
	r.sweep.Store(true)
	r.poke()
}

// NotifyDoc asks for a pass soon over one document of one of the relay's
// collections, just written with events: the pass reads it by _id instead
// of looking for pending documents among all. It never blocks.
func (r *Relay) NotifyDoc(coll string, id any) {
	r.docsMu.Lock()
	if r.docs == nil {
		r.docs = map[string][]any{}
	}
	if len(r.docs[coll]) < maxNotifiedDocs {
		r.docs[coll] = append(r.docs[coll], id)
	} else {
		// More than a pass reads by _id (a Kafka outage holds passes
		// back): look for the pending documents instead.
		r.sweep.Store(true)
	}
	r.docsMu.Unlock()
	r.poke()
}

// maxNotifiedDocs bounds the documents remembered per collection between
// passes.
const maxNotifiedDocs = 10000

// Notifier returns NotifyDoc for documents of coll, for a repository to call
// after each write with events.
func (r *Relay) Notifier(coll *mongo.Collection) func(id any) {
	name := coll.Name()
	return func(id any) { r.NotifyDoc(name, id) }
}

func (r *Relay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run makes a pass at once, then whenever Notify or NotifyDoc is called and
// at every interval, until ctx is cancelled. After a failed pass it waits for
// the interval, ignoring notifications, so a Kafka outage is not hammered.
// The passes at the interval (and those Notify asks for) look at every
// collection; the interval backs off while they find nothing, and passes
// for NotifyDoc do not move it. On cancellation it makes a last pass bounded
// by FlushTimeout and returns nil.
func (r *Relay) Run(ctx context.Context) error {
	for _, coll := range r.colls {
		idx := mongo.IndexModel{Keys: bson.D{{Key: FieldPending, Value: 1}}, Options: options.Index().SetName("outbox_pending")}
		if err := extmongo.EnsureIndexes(ctx, coll, idx); err != nil {
			r.log.Warn("create outbox index", "collection", coll.Name(), "error", err)
		}
	}
	idle := r.cfg.Interval
	timer := time.NewTimer(idle)
	defer timer.Stop()
	failed, found := r.pass(ctx)
	sweepDone := true // the last pass was a sweep: set the next one's time
	for {
		wake := r.wake
		if sweepDone || failed {
			switch {
			case failed:
				wake, idle = nil, r.cfg.Interval
			case found:
				idle = r.cfg.Interval
			default:
				idle = min(2*idle, r.cfg.MaxIdleInterval)
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(idle)
		}
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FlushTimeout)
			if err := r.Flush(flushCtx); err != nil {
				r.log.Warn("final outbox flush incomplete; events stay pending", "error", err)
			}
			cancel()
			return nil
		case <-wake:
			if r.sweep.Swap(false) {
				failed, found = r.pass(ctx)
				sweepDone = true
			} else {
				failed = r.passDocs(ctx)
				sweepDone = false
			}
		case <-timer.C:
			r.sweep.Store(false)
			failed, found = r.pass(ctx)
			sweepDone = true
		}
	}
}

// passDocs runs the pass NotifyDoc asked for and reports whether it failed.
func (r *Relay) passDocs(ctx context.Context) (failed bool) {
	r.docsMu.Lock()
	docs := r.docs
	r.docs = nil
	r.docsMu.Unlock()
	if len(docs) == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, coll := range r.colls {
		ids := docs[coll.Name()]
		if len(ids) == 0 {
			continue
		}
		if err := r.flushDocs(ctx, coll, ids); err != nil {
			errs = append(errs, fmt.Errorf("collection %s: %w", coll.Name(), err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("outbox pass failed; events stay pending", "error", err)
		}
		return true
	}
	return false
}

// flushDocs publishes and removes the pending events of the documents of
// coll with the given ids, reading them by _id.
func (r *Relay) flushDocs(ctx context.Context, coll *mongo.Collection, ids []any) error {
	name := coll.Name()
	var errs []error
	for len(ids) > 0 {
		n := min(len(ids), r.cfg.BatchSize)
		chunk := ids[:n]
		ids = ids[n:]
		filter := bson.D{
			{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}},
			{Key: FieldPending, Value: bson.D{{Key: "$gt", Value: 0}}},
		}
		docs, _, err := r.find(ctx, coll, filter)
		if err != nil {
			r.metrics.failures.WithLabelValues(name, "scan").Inc()
			return errors.Join(append(errs, err)...)
		}
		if len(docs) == 0 {
			continue
		}
		_, kafkaDown, perrs := r.publishPage(ctx, coll, docs)
		errs = append(errs, perrs...)
		if kafkaDown || ctx.Err() != nil {
			break // the sweep retries
		}
	}
	return errors.Join(errs...)
}

// publishPage publishes the events of a page of documents and removes the
// acknowledged ones. It returns how many events it removed, whether Kafka
// is failing (rather than refusing single oversized events), and the
// errors met.
func (r *Relay) publishPage(ctx context.Context, coll *mongo.Collection, docs []pendingDoc) (removed int, kafkaDown bool, errs []error) {
	name := coll.Name()
	published, err := r.publish(ctx, name, docs)
	if err != nil {
		errs = append(errs, err)
		var oversized *oversizedError
		kafkaDown = !errors.As(err, &oversized)
	}
	removed, rerrs := r.removeAll(ctx, coll, r.removals(docs, published))
	if len(rerrs) > 0 {
		r.metrics.failures.WithLabelValues(name, "remove").Add(float64(len(rerrs)))
		errs = append(errs, rerrs...)
	}
	return removed, kafkaDown, errs
}

// pass flushes once and reports whether it failed and whether it found
// pending documents.
func (r *Relay) pass(ctx context.Context) (failed, found bool) {
	found, err := r.flush(ctx)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("outbox pass failed; events stay pending", "error", err)
	}
	return err != nil, found
}

// Flush publishes every event pending in the relay's collections, oldest
// first within each document, and removes the acknowledged ones.
func (r *Relay) Flush(ctx context.Context) error {
	_, err := r.flush(ctx)
	return err
}

// flush is Flush, reporting also whether any collection had pending
// documents.
func (r *Relay) flush(ctx context.Context) (found bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, coll := range r.colls {
		f, err := r.flushCollection(ctx, coll)
		found = found || f
		if err != nil {
			errs = append(errs, fmt.Errorf("collection %s: %w", coll.Name(), err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return found, errors.Join(errs...)
}

// pendingDoc is what the relay reads of a document with pending events.
type pendingDoc struct {
	id      bson.RawValue
	version bson.RawValue // Type 0 when the document has no version field
	seq     bson.RawValue // Type 0 when the document has no sequence field
	entries []bson.Raw    // FieldEvents as stored, so rewrites keep every field
	events  []Event
	broken  bool // the events could not be decoded; the document is left alone
}

func (r *Relay) flushCollection(ctx context.Context, coll *mongo.Collection) (found bool, err error) {
	name := coll.Name()
	var (
		after      bson.RawValue
		backlog    int
		publishing = true
		errs       []error
	)
	// The pass pages through the pending documents in _id order, so a
	// document that cannot be published is not read again in the same pass.
	for {
		filter := bson.D{{Key: FieldPending, Value: bson.D{{Key: "$gt", Value: 0}}}}
		if after.Type != 0 {
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}})
		}
		docs, n, err := r.find(ctx, coll, filter)
		if err != nil {
			r.metrics.failures.WithLabelValues(name, "scan").Inc()
			return found, errors.Join(append(errs, err)...)
		}
		if n == 0 || len(docs) == 0 {
			break
		}
		found = true
		after = docs[len(docs)-1].id
		if !publishing {
			backlog += countEvents(docs)
		} else {
			removed, kafkaDown, perrs := r.publishPage(ctx, coll, docs)
			backlog += countEvents(docs) - removed
			errs = append(errs, perrs...)
			if kafkaDown {
				publishing = false // Kafka is failing: just count the rest
			}
			if ctx.Err() != nil {
				return found, errors.Join(errs...)
			}
		}
		if n < r.cfg.BatchSize {
			break
		}
	}
	r.metrics.backlog.WithLabelValues(name).Set(float64(backlog))
	return found, errors.Join(errs...)
}

func countEvents(docs []pendingDoc) int {
	n := 0
	for _, d := range docs {
		n += len(d.events)
	}
	return n
}

func (r *Relay) projection() bson.D {
	return bson.D{{Key: FieldEvents, Value: 1}, {Key: FieldSeq, Value: 1}, {Key: r.cfg.VersionField, Value: 1}}
}

// find returns the decodable documents matching filter and how many were
// read, decodable or not.
func (r *Relay) find(ctx context.Context, coll *mongo.Collection, filter bson.D) ([]pendingDoc, int, error) {
	opts := options.Find().
		SetSort(bson.D{{Key: "_id", Value: 1}}).
		SetLimit(int64(r.cfg.BatchSize)).
		SetProjection(r.projection())
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("find pending events: %w", err)
	}
	var raws []bson.Raw
	if err := cur.All(ctx, &raws); err != nil {
		return nil, 0, fmt.Errorf("read pending events: %w", err)
	}
	docs := make([]pendingDoc, 0, len(raws))
	for _, raw := range raws {
		d, err := r.parse(raw)
		if err != nil {
			// A document the relay cannot read stays pending; the backlog
			// gauge and the failure counter make it visible.
			r.metrics.failures.WithLabelValues(coll.Name(), "decode").Inc()
			r.log.Error("decode pending events", "collection", coll.Name(), "id", raw.Lookup("_id").String(), "error", err)
			if d.id.Type != 0 {
				docs = append(docs, pendingDoc{id: d.id, broken: true})
			}
			continue
		}
		docs = append(docs, d)
	}
	return docs, len(raws), nil
}

func (r *Relay) parse(raw bson.Raw) (pendingDoc, error) {
	var d pendingDoc
	id, err := raw.LookupErr("_id")
	if err != nil {
		return d, errors.New("document without _id")
	}
	d.id = id
	d.version, _ = raw.LookupErr(r.cfg.VersionField)
	d.seq, _ = raw.LookupErr(FieldSeq)
	arr, err := raw.LookupErr(FieldEvents)
	if err != nil {
		return d, nil // counted as pending but holding nothing: rewritten below
	}
	values, err := arr.Array().Values()
	if err != nil {
		return pendingDoc{id: id}, fmt.Errorf("%s is not an array: %w", FieldEvents, err)
	}
	for _, v := range values {
		doc, ok := v.DocumentOK()
		if !ok {
			return pendingDoc{id: id}, fmt.Errorf("%s holds a %s", FieldEvents, v.Type)
		}
		var e Event
		if err := bson.Unmarshal(doc, &e); err != nil {
			return pendingDoc{id: id}, fmt.Errorf("decode event: %w", err)
		}
		d.entries = append(d.entries, doc)
		d.events = append(d.events, e)
	}
	return d, nil
}

// publish writes the events of docs in one call and returns, per document,
// how many of its leading events Kafka acknowledged. Only a prefix counts, so
// that an event is never removed while an earlier one of the same document
// is still pending.
func (r *Relay) publish(ctx context.Context, coll string, docs []pendingDoc) ([]int, error) {
	published := make([]int, len(docs))
	var (
		msgs  []kafka.Message
		owner []int // index in docs of each message
	)
	for i, d := range docs {
		for _, e := range d.events {
			msgs = append(msgs, message(e))
			owner = append(owner, i)
		}
	}
	if len(msgs) == 0 {
		return published, nil
	}
	pubCtx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	err := r.pub.WriteMessages(pubCtx, msgs...)
	var (
		tooLarge  kafka.MessageTooLargeError
		oversized *oversizedError
	)
	for errors.As(err, &tooLarge) {
		// One oversized event must not hold back every other document: set
		// its document aside, loudly, and publish the rest.
		tooLargeID := eventID(tooLarge.Message)
		bad := -1
		for j, m := range msgs {
			if eventID(m) == tooLargeID {
				bad = owner[j]
				break
			}
		}
		if bad < 0 {
			break
		}
		r.metrics.failures.WithLabelValues(coll, "publish").Inc()
		r.log.Error("event too large for Kafka; its document's events stay pending",
			"collection", coll, "event_id", tooLargeID, "error", err)
		if oversized == nil {
			oversized = &oversizedError{}
		}
		oversized.ids = append(oversized.ids, tooLargeID)
		keepMsgs, keepOwner := msgs[:0:0], owner[:0:0]
		for j, m := range msgs {
			if owner[j] != bad {
				keepMsgs, keepOwner = append(keepMsgs, m), append(keepOwner, owner[j])
			}
		}
		msgs, owner = keepMsgs, keepOwner
		if len(msgs) == 0 {
			return published, oversized
		}
		err = r.pub.WriteMessages(pubCtx, msgs...)
	}
	acked := make([]bool, len(msgs))
	var werrs kafka.WriteErrors
	switch {
	case err == nil:
		for j := range acked {
			acked[j] = true
		}
	case errors.As(err, &werrs) && len(werrs) == len(msgs):
		for j := range acked {
			acked[j] = werrs[j] == nil
		}
	}
	// Per document, count the acknowledged events up to the first failure.
	stopped := make([]bool, len(docs))
	total := 0
	for j, ok := range acked {
		i := owner[j]
		if stopped[i] || !ok {
			stopped[i] = true
			continue
		}
		published[i]++
		total++
	}
	r.metrics.published.WithLabelValues(coll).Add(float64(total))
	if err != nil {
		r.metrics.failures.WithLabelValues(coll, "publish").Inc()
		return published, fmt.Errorf("publish %d events: %w", len(msgs), err)
	}
	if oversized != nil {
		return published, oversized
	}
	return published, nil
}

// oversizedError names events Kafka cannot take at their size. They stay
// pending, holding back their own document only.
type oversizedError struct{ ids []string }

func (e *oversizedError) Error() string {
	return fmt.Sprintf("events too large for Kafka, left pending: %v", e.ids)
}

func eventID(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == HeaderEventID {
			return string(h.Value)
		}
	}
	return ""
}

func message(e Event) kafka.Message {
	m := kafka.Message{Topic: e.Topic, Key: []byte(e.Key), Value: e.Value, Time: e.CreatedAt}
	keys := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		if k != HeaderEventID {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	m.Headers = make([]kafka.Header, 0, len(keys)+1)
	m.Headers = append(m.Headers, kafka.Header{Key: HeaderEventID, Value: []byte(e.ID)})
	for _, k := range keys {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(e.Headers[k])})
	}
	return m
}

// removal is what a pass removes from one document: the events with the
// given ids (published of them), or nothing but a stale counter (ids nil).
type removal struct {
	doc       pendingDoc
	ids       map[string]bool
	published int
}

// removals lists what to remove from a page after publishing: the published
// events of each document, and stale counters of documents without events.
func (r *Relay) removals(docs []pendingDoc, published []int) []removal {
	var rs []removal
	for i, d := range docs {
		if len(d.events) == 0 && !d.broken {
			// A counter left positive with no events: reset it so the
			// document stops matching.
			rs = append(rs, removal{doc: d})
			continue
		}
		if published[i] == 0 {
			continue
		}
		ids := make(map[string]bool, published[i])
		for _, e := range d.events[:published[i]] {
			ids[e.ID] = true
		}
		rs = append(rs, removal{doc: d, ids: ids, published: published[i]})
	}
	return rs
}

// removeAll removes the published events of a page of documents in one
// store round trip: every document's compare-and-set update in one
// unordered bulk write. When some did not match (their document changed
// since it was read), each document goes through remove, which re-reads
// and retries; running remove again on a document the bulk write did
// update is harmless, since its guard still matches and it writes the same
// array. It returns how many events were removed and the errors of the
// documents that kept theirs.
func (r *Relay) removeAll(ctx context.Context, coll *mongo.Collection, rs []removal) (int, []error) {
	if len(rs) == 0 {
		return 0, nil
	}
	models := make([]mongo.WriteModel, 0, len(rs))
	for _, x := range rs {
		guard, update, skip := r.removeUpdate(x.doc, x.ids)
		if skip {
			continue
		}
		models = append(models, mongo.NewUpdateOneModel().SetFilter(guard).SetUpdate(update))
	}
	if len(models) > 0 {
		res, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err == nil && res.MatchedCount == int64(len(models)) {
			n := 0
			for _, x := range rs {
				n += x.published
			}
			return n, nil
		}
	}
	n := 0
	var errs []error
	for _, x := range rs {
		if err := r.remove(ctx, coll, x.doc, x.ids); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				return n, errs
			}
			continue
		}
		n += x.published
	}
	return n, errs
}

// removeUpdate returns the compare-and-set update that removes the events
// with the given ids from d's document; skip when there is nothing to do.
func (r *Relay) removeUpdate(d pendingDoc, ids map[string]bool) (guard, update bson.D, skip bool) {
	keep := bson.A{}
	removed := 0
	for i, e := range d.events {
		if ids[e.ID] {
			removed++
			continue
		}
		keep = append(keep, d.entries[i])
	}
	if removed == 0 && len(d.entries) > 0 {
		return nil, nil, true
	}
	guard = bson.D{{Key: "_id", Value: d.id}}
	guard = appendGuard(guard, FieldSeq, d.seq)
	guard = appendGuard(guard, r.cfg.VersionField, d.version)
	update = bson.D{{Key: "$set", Value: bson.D{{Key: FieldEvents, Value: keep}, {Key: FieldPending, Value: len(keep)}}}}
	return guard, update, false
}

// remove deletes the events with the given ids from d's document by rewriting
// the array under a compare-and-set on the document's version and event
// sequence. If the document changed since it was read, it is read again and
// the removal retried on the fresh copy, so events added meanwhile are kept.
func (r *Relay) remove(ctx context.Context, coll *mongo.Collection, d pendingDoc, ids map[string]bool) error {
	const attempts = 20
	for range attempts {
		guard, update, skip := r.removeUpdate(d, ids)
		if skip {
			return nil
		}
		res, err := coll.UpdateOne(ctx, guard, update)
		if err != nil {
			return fmt.Errorf("remove published events from %v: %w", d.id, err)
		}
		if res.MatchedCount > 0 {
			return nil
		}
		raw, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: d.id}}, options.FindOne().SetProjection(r.projection())).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("re-read %v to remove published events: %w", d.id, err)
		}
		if d, err = r.parse(raw); err != nil {
			return fmt.Errorf("re-read %v to remove published events: %w", d.id, err)
		}
	}
	return fmt.Errorf("remove published events from %v: the document changed on each of %d attempts", d.id, attempts)
}

func appendGuard(filter bson.D, field string, v bson.RawValue) bson.D {
	if v.Type == 0 {
		return append(filter, bson.E{Key: field, Value: bson.D{{Key: "$exists", Value: false}}})
	}
	return append(filter, bson.E{Key: field, Value: v})
}
