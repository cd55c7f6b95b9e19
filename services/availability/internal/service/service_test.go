package service_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/availability/internal/service"
)

const adminToken = "test-admin-token"

// wait bounds how long a test waits for an event to be applied; the
// consumers join their groups first, which takes a few seconds.
const wait = 60 * time.Second

type harness struct {
	t      *testing.T
	ctx    context.Context
	api    http.Handler
	cfg    *service.Config
	writer *kafka.Writer

	mu     sync.Mutex
	events []*eventsv1.CalendarEvent
	seen   map[string]int // property id → events of it handed to the test
	signal chan struct{}
}

// useStores points cfg at the test's stores.
func useStores(t *testing.T, cfg *service.Config) {
	cfg.Mongo.URI, cfg.Mongo.Database = testenv.MongoURI(t), testenv.Database(t)
	cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix = testenv.KafkaBrokers(t), testenv.TopicPrefix(t)
	cfg.Redis.URL = testenv.RedisURL(t)
}

func random() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func start(t *testing.T, now func() time.Time) *harness {
	t.Helper()
	return startWith(t, &service.Config{AdminToken: adminToken, ConsumerGroup: "availability", Now: now})
}

func startWith(t *testing.T, cfg *service.Config) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	useStores(t, cfg)
	// A group of its own: tests running side by side never rebalance
	// each other's consumers.
	cfg.ConsumerGroup = cfg.Kafka.TopicPrefix + "availability"
	rt := &bootstrap.Runtime{Name: "availability", Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	app, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, api: app.API, cfg: cfg, writer: extkafka.NewWriter(cfg.Kafka.Brokers),
		seen: map[string]int{}, signal: make(chan struct{}, 1)}
	workCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range app.Workers {
		wg.Go(func() { _ = w(workCtx) })
	}
	wg.Go(func() { h.watch(workCtx) })
	t.Cleanup(func() {
		stop()
		wg.Wait()
		_ = h.writer.Close()
		for _, c := range app.Closers {
			_ = c(context.Background())
		}
	})
	return h
}

// watch collects the calendar events the service publishes.
func (h *harness) watch(ctx context.Context) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: h.cfg.Kafka.Brokers, GroupID: "watch", GroupTopics: []string{h.cfg.Kafka.Topic("calendars")},
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond,
	})
	defer r.Close()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return
		}
		var ev eventsv1.CalendarEvent
		if err := proto.Unmarshal(m.Value, &ev); err != nil {
			h.t.Errorf("undecodable calendar event: %v", err)
			continue
		}
		if string(m.Key) != ev.GetEnvelope().GetAggregateId() {
			h.t.Errorf("calendar event keyed %q for property %q", m.Key, ev.GetEnvelope().GetAggregateId())
		}
		h.mu.Lock()
		h.events = append(h.events, &ev)
		h.mu.Unlock()
		select {
		case h.signal <- struct{}{}:
		default:
		}
	}
}

// nextEvent returns the next calendar event of property p that the test
// has not seen yet, waiting for it.
func (h *harness) nextEvent(p string) *eventsv1.CalendarEvent {
	h.t.Helper()
	deadline := time.After(wait)
	for {
		h.mu.Lock()
		n := 0
		for _, ev := range h.events {
			if ev.GetEnvelope().GetAggregateId() != p {
				continue
			}
			if n == h.seen[p] {
				h.seen[p]++
				h.mu.Unlock()
				return ev
			}
			n++
		}
		h.mu.Unlock()
		select {
		case <-h.signal:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			h.t.Fatalf("no further calendar event of %s", p)
		}
	}
}

// expectEvent waits for the next calendar event of p and checks its range.
func (h *harness) expectEvent(p, from, to string) *eventsv1.CalendarEvent {
	h.t.Helper()
	ev := h.nextEvent(p)
	if ev.GetEnvelope().GetType() != "calendar.updated" || ev.GetChangedFrom() != from || ev.GetChangedTo() != to ||
		ev.GetCalendar().GetPropertyId() != p {
		h.t.Fatalf("calendar event of %s: %s %s..%s, want calendar.updated %s..%s", p,
			ev.GetEnvelope().GetType(), ev.GetChangedFrom(), ev.GetChangedTo(), from, to)
	}
	return ev
}

func (h *harness) publish(topic, key string, m proto.Message) {
	h.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.writer.WriteMessages(h.ctx, kafka.Message{Topic: h.cfg.Kafka.Topic(topic), Key: []byte(key), Value: b}); err != nil {
		h.t.Fatalf("publish to %s: %v", topic, err)
	}
}

func envelope(typ, org, id string, v int64) *eventsv1.Envelope {
	return &eventsv1.Envelope{EventId: random(), Type: typ, OrgId: org, AggregateId: id, AggregateVersion: v}
}

func (h *harness) org(id string, v int64) {
	h.publish("orgs", id, &eventsv1.OrgEvent{Envelope: envelope("org.created", id, id, v), Org: &eventsv1.Org{Id: id}})
}

func (h *harness) listing(org, id, tz string, minNights *int32, v int64) {
	h.publish("listings", id, &eventsv1.ListingEvent{
		Envelope: envelope("listing.updated", org, id, v),
		Listing:  &eventsv1.Listing{Id: id, OrgId: org, Timezone: tz, Terms: &eventsv1.ListingTerms{MinNights: minNights}},
	})
}

func (h *harness) unpublish(org, id string, v int64) {
	h.publish("listings", id, &eventsv1.ListingEvent{
		Envelope: envelope("listing.deleted", org, id, v),
		Listing:  &eventsv1.Listing{Id: id, OrgId: org},
	})
}

// property announces a property event (property.created or
// property.deleted) of the catalog.
func (h *harness) property(typ, org, id string, v int64) {
	h.publish("listings", id, &eventsv1.ListingEvent{
		Envelope: envelope(typ, org, id, v),
		Listing:  &eventsv1.Listing{Id: id, OrgId: org},
	})
}

var statuses = map[string]eventsv1.ReservationStatus{
	"inquiry":   eventsv1.ReservationStatus_RESERVATION_STATUS_INQUIRY,
	"reserved":  eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED,
	"confirmed": eventsv1.ReservationStatus_RESERVATION_STATUS_CONFIRMED,
	"cancelled": eventsv1.ReservationStatus_RESERVATION_STATUS_CANCELLED,
}

func (h *harness) reservation(typ, org, id, property, status, in, out string, v int64) {
	h.publish("reservations", id, &eventsv1.ReservationEvent{
		Envelope: envelope(typ, org, id, v),
		Reservation: &eventsv1.Reservation{Id: id, OrgId: org, PropertyId: property, Status: statuses[status],
			CheckIn: in, CheckOut: out},
	})
}

// token returns a bearer token of org.
func (h *harness) token(org string) string {
	h.t.Helper()
	rdb, err := extredis.Connect(h.ctx, h.cfg.Redis.URL)
	if err != nil {
		h.t.Fatal(err)
	}
	store := authn.NewStore(rdb)
	h.t.Cleanup(func() { _ = store.Close(); _ = rdb.Close() })
	id := authn.NewClientID()
	secret, hash := authn.NewSecret()
	if err := store.PutCredential(h.ctx, id, org, hash); err != nil {
		h.t.Fatal(err)
	}
	p, err := store.VerifySecret(h.ctx, id, secret)
	if err != nil {
		h.t.Fatal(err)
	}
	tok, err := store.Mint(h.ctx, p)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

type resp struct {
	status int
	body   map[string]any
	raw    string
}

func (h *harness) do(method, path, body string, hdr ...string) resp {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, req)
	raw, _ := io.ReadAll(w.Body)
	r := resp{status: w.Code, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		h.t.Errorf("%s %s: Cache-Control %q", method, path, got)
	}
	if ct := w.Header().Get("Content-Type"); w.Code != 204 && !strings.HasPrefix(ct, "application/json") {
		h.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return r
}

func (h *harness) admin(method, path, body string) resp {
	h.t.Helper()
	return h.do(method, "/admin/v1"+path, body, "Authorization", "Bearer "+adminToken)
}

// calendar returns the days of listing id as "date:status" strings.
func (h *harness) calendar(token, id, query string) (resp, []string) {
	h.t.Helper()
	r := h.do("GET", "/api/v1/listings/"+id+"/calendar"+query, "", "Authorization", "Bearer "+token)
	if r.status != 200 {
		return r, nil
	}
	var body struct {
		Days []struct {
			Date            string `json:"date"`
			Status          string `json:"status"`
			MinNights       *int   `json:"minNights"`
			IsBaseMinNights *bool  `json:"isBaseMinNights"`
		} `json:"days"`
	}
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
		h.t.Fatalf("calendar body: %v: %s", err, r.raw)
	}
	out := make([]string, 0, len(body.Days))
	for _, d := range body.Days {
		if d.MinNights == nil || d.IsBaseMinNights == nil || !*d.IsBaseMinNights {
			h.t.Fatalf("calendar day without minNights or isBaseMinNights true: %s", r.raw[:min(len(r.raw), 300)])
		}
		out = append(out, fmt.Sprintf("%s:%s:%d", d.Date, d.Status, *d.MinNights))
	}
	return r, out
}

// eventually polls cond until it holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func days(from string, statuses ...string) []string {
	d, err := time.Parse(time.DateOnly, from)
	if err != nil {
		panic(err)
	}
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = d.AddDate(0, 0, i).Format(time.DateOnly) + ":" + s
	}
	return out
}

func (h *harness) expectDays(token, id, query string, want []string, minNights int) {
	h.t.Helper()
	r, got := h.calendar(token, id, query)
	if r.status != 200 {
		h.t.Fatalf("calendar %s%s: %d %s", id, query, r.status, r.raw)
	}
	for i := range want {
		want[i] += fmt.Sprintf(":%d", minNights)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		h.t.Fatalf("calendar %s%s:\n got %v\nwant %v", id, query, got, want)
	}
}

func i32(v int32) *int32 { return &v }

// The calendar follows reservation and block changes, and every change of
// days is announced with the days it changed.
func TestCalendarFollowsReservationsAndBlocks(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const org, p, p2 = "org_a", "prop_a", "prop_b"
	h.org(org, 1)
	h.listing(org, p, "Europe/Amsterdam", i32(30), 1)
	h.listing(org, p2, "Europe/Amsterdam", nil, 1)
	tok := h.token(org)
	h.eventually("listings applied", func() bool {
		r1, _ := h.calendar(tok, p, "?start=2026-07-01&end=2026-07-01")
		r2, _ := h.calendar(tok, p2, "?start=2026-07-01&end=2026-07-01")
		return r1.status == 200 && r2.status == 200
	})
	h.eventually("org applied", func() bool {
		return h.admin("GET", "/orgs/"+org+"/properties/"+p+"/blocks", "").status == 200
	})

	// A block: start inclusive, end exclusive.
	r := h.admin("POST", "/orgs/"+org+"/properties/"+p+"/blocks", `{"start":"2026-07-01","end":"2026-07-05","reason":"painting"}`)
	if r.status != 201 {
		t.Fatalf("add block: %d %s", r.status, r.raw)
	}
	blockID := r.body["block"].(map[string]any)["id"].(string)
	ev := h.expectEvent(p, "2026-07-01", "2026-07-04")
	if ev.GetEnvelope().GetOrgId() != org || len(ev.GetCalendar().GetBlocks()) != 1 || ev.GetCalendar().GetBlocks()[0].GetReason() != "painting" {
		t.Fatalf("block event: %v", ev)
	}
	v1 := ev.GetEnvelope().GetAggregateVersion()

	// A held booking wins over the block; the check-out day stays free.
	h.reservation("reservation.created", org, "r1", p, "reserved", "2026-07-03", "2026-07-10", 1)
	ev = h.expectEvent(p, "2026-07-03", "2026-07-09")
	if ev.GetEnvelope().GetAggregateVersion() <= v1 {
		t.Fatalf("calendar version %d after %d", ev.GetEnvelope().GetAggregateVersion(), v1)
	}
	h.expectDays(tok, p, "?start=2026-06-30&end=2026-07-11",
		days("2026-06-30", "available", "unavailable", "unavailable", "reserved", "reserved", "reserved", "reserved",
			"reserved", "reserved", "reserved", "available", "available"), 30)

	// An inquiry blocks nothing and announces nothing: the next event of the
	// property is the confirmed booking's.
	h.reservation("reservation.created", org, "r2", p, "inquiry", "2026-08-01", "2026-08-05", 1)
	h.reservation("reservation.created", org, "r3", p, "confirmed", "2026-09-01", "2026-09-03", 1)
	h.expectEvent(p, "2026-09-01", "2026-09-02")
	h.expectDays(tok, p, "?start=2026-08-01&end=2026-08-01", days("2026-08-01", "available"), 30)

	// Confirming turns held days booked.
	h.reservation("reservation.updated", org, "r1", p, "confirmed", "2026-07-03", "2026-07-10", 2)
	h.expectEvent(p, "2026-07-03", "2026-07-09")
	h.expectDays(tok, p, "?start=2026-07-02&end=2026-07-04", days("2026-07-02", "unavailable", "booked", "booked"), 30)

	// Cancelling frees the days on the very next request after the event is
	// applied (the event is written with the change).
	h.reservation("reservation.updated", org, "r1", p, "cancelled", "2026-07-03", "2026-07-10", 3)
	h.expectEvent(p, "2026-07-03", "2026-07-09")
	h.expectDays(tok, p, "?start=2026-07-02&end=2026-07-10",
		days("2026-07-02", "unavailable", "unavailable", "unavailable", "available", "available", "available",
			"available", "available", "available"), 30)

	// An older state arriving late is ignored: the next event is the one of
	// the newer state that follows it.
	h.reservation("reservation.updated", org, "r1", p, "confirmed", "2026-07-03", "2026-07-10", 2)
	h.reservation("reservation.updated", org, "r1", p, "reserved", "2026-10-01", "2026-10-03", 4)
	h.expectEvent(p, "2026-10-01", "2026-10-02")
	h.expectDays(tok, p, "?start=2026-07-05&end=2026-07-05", days("2026-07-05", "available"), 30)

	// Moving to another property frees the old days and takes the new ones.
	h.reservation("reservation.updated", org, "r1", p2, "reserved", "2026-10-02", "2026-10-04", 5)
	h.expectEvent(p, "2026-10-01", "2026-10-02")
	h.expectEvent(p2, "2026-10-02", "2026-10-03")
	h.expectDays(tok, p, "?start=2026-10-01&end=2026-10-03", days("2026-10-01", "available", "available", "available"), 30)
	h.expectDays(tok, p2, "?start=2026-10-01&end=2026-10-04", days("2026-10-01", "available", "reserved", "reserved", "available"), 1)

	// Moving dates on the same property announces the old and new days.
	h.reservation("reservation.updated", org, "r1", p2, "reserved", "2026-10-03", "2026-10-06", 6)
	h.expectEvent(p2, "2026-10-02", "2026-10-05")

	// Deleting a booking frees its days.
	h.reservation("reservation.deleted", org, "r3", p, "confirmed", "2026-09-01", "2026-09-03", 2)
	h.expectEvent(p, "2026-09-01", "2026-09-02")
	h.expectDays(tok, p, "?start=2026-09-01&end=2026-09-02", days("2026-09-01", "available", "available"), 30)

	// Removing the block frees its days.
	if r := h.admin("DELETE", "/orgs/"+org+"/properties/"+p+"/blocks/"+blockID, ""); r.status != 204 {
		t.Fatalf("remove block: %d %s", r.status, r.raw)
	}
	ev = h.expectEvent(p, "2026-07-01", "2026-07-04")
	if len(ev.GetCalendar().GetBlocks()) != 0 {
		t.Fatalf("blocks after removal: %v", ev.GetCalendar().GetBlocks())
	}
	h.expectDays(tok, p, "?start=2026-07-01&end=2026-07-02", days("2026-07-01", "available", "available"), 30)
}

// A listing published a moment ago answers its calendar and takes blocks on
// the very next request, though its event may still be on its way: a
// listing never heard of is waited for, up to ListingWait.
func TestJustPublishedListingIsWaitedFor(t *testing.T) {
	t.Parallel()
	h := startWith(t, &service.Config{AdminToken: adminToken, ConsumerGroup: "availability", ListingWait: 5 * time.Second})
	const org = "org_w"
	h.org(org, 1)
	tok := h.token(org)
	h.listing(org, "fresh-1", "Europe/Amsterdam", nil, 1)
	if r, _ := h.calendar(tok, "fresh-1", "?start=2029-12-31&end=2030-01-01"); r.status != 200 {
		t.Fatalf("calendar right after publish: %d %s", r.status, r.raw)
	}
	h.eventually("org applied", func() bool {
		return h.admin("GET", "/orgs/"+org+"/properties/fresh-1/blocks", "").status == 200
	})
	h.listing(org, "fresh-2", "Europe/Amsterdam", nil, 1)
	if r := h.admin("POST", "/orgs/"+org+"/properties/fresh-2/blocks", `{"start":"2030-01-01","end":"2030-01-02"}`); r.status != 201 {
		t.Fatalf("block right after publish: %d %s", r.status, r.raw)
	}
	// A listing that never comes still answers 404, after the wait.
	start := time.Now()
	if r, _ := h.calendar(tok, "never", ""); r.status != 404 || time.Since(start) < 4*time.Second {
		t.Fatalf("unknown listing: %d after %v", r.status, time.Since(start))
	}
}

func TestCalendarRequests(t *testing.T) {
	t.Parallel()
	// Ten in the morning UTC is already tomorrow in Kiritimati (UTC+14).
	now := time.Date(2026, 6, 30, 10, 0, 0, 0, time.UTC)
	h := start(t, func() time.Time { return now })
	const org, other = "org_c", "org_d"
	h.org(org, 1)
	h.org(other, 1)
	h.listing(org, "far", "Pacific/Kiritimati", nil, 1)
	h.listing(org, "gone", "Europe/Amsterdam", nil, 1)
	h.listing(other, "theirs", "Europe/Amsterdam", nil, 1)
	tok := h.token(org)
	h.eventually("listings applied", func() bool {
		r, _ := h.calendar(tok, "gone", "")
		return r.status == 200
	})
	h.unpublish(org, "gone", 2)
	h.eventually("unpublish applied", func() bool {
		r, _ := h.calendar(tok, "gone", "")
		return r.status == 404
	})

	// Defaults: today in the listing's zone, plus 730 days.
	r, got := h.calendar(tok, "far", "")
	if r.status != 200 || len(got) != 731 || got[0] != "2026-07-01:available:1" || got[730] != "2028-06-30:available:1" {
		t.Fatalf("default range: %d, %d days, %v .. %v", r.status, len(got), got[:1], got[len(got)-1:])
	}
	if r, got := h.calendar(tok, "far", "?end=2026-07-03"); r.status != 200 || len(got) != 3 {
		t.Fatalf("end only: %d %v", r.status, got)
	}
	if r, got := h.calendar(tok, "far", "?start=2028-02-28&end=2028-03-01"); r.status != 200 ||
		strings.Join(got, " ") != "2028-02-28:available:1 2028-02-29:available:1 2028-03-01:available:1" {
		t.Fatalf("leap day range: %d %v", r.status, got)
	}
	if r, got := h.calendar(tok, "far", "?start=2026-01-01&end=2029-01-04"); r.status != 200 || len(got) != 1100 {
		t.Fatalf("1100 days: %d, %d days", r.status, len(got))
	}

	bad := []struct{ query, field string }{
		{"?start=2026-02-30", "start"},
		{"?start=2026-7-01", "start"},
		{"?end=2026-07-01T00:00:00Z", "end"},
		{"?start=", "start"},
		{"?start=2026-07-10&end=2026-07-09", "end"},
		{"?end=2026-06-30", "end"}, // before today in Kiritimati
		{"?start=2026-01-01&end=2029-01-05", "1100"},
	}
	for _, b := range bad {
		r, _ := h.calendar(tok, "far", b.query)
		if r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(r.body["message"].(string), b.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", b.query, r.status, r.raw, b.field)
		}
	}

	for _, id := range []string{"unknown", "gone", "theirs"} {
		if r, _ := h.calendar(tok, id, ""); r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("calendar of %s: %d %s", id, r.status, r.raw)
		}
	}
	if r := h.do("GET", "/api/v1/listings/far/calendar", ""); r.status != 401 || r.body["error"] != "unauthorized" {
		t.Errorf("no token: %d %s", r.status, r.raw)
	}
	for _, u := range []struct{ method, path string }{
		{"GET", "/api/v1/listings/far/calendar/x"},
		{"POST", "/api/v1/listings/far/calendar"},
		{"GET", "/api/v1/listings/far/calendar/"},
		{"GET", "/admin/v1/orgs/org_c/properties/far/blocks/b/x"},
		{"PUT", "/admin/v1/orgs/org_c/properties/far/blocks"},
		{"GET", "/admin/v1/orgs/org_c/properties/far/blocks/b"},
	} {
		r := h.do(u.method, u.path, "", "Authorization", "Bearer "+tok)
		if r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("%s %s: %d %s", u.method, u.path, r.status, r.raw)
		}
	}
}

// A property is known from its creation: its blocks can be managed before
// its first publish, its calendar is not public, and once deleted it is
// unknown again.
func TestBlocksOfDraftsAndDeletedProperties(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const org = "org_g"
	h.org(org, 1)
	tok := h.token(org)
	h.property("property.created", org, "draft", 1)
	base := "/orgs/" + org + "/properties/draft/blocks"
	h.eventually("draft known", func() bool { return h.admin("GET", base, "").status == 200 })
	if r := h.admin("POST", base, `{"start":"2027-01-01","end":"2027-01-05"}`); r.status != 201 {
		t.Fatalf("block on a draft: %d %s", r.status, r.raw)
	}
	if r, _ := h.calendar(tok, "draft", ""); r.status != 404 {
		t.Fatalf("calendar of a draft: %d %s", r.status, r.raw)
	}
	// Published later, the block shows.
	h.listing(org, "draft", "Europe/Berlin", nil, 3)
	h.eventually("published", func() bool { r, _ := h.calendar(tok, "draft", ""); return r.status == 200 })
	h.expectDays(tok, "draft", "?start=2026-12-31&end=2027-01-01", days("2026-12-31", "available", "unavailable"), 1)
	// Deleted: property.deleted then listing.deleted, of the same version.
	h.property("property.deleted", org, "draft", 4)
	h.unpublish(org, "draft", 4)
	h.eventually("deleted", func() bool { return h.admin("GET", base, "").status == 404 })
	if r, _ := h.calendar(tok, "draft", ""); r.status != 404 {
		t.Fatalf("calendar of a deleted property: %d %s", r.status, r.raw)
	}
	// A late copy of the creation changes nothing.
	h.property("property.created", org, "draft", 1)
	time.Sleep(300 * time.Millisecond)
	if r := h.admin("POST", base, `{"start":"2027-02-01","end":"2027-02-02"}`); r.status != 404 {
		t.Fatalf("block on a deleted property: %d %s", r.status, r.raw)
	}
}

func TestBlocksAdmin(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const org, other = "org_e", "org_f"
	h.org(org, 1)
	h.org(other, 1)
	h.listing(org, "p1", "Europe/Berlin", nil, 1)
	h.listing(other, "theirs", "Europe/Berlin", nil, 1)
	base := "/orgs/" + org + "/properties/p1/blocks"
	h.eventually("org and listing applied", func() bool { return h.admin("GET", base, "").status == 200 })
	if r := h.admin("GET", base, ""); r.raw != `{"blocks":[]}` {
		t.Fatalf("no blocks: %s", r.raw)
	}

	r := h.admin("POST", base, `{"start":"2026-12-20","end":"2027-01-03"}`)
	if r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.raw)
	}
	b := r.body["block"].(map[string]any)
	if b["propertyId"] != "p1" || b["start"] != "2026-12-20" || b["end"] != "2027-01-03" || b["reason"] != nil ||
		!strings.HasSuffix(b["createdAt"].(string), "Z") || b["id"] == "" {
		t.Fatalf("block: %s", r.raw)
	}
	if r := h.admin("POST", base, `{"start":"2026-11-01","end":"2026-11-02","reason":"owner"}`); r.status != 201 {
		t.Fatalf("add second: %d %s", r.status, r.raw)
	}
	r = h.admin("GET", base, "")
	list, _ := r.body["blocks"].([]any)
	if r.status != 200 || len(list) != 2 || list[0].(map[string]any)["start"] != "2026-11-01" || list[0].(map[string]any)["reason"] != "owner" {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}

	// Blocks of an unpublished property are still managed.
	h.unpublish(org, "p1", 2)
	h.expectEvent("p1", "2026-12-20", "2027-01-02")
	h.expectEvent("p1", "2026-11-01", "2026-11-01")
	h.eventually("unpublish applied", func() bool {
		return h.admin("POST", base, `{"start":"2027-02-01","end":"2027-02-03"}`).status == 201
	})

	bad := []struct{ body, field string }{
		{`{}`, "start"},
		{`{"start":"2026-12-20"}`, "end"},
		{`{"start":"2026-02-29","end":"2026-03-02"}`, "start"},
		{`{"start":"2026-03-02","end":"2026-03-02"}`, "end"},
		{`{"start":"2026-03-02","end":"2026-03-01"}`, "end"},
		{`{"start":"2026-03-01","end":"2026-03-05T00:00:00Z"}`, "end"},
		{`{"start":20260301,"end":"2026-03-05"}`, "start"},
		{`{"start":"2026-03-01","end":"2026-03-05","reason":5}`, "reason"},
		{`not json`, "JSON"},
	}
	for _, c := range bad {
		r := h.admin("POST", base, c.body)
		if r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(r.body["message"].(string), c.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, r.status, r.raw, c.field)
		}
	}
	notFound := []struct{ method, path, body string }{
		{"GET", "/orgs/org_unknown/properties/p1/blocks", ""},
		{"POST", "/orgs/org_unknown/properties/p1/blocks", `{"start":"2026-03-01","end":"2026-03-02"}`},
		{"GET", "/orgs/" + org + "/properties/never-created/blocks", ""},
		{"POST", "/orgs/" + org + "/properties/never-created/blocks", `{"start":"2026-03-01","end":"2026-03-02"}`},
		{"GET", "/orgs/" + org + "/properties/theirs/blocks", ""},
		{"DELETE", "/orgs/" + other + "/properties/p1/blocks/" + b["id"].(string), ""},
		{"DELETE", base + "/blk_unknown", ""},
	}
	for _, c := range notFound {
		r := h.admin(c.method, c.path, c.body)
		if r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if r := h.do("GET", "/admin/v1"+base, ""); r.status != 401 || r.body["error"] != "unauthorized" {
		t.Errorf("no admin token: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", base+"/"+b["id"].(string), ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", base+"/"+b["id"].(string), ""); r.status != 404 {
		t.Fatalf("delete again: %d %s", r.status, r.raw)
	}
	if r := h.admin("GET", base, ""); len(r.body["blocks"].([]any)) != 2 {
		t.Fatalf("after delete: %s", r.raw)
	}
}
