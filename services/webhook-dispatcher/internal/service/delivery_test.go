package service_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
)

func reservationCreated(org, id string) *eventsv1.ReservationEvent {
	return &eventsv1.ReservationEvent{Envelope: envelope("reservation.created", org, id, 1, time.Now()),
		Reservation: &eventsv1.Reservation{Id: id, PropertyId: "p1", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED}}
}

// TestASlowEndpointDoesNotDelayOthers: one receiver sleeps 10 s on every
// request; the other still gets every event at once.
func TestASlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	e := stores(t)
	h := start(t, e, testConfig(e))
	org := h.newOrg()
	release := make(chan struct{})
	var slowStarted, slowDone atomic.Int32
	slow, fast := newReceiver(t), newReceiver(t)
	slow.hold = func(r *http.Request) {
		slowStarted.Add(1)
		defer slowDone.Add(1)
		select {
		case <-time.After(10 * time.Second):
		case <-release:
		case <-r.Context().Done():
		}
	}
	defer close(release)
	slowID, sec := h.register(org, slow.srv.URL)
	slow.setSecret(sec)
	_, sec = h.register(org, fast.srv.URL)
	fast.setSecret(sec)

	const n = 30
	for i := range n {
		h.publish("reservations", fmt.Sprint("r", i), reservationCreated(org, fmt.Sprint("r", i)))
	}
	fast.wait(n, 9*time.Second)
	if d := slowDone.Load(); d != 0 {
		t.Fatalf("the slow receiver finished %d requests before the fast one had all: the test proves nothing", d)
	}
	// The slow endpoint has its bounded share of attempts in flight, no more.
	eventually(t, 5*time.Second, "slow endpoint saturated", func() bool { return slowStarted.Load() == int32(h.cfg.MaxInflightPerEndpoint) })
	if got := h.metric("quarters_webhook_inflight", slowID); got != float64(h.cfg.MaxInflightPerEndpoint) {
		t.Fatalf("inflight gauge of the slow endpoint %v, want %d", got, h.cfg.MaxInflightPerEndpoint)
	}
	if s := slowStarted.Load(); s > int32(h.cfg.MaxInflightPerEndpoint) {
		t.Fatalf("%d concurrent requests to one endpoint, bound %d", s, h.cfg.MaxInflightPerEndpoint)
	}
}

// resolver maps names to addresses, as a DNS server under an attacker's
// control would.
type resolver map[string]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func TestRefusedAddressesAreRecorded(t *testing.T) {
	t.Parallel()
	e := stores(t)
	cfg := testConfig(e)
	cfg.AllowPrivate = false
	addrs := []string{
		"127.0.0.1", "10.1.2.3", "172.16.5.4", "192.168.0.10", "169.254.169.254", "100.100.100.200", "100.64.0.1",
		"0.0.0.0", "224.0.0.251", "255.255.255.255", "198.18.0.1", "192.0.0.8",
		"::1", "::", "fd00:ec2::254", "fc00::1", "fe80::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a00:1::1",
	}
	res := resolver{}
	for i, a := range addrs {
		res[fmt.Sprintf("h%d.rebind.example", i)] = a
	}
	cfg.Resolver = res
	h := start(t, e, cfg)
	org := h.newOrg()
	ids := make([]string, len(addrs))
	for i := range addrs {
		ids[i], _ = h.register(org, fmt.Sprintf("https://h%d.rebind.example/hook", i))
		if r := h.admin("POST", "/orgs/"+org+"/webhooks/"+ids[i]+"/ping", ""); r.status != 202 {
			t.Fatalf("ping: %d %s", r.status, r.raw)
		}
	}
	for i, a := range addrs {
		rows := h.finished(org, ids[i], 1)
		r := rows[0]
		if r["outcome"] != "failed" || r["reason"] != "refused_address" || !strings.Contains(fmt.Sprint(r["error"]), "refused address") ||
			r["statusCode"] != nil || r["event"] != "ping" {
			t.Errorf("%s: %v", a, r)
		}
	}
	if got := h.metric("quarters_webhook_deliveries_total", "ping", "failed"); got != float64(len(addrs)) {
		t.Errorf("deliveries_total{ping,failed} = %v, want %d", got, len(addrs))
	}
}

func TestTimeoutRedirectAndErrorsAreRecorded(t *testing.T) {
	t.Parallel()
	e := stores(t)
	cfg := testConfig(e)
	cfg.Timeout = 500 * time.Millisecond
	h := start(t, e, cfg)
	org := h.newOrg()

	release := make(chan struct{})
	defer close(release)
	slow := newReceiver(t)
	slow.hold = func(r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/there", http.StatusFound) })
	mux.HandleFunc("/there", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	redirect := newReceiver(t)
	redirect.srv.Config.Handler = mux
	failing := newReceiver(t)
	failing.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	// A listener that accepts and closes: a connection error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	cases := []struct {
		url, reason string
		status      any
	}{
		{slow.srv.URL, "timeout", nil},
		{redirect.srv.URL + "/hook", "non_2xx", 302.0},
		{failing.srv.URL, "non_2xx", 503.0},
		{"https://" + ln.Addr().String() + "/", "connection_error", nil},
		{"http://" + ln.Addr().String() + "/", "invalid_url", nil},
	}
	for _, c := range cases {
		id, sec := h.register(org, c.url)
		for _, r := range []*receiver{slow, redirect, failing} {
			if strings.HasPrefix(c.url, r.srv.URL) {
				r.setSecret(sec)
			}
		}
		h.admin("POST", "/orgs/"+org+"/webhooks/"+id+"/ping", "")
		r := h.finished(org, id, 1)[0]
		if r["outcome"] != "failed" || r["reason"] != c.reason || r["statusCode"] != c.status || r["error"] == nil {
			t.Errorf("%s: %v", c.url, r)
		}
		if c.reason == "timeout" {
			if ms, _ := r["durationMs"].(float64); ms < 500 || ms > 5000 {
				t.Errorf("timeout after %vms, want about 500", r["durationMs"])
			}
		}
	}
	if followed.Load() != 0 {
		t.Fatal("a redirect was followed")
	}
}

// TestRestartSendsNothingTwiceAndSkipsNothing stops the dispatcher with
// deliveries in every state and starts it again on the same store and
// consumer group.
func TestRestartSendsNothingTwiceAndSkipsNothing(t *testing.T) {
	t.Parallel()
	e := stores(t)
	h := start(t, e, testConfig(e))
	org := h.newOrg()
	r := newReceiver(t)
	id, sec := h.register(org, r.srv.URL)
	r.setSecret(sec)

	const n = 40
	for i := range n / 2 {
		h.publish("reservations", fmt.Sprint("a", i), reservationCreated(org, fmt.Sprint("a", i)))
	}
	r.wait(1, 30*time.Second)
	h.stop() // mid-stream: some delivered, some pending or not consumed
	for i := range n / 2 {
		h.publish("reservations", fmt.Sprint("b", i), reservationCreated(org, fmt.Sprint("b", i)))
	}

	// What a crash leaves behind, written as the dispatcher writes it: a
	// delivery recorded as pending but never attempted, and one whose
	// attempt was under way when the process died.
	client, err := mongo.Connect(options.Client().ApplyURI(e.mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	db := client.Database(e.database)
	ctx := context.Background()
	body := func(id, ev string) []byte {
		return []byte(`{"id":"` + id + `","event":"` + ev + `","createdAt":"2026-01-01T00:00:00.000Z","data":{"reservationId":"` + ev + `"}}`)
	}
	old := time.Now().Add(-time.Hour)
	doc := func(rid, status string) bson.D {
		d := bson.D{{Key: "_id", Value: rid}, {Key: "deliveryId", Value: rid}, {Key: "endpointId", Value: id}, {Key: "orgId", Value: org},
			{Key: "event", Value: "reservation.created"}, {Key: "body", Value: body(rid, "reservation.created")},
			{Key: "createdAt", Value: old}, {Key: "recordedAt", Value: old}, {Key: "status", Value: status}}
		if status == "attempting" {
			d = append(d, bson.E{Key: "attemptedAt", Value: old})
		}
		return d
	}
	if _, err := db.Collection("pending").InsertOne(ctx, doc("crash-pending", "pending")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("pending").InsertOne(ctx, doc("crash-attempting", "pending")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("claims").InsertOne(ctx, bson.D{{Key: "_id", Value: "crash-attempting"}, {Key: "endpointId", Value: id}, {Key: "attemptedAt", Value: old}}); err != nil {
		t.Fatal(err)
	}

	h2 := start(t, e, testConfig(e))
	got := r.wait(n+1, 60*time.Second)
	time.Sleep(2 * h2.cfg.ScanInterval)
	got = r.received()
	seen := map[string]int{}
	events := map[string]int{}
	for _, d := range got {
		seen[d.ID]++
		events[fmt.Sprint(d.Data["reservationId"])]++
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("delivery %s received %d times", k, c)
		}
	}
	for i := range n / 2 {
		for _, p := range []string{"a", "b"} {
			if events[fmt.Sprint(p, i)] != 1 {
				t.Errorf("reservation %s%d delivered %d times", p, i, events[fmt.Sprint(p, i)])
			}
		}
	}
	if seen["crash-pending"] != 1 {
		t.Error("the delivery left pending by a crash was not attempted after the restart")
	}
	if seen["crash-attempting"] != 0 {
		t.Error("the delivery interrupted by a crash was sent again")
	}
	if len(got) != n+1 {
		t.Errorf("received %d, want %d", len(got), n+1)
	}
	var interrupted map[string]any
	eventually(t, 30*time.Second, "interrupted delivery recorded", func() bool {
		for _, row := range h2.deliveries(org, id) {
			if row["id"] == "crash-attempting" && row["outcome"] == "failed" {
				interrupted = row
				return true
			}
		}
		return false
	})
	if interrupted["reason"] != "interrupted" || !strings.Contains(fmt.Sprint(interrupted["error"]), "not sent again") {
		t.Errorf("interrupted row %v", interrupted)
	}
}
