package service_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
)

func TestAdminWebhooks(t *testing.T) {
	t.Parallel()
	e := stores(t)
	h := start(t, e, testConfig(e))
	org := h.newOrg()
	other := h.newOrg()

	// Unknown org: 404 on every route.
	for _, rt := range [][2]string{
		{"POST", "/orgs/org_nope/webhooks"}, {"GET", "/orgs/org_nope/webhooks"}, {"DELETE", "/orgs/org_nope/webhooks/wh_x"},
		{"POST", "/orgs/org_nope/webhooks/wh_x/ping"}, {"GET", "/orgs/org_nope/webhooks/wh_x/deliveries"},
		{"POST", "/orgs/org_nope/webhooks/wh_x/deliveries/d/redeliver"},
	} {
		if r := h.admin(rt[0], rt[1], `{"url":"https://example.com/h"}`); r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("%s %s: %d %s", rt[0], rt[1], r.status, r.raw)
		}
	}
	if r := h.do("GET", "/admin/v1/orgs/"+org+"/webhooks", ""); r.status != 401 || r.body["error"] != "unauthorized" {
		t.Errorf("no admin token: %d %s", r.status, r.raw)
	}
	for _, bad := range []string{`{}`, `{"url":""}`, `{"url":"ftp://x"}`, `{"url":"not a url"}`, `{"url":5}`, `nope`} {
		if r := h.admin("POST", "/orgs/"+org+"/webhooks", bad); r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(fmt.Sprint(r.body["message"]), "url") && bad != `nope` {
			t.Errorf("register %s: %d %s", bad, r.status, r.raw)
		}
	}

	r := h.admin("POST", "/orgs/"+org+"/webhooks", `{"url":"https://hooks.example.com/quarters"}`)
	w := obj(r.body["webhook"])
	if r.status != 201 || w["id"] == "" || w["url"] != "https://hooks.example.com/quarters" || len(fmt.Sprint(w["secret"])) < 40 ||
		!strings.HasSuffix(fmt.Sprint(w["createdAt"]), "Z") {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	id, secret := w["id"].(string), w["secret"].(string)
	id2, secret2 := h.register(org, "https://second.example.com/")
	if secret2 == secret {
		t.Fatal("two webhooks share a secret")
	}

	r = h.admin("GET", "/orgs/"+org+"/webhooks", "")
	hooks := list(r.body["webhooks"])
	if r.status != 200 || len(hooks) != 2 || obj(hooks[0])["id"] != id || obj(hooks[0])["secret"] != secret || obj(hooks[1])["id"] != id2 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	// Many registered within a millisecond are listed as registered.
	var want []string
	for i := range 8 {
		id, _ := h.register(other, fmt.Sprintf("https://burst%d.example.com/", i))
		want = append(want, id)
	}
	var got []string
	for _, w := range list(h.admin("GET", "/orgs/"+other+"/webhooks", "").body["webhooks"]) {
		got = append(got, obj(w)["id"].(string))
		h.admin("DELETE", "/orgs/"+other+"/webhooks/"+obj(w)["id"].(string), "")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("list order:\n got %v\nwant %v", got, want)
	}
	if r := h.admin("GET", "/orgs/"+other+"/webhooks", ""); r.raw != `{"webhooks":[]}` {
		t.Fatalf("other org's list: %s", r.raw)
	}
	// Another org's webhook is not found through this one.
	for _, rt := range [][2]string{{"DELETE", "/webhooks/" + id}, {"POST", "/webhooks/" + id + "/ping"}, {"GET", "/webhooks/" + id + "/deliveries"}} {
		if r := h.admin(rt[0], "/orgs/"+other+rt[1], ""); r.status != 404 {
			t.Errorf("%s via another org: %d %s", rt[1], r.status, r.raw)
		}
	}
	for _, q := range []string{"0", "101", "x", "-1", "1.5"} {
		if r := h.admin("GET", "/orgs/"+org+"/webhooks/"+id+"/deliveries?limit="+q, ""); r.status != 400 || !strings.Contains(r.raw, "limit") {
			t.Errorf("limit=%s: %d %s", q, r.status, r.raw)
		}
	}
	if r := h.admin("GET", "/orgs/"+org+"/webhooks/"+id+"/deliveries", ""); r.status != 200 || r.raw != `{"deliveries":[]}` {
		t.Errorf("no deliveries yet: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/"+org+"/webhooks/"+id+"/deliveries/nope/redeliver", ""); r.status != 404 {
		t.Errorf("redeliver unknown: %d %s", r.status, r.raw)
	}
	if r := h.admin("GET", "/orgs/"+org+"/webhooks/"+id+"/nope", ""); r.status != 404 || r.body["error"] != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/webhooks/"+id, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/webhooks/"+id, ""); r.status != 404 {
		t.Fatalf("delete again: %d %s", r.status, r.raw)
	}
	if r := h.admin("GET", "/orgs/"+org+"/webhooks", ""); len(list(r.body["webhooks"])) != 1 {
		t.Fatalf("after delete: %s", r.raw)
	}
}

// events publishes one domain event of each kind for org and returns the
// webhook each should produce (event name and data), in order.
func (h *harness) everyEvent(org string) []want {
	now := time.Now()
	h.publish("listings", "p1",
		&eventsv1.ListingEvent{Envelope: envelope("listing.updated", org, "p1", 1, now), Listing: &eventsv1.Listing{Id: "p1", OrgId: org}},
		&eventsv1.ListingEvent{Envelope: envelope("listing.deleted", org, "p1", 2, now), Listing: &eventsv1.Listing{Id: "p1", OrgId: org}})
	h.publish("calendars", "p1", &eventsv1.CalendarEvent{Envelope: envelope("calendar.updated", org, "p1", 3, now),
		Calendar: &eventsv1.Calendar{PropertyId: "p1"}, ChangedFrom: "2026-07-01", ChangedTo: "2026-07-31"})
	h.publish("reservations", "r1",
		&eventsv1.ReservationEvent{Envelope: envelope("reservation.created", org, "r1", 1, now),
			Reservation: &eventsv1.Reservation{Id: "r1", OrgId: org, PropertyId: "p1", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED}},
		&eventsv1.ReservationEvent{Envelope: envelope("reservation.updated", org, "r1", 2, now),
			Reservation:    &eventsv1.Reservation{Id: "r1", OrgId: org, PropertyId: "p1", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_CONFIRMED},
			PreviousStatus: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED},
		&eventsv1.ReservationEvent{Envelope: envelope("reservation.deleted", org, "r1", 3, now),
			Reservation: &eventsv1.Reservation{Id: "r1", OrgId: org, PropertyId: "p1", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_CANCELLED}})
	h.publish("agreements", "r1",
		&eventsv1.AgreementEvent{Envelope: envelope("agreement.updated", org, "r1", 1, now), Agreement: &eventsv1.Agreement{Id: "a1", ReservationId: "r1"}},
		&eventsv1.AgreementEvent{Envelope: envelope("agreement.requested", org, "r1", 2, now), ContractRequest: &eventsv1.ContractRequest{ReservationId: "r1", PropertyId: "p1"}})
	h.publish("orgs", org, &eventsv1.OrgEvent{Envelope: envelope("org.updated", org, org, 2, now), Org: &eventsv1.Org{Id: org}})
	return []want{
		{"listing.updated", `{"listingId":"p1"}`},
		{"listing.deleted", `{"listingId":"p1"}`},
		{"calendar.updated", `{"propertyId":"p1","from":"2026-07-01","to":"2026-07-31"}`},
		{"reservation.created", `{"reservationId":"r1","propertyId":"p1","status":"reserved"}`},
		{"reservation.updated", `{"reservationId":"r1","propertyId":"p1","status":"confirmed","previousStatus":"reserved"}`},
		{"reservation.deleted", `{"reservationId":"r1","propertyId":"p1","status":"cancelled"}`},
		{"agreement.requested", `{"reservationId":"r1","propertyId":"p1"}`},
	}
}

type want struct{ event, data string }

func dataOf(body []byte) string {
	i := bytes.Index(body, []byte(`"data":`))
	return strings.TrimSuffix(string(body[i+len(`"data":`):]), "}")
}

func TestEveryEventReachesEveryEndpointOnceSigned(t *testing.T) {
	t.Parallel()
	e := stores(t)
	h := start(t, e, testConfig(e))
	org, otherOrg := h.newOrg(), h.newOrg()
	a, b, stranger := newReceiver(t), newReceiver(t), newReceiver(t)
	idA, secA := h.register(org, a.srv.URL+"/a")
	a.setSecret(secA)
	idB, secB := h.register(org, b.srv.URL+"/b")
	b.setSecret(secB)
	_, secS := h.register(otherOrg, stranger.srv.URL)
	stranger.setSecret(secS)

	wants := h.everyEvent(org)
	for _, r := range []*receiver{a, b} {
		got := r.wait(len(wants), 60*time.Second)
		byEvent := map[string][]delivered{}
		for _, d := range got {
			byEvent[d.Event] = append(byEvent[d.Event], d)
		}
		for _, w := range wants {
			ds := byEvent[w.event]
			if len(ds) != 1 {
				t.Errorf("%s received %d times", w.event, len(ds))
				continue
			}
			if got := dataOf(ds[0].Body); got != w.data {
				t.Errorf("%s data %s, want %s", w.event, got, w.data)
			}
		}
	}
	if a.received()[0].ID == b.received()[0].ID {
		t.Error("two endpoints share a delivery id")
	}

	// The deliveries are listed newest first with their outcomes.
	rows := h.finished(org, idA, len(wants))
	if len(rows) != len(wants) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r["outcome"] != "delivered" || r["statusCode"] != 204.0 || r["error"] != nil || r["attemptedAt"] == nil || r["durationMs"] == nil {
			t.Errorf("row %v", r)
		}
		if i > 0 && fmt.Sprint(r["attemptedAt"]) > fmt.Sprint(rows[i-1]["attemptedAt"]) {
			t.Errorf("rows not newest first: %v after %v", r["attemptedAt"], rows[i-1]["attemptedAt"])
		}
	}
	if r := h.admin("GET", "/orgs/"+org+"/webhooks/"+idA+"/deliveries?limit=2", ""); len(list(r.body["deliveries"])) != 2 {
		t.Errorf("limit=2: %s", r.raw)
	}

	// The same domain events read again (a rebalance, a restart) send
	// nothing new.
	before := len(a.received())
	wants2 := h.everyEvent(org) // new event ids: delivered again
	a.wait(before+len(wants2), 60*time.Second)

	// Ping and redeliver.
	if r := h.admin("POST", "/orgs/"+org+"/webhooks/"+idB+"/ping", ""); r.status != 202 {
		t.Fatalf("ping: %d %s", r.status, r.raw)
	}
	got := b.wait(2*len(wants)+1, 30*time.Second)
	ping := got[len(got)-1]
	if ping.Event != "ping" || dataOf(ping.Body) != `{"webhookId":"`+idB+`"}` {
		t.Fatalf("ping %s", ping.Body)
	}
	first := b.received()[0]
	if r := h.admin("POST", "/orgs/"+org+"/webhooks/"+idB+"/deliveries/"+first.ID+"/redeliver", ""); r.status != 202 {
		t.Fatalf("redeliver: %d %s", r.status, r.raw)
	}
	got = b.wait(2*len(wants)+2, 30*time.Second)
	again := got[len(got)-1]
	if again.ID != first.ID || !bytes.Equal(again.Body, first.Body) || again.Header.Get("x-legacy-signature") != first.Header.Get("x-legacy-signature") {
		t.Fatalf("redelivery differs:\n%s\n%s", first.Body, again.Body)
	}
	rows = h.finished(org, idB, 2*len(wants)+2)
	if rows[0]["id"] != first.ID || rows[0]["redelivery"] != true || rows[1]["event"] != "ping" {
		t.Fatalf("newest rows: %v / %v", rows[0], rows[1])
	}
	n := 0
	for _, r := range rows {
		if r["id"] == first.ID {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d rows for the redelivered id, want 2", n)
	}
	if len(stranger.received()) != 0 {
		t.Fatalf("another org's endpoint got %d deliveries", len(stranger.received()))
	}
}

func TestReadingAnEventAgainSendsNothingTwice(t *testing.T) {
	t.Parallel()
	e := stores(t)
	h := start(t, e, testConfig(e))
	org := h.newOrg()
	r := newReceiver(t)
	_, sec := h.register(org, r.srv.URL)
	r.setSecret(sec)
	ev := &eventsv1.ReservationEvent{Envelope: envelope("reservation.created", org, "r9", 1, time.Now()),
		Reservation: &eventsv1.Reservation{Id: "r9", PropertyId: "p9", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_INQUIRY}}
	// The relay publishes again after a crash; a consumer rebalance reads
	// it again: the same event id, several times.
	for range 3 {
		h.publish("reservations", "r9", ev)
	}
	// A later event of the same reservation sits behind the copies on the
	// same partition: once it arrives, every copy has been handled.
	marker := &eventsv1.ReservationEvent{Envelope: envelope("reservation.updated", org, "r9", 2, time.Now()),
		Reservation:    &eventsv1.Reservation{Id: "r9", PropertyId: "p9", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED},
		PreviousStatus: eventsv1.ReservationStatus_RESERVATION_STATUS_INQUIRY}
	h.publish("reservations", "r9", ev, marker)
	r.wait(2, 60*time.Second)
	// Give a stray copy time to show up: two pending scans.
	time.Sleep(2 * h.cfg.ScanInterval)
	got := r.received()
	if len(got) != 2 || got[0].Event != "reservation.created" || got[1].Event != "reservation.updated" {
		t.Fatalf("received %d deliveries, want created then updated once each", len(got))
	}
}
