package service_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
)

func TestReservationLifecycle(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	other := h.org(500)
	lst := h.listing(org, "Canal Loft", 180000)
	tok, otherTok := h.token(org), h.token(other)

	// The listing arrives through its event; once it has, the booking
	// snapshots its prices.
	h.projected(lst, true)
	r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"`+lst+`","status":"reserved",
		"guest":{"firstName":"Jane","lastName":"Doe","email":"jane@example.com","company":null},
		"checkIn":"2025-03-01","checkOut":"2025-06-01","adults":2,"notes":"VIP",
		"onContract":{"name":"Acme GmbH","email":"hr@acme.example"}}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	res := obj(r.body["reservation"])
	id := res["id"].(string)
	pricing := obj(res["pricing"])
	if pricing["rentCents"] != 180000.0 || pricing["utilitiesCents"] != 15000.0 || pricing["monthlyCents"] != 200000.0 ||
		pricing["currency"] != "EUR" || pricing["rateBasis"] != "monthly" || pricing["depositCents"] != 360000.0 {
		t.Fatalf("pricing snapshot: %v", pricing)
	}
	prop := obj(res["property"])
	if prop["nickname"] != "Canal Loft" || prop["ownerName"] != "Anna Owner" || obj(prop["address"])["city"] != "Amsterdam" || prop["timezone"] != "Europe/Amsterdam" {
		t.Fatalf("property identity: %v", prop)
	}
	if _, ok := obj(prop["address"])["area"]; ok {
		t.Fatalf("identity address carries more than the spec's fields: %v", prop)
	}
	if res["nights"] != 92.0 || res["status"] != "reserved" || res["reservedAt"] == nil || res["inquiredAt"] != nil ||
		res["requiresContract"] != true || res["dashboardUrl"] != "https://dashboard.example/app/reservations/"+id ||
		res["notes"] != "VIP" || obj(res["guest"])["name"] != "Jane Doe" || obj(res["onContract"])["name"] != "Acme GmbH" {
		t.Fatalf("reservation: %s", r.raw)
	}
	if _, ok := res["staying"]; ok {
		t.Fatalf("staying present though never set: %s", r.raw)
	}
	reservedAt := res["reservedAt"].(string)

	// The public read: the spec's shape, without the operator's fields.
	pub := h.public(tok, "GET", "/reservations/"+id, "")
	if pub.status != 200 || obj(pub.body["reservation"])["id"] != id {
		t.Fatalf("public get: %d %s", pub.status, pub.raw)
	}
	if strings.Contains(pub.raw, `"notes"`) || strings.Contains(pub.raw, `"inquiryId"`) {
		t.Fatalf("public reservation shows operator fields: %s", pub.raw)
	}
	if r := h.public(otherTok, "GET", "/reservations/"+id, ""); r.status != 404 || r.body["error"] != "not_found" {
		t.Fatalf("foreign reservation: %d %s", r.status, r.raw)
	}
	if r := h.public(tok, "GET", "/reservations/res_nope", ""); r.status != 404 {
		t.Fatalf("unknown reservation: %d %s", r.status, r.raw)
	}

	// A later rate change on the listing never rewrites the snapshot.
	h.publishListing(org, lst, "Canal Loft Renamed", 250000)
	h.eventually("identity follows the new snapshot", func() bool {
		r := h.public(tok, "GET", "/reservations/"+id, "")
		return obj(obj(r.body["reservation"])["property"])["nickname"] == "Canal Loft Renamed"
	})
	pub = h.public(tok, "GET", "/reservations/"+id, "")
	if obj(obj(pub.body["reservation"])["pricing"])["rentCents"] != 180000.0 {
		t.Fatalf("pricing rewritten by a rate change: %s", pub.raw)
	}

	// Status rules, stamps and updatedAt.
	updated := obj(pub.body["reservation"])["updatedAt"].(string)
	time.Sleep(5 * time.Millisecond)
	r = h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"status":"confirmed","invoicePaid":true}`)
	res = obj(r.body["reservation"])
	if r.status != 200 || res["status"] != "confirmed" || res["confirmedAt"] == nil || res["reservedAt"] != reservedAt || res["invoicePaid"] != true {
		t.Fatalf("confirm: %d %s", r.status, r.raw)
	}
	if res["updatedAt"].(string) <= updated {
		t.Fatalf("updatedAt not bumped: %v after %v", res["updatedAt"], updated)
	}
	confirmedAt := res["confirmedAt"]
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"status":"reserved"}`); r.status != 409 || r.body["error"] != "conflict" {
		t.Fatalf("confirmed → reserved: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"status":"booked"}`); r.status != 400 || !strings.Contains(r.raw, "status") {
		t.Fatalf("unknown status: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"checkOut":"2025-02-01"}`); r.status != 400 || !strings.Contains(r.raw, "checkOut") {
		t.Fatalf("checkOut before checkIn: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"adults":"two"}`); r.status != 400 || !strings.Contains(r.raw, "adults") {
		t.Fatalf("adults not an integer: %d %s", r.status, r.raw)
	}
	r = h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"status":"cancelled"}`)
	res = obj(r.body["reservation"])
	if r.status != 200 || res["cancelledAt"] == nil || res["confirmedAt"] != confirmedAt || res["reservedAt"] != reservedAt {
		t.Fatalf("cancel keeps earlier stamps: %d %s", r.status, r.raw)
	}
	// The cancelled booking released its days.
	if r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"`+lst+`","status":"confirmed","checkIn":"2025-03-15","checkOut":"2025-04-15"}`); r.status != 201 {
		t.Fatalf("days not released by the cancellation: %d %s", r.status, r.raw)
	}

	// Admin errors: unknown org and unknown booking, bad bodies.
	if r := h.admin("POST", "/orgs/org_unknown/reservations", `{"propertyId":"x","checkIn":"2025-01-01","checkOut":"2025-01-02"}`); r.status != 404 || r.body["error"] != "not_found" {
		t.Fatalf("unknown org: %d %s", r.status, r.raw)
	}
	// An unknown org answers 404 before any other error, as if checked first.
	if r := h.admin("PATCH", "/orgs/org_unknown/reservations/"+id, `{"propertyId":"x"}`); r.status != 404 || !strings.Contains(r.body["message"].(string), "org_unknown") {
		t.Fatalf("PATCH in an unknown org with a bad body: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"propertyId":"x"}`); r.status != 400 || !strings.Contains(r.body["message"].(string), "propertyId") {
		t.Fatalf("PATCH of propertyId: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/res_nope", `{"notes":"x"}`); r.status != 404 {
		t.Fatalf("unknown reservation: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+other+"/reservations/"+id, `{"notes":"x"}`); r.status != 404 {
		t.Fatalf("reservation of another org: %d %s", r.status, r.raw)
	}
	for body, field := range map[string]string{
		`{"checkIn":"2025-01-01","checkOut":"2025-01-02"}`:                                              "propertyId",
		`{"propertyId":"p","checkIn":"2025-01-01"}`:                                                     "checkOut",
		`{"propertyId":"p","checkIn":"2025-13-01","checkOut":"2025-01-02"}`:                             "checkIn",
		`{"propertyId":"p","checkIn":"2025-01-01","checkOut":"2025-01-02","guest":"x"}`:                 "guest",
		`{"propertyId":"p","checkIn":"2025-01-01","checkOut":"2025-01-02","pricing":{"rentCents":1.5}}`: "pricing.rentCents",
		`{"propertyId":"p","checkIn":"2025-01-01","checkOut":"2025-01-02","status":"cancelled"}`:        "status",
		`[1]`: "JSON object",
	} {
		if r := h.admin("POST", "/orgs/"+org+"/reservations", body); r.status != 400 || !strings.Contains(r.body["message"].(string), field) {
			t.Errorf("%s: %d %s, want 400 naming %s", body, r.status, r.raw, field)
		}
	}
	if r := h.do("POST", "/admin/v1/orgs/"+org+"/reservations", `{}`); r.status != 401 {
		t.Fatalf("no admin token: %d", r.status)
	}

	// Deletion: gone from the public API.
	if r := h.admin("DELETE", "/orgs/"+org+"/reservations/"+id, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if r := h.public(tok, "GET", "/reservations/"+id, ""); r.status != 404 {
		t.Fatalf("deleted reservation still readable: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/reservations/"+id, ""); r.status != 404 {
		t.Fatalf("second delete: %d %s", r.status, r.raw)
	}

	// Unmatched paths under the service's prefixes answer the JSON 404.
	for _, p := range []string{"/api/v1/reservations/a/b/c/d", "/api/v1/inquiries/x", "/api/v1/reservations/" + id + "/nope"} {
		if r := h.do("GET", p, "", "Authorization", "Bearer "+tok); r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("GET %s: %d %s", p, r.status, r.raw)
		}
	}
	if r := h.do("DELETE", "/api/v1/reservations/"+id, "", "Authorization", "Bearer "+tok); r.status != 404 || r.body["error"] != "not_found" {
		t.Errorf("unsupported method: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", "/api/v1/reservations", ""); r.status != 401 || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("no token: %d %v", r.status, r.header)
	}

	// Every change went out as an event carrying the full state.
	msgs := h.events("reservations", 5)
	var types []string
	for _, m := range msgs {
		var ev eventsv1.ReservationEvent
		if err := proto.Unmarshal(m.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.GetReservation().GetId() != id {
			continue
		}
		typ := ev.GetEnvelope().GetType()
		if typ == "reservation.updated" {
			typ += "/" + ev.GetPreviousStatus().String()
		}
		types = append(types, typ)
		if string(m.Key) != id || ev.GetReservation().GetGuest().GetName() != "Jane Doe" {
			t.Errorf("event %s: key %s, state %v", typ, m.Key, ev.GetReservation())
		}
	}
	want := "reservation.created reservation.updated/RESERVATION_STATUS_RESERVED reservation.updated/RESERVATION_STATUS_CONFIRMED reservation.deleted"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v, want %s", types, want)
	}
}

func TestNoOverlapUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Every stay overlaps every other: they all contain 2025-05-10.
			in := fmt.Sprintf("2025-05-%02d", 1+i%9)
			out := fmt.Sprintf("2025-05-%02d", 11+i%7)
			codes[i] = h.admin("POST", "/orgs/"+org+"/reservations",
				`{"propertyId":"prop_race","status":"reserved","checkIn":"`+in+`","checkOut":"`+out+`"}`).status
		})
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		switch c {
		case 201:
			created++
		case 409:
		default:
			t.Errorf("unexpected status %d", c)
		}
	}
	if created != 1 {
		t.Fatalf("%d of %d overlapping creates succeeded, want exactly 1 (%v)", created, n, codes)
	}
	// Handover day, inquiries and cancelled bookings never block.
	for _, b := range []string{
		`{"propertyId":"prop_race","status":"confirmed","checkIn":"2025-05-20","checkOut":"2025-06-20"}`,
		`{"propertyId":"prop_race","status":"inquiry","checkIn":"2025-05-05","checkOut":"2025-05-25"}`,
		`{"propertyId":"prop_race","checkIn":"2025-05-05","checkOut":"2025-05-25"}`,
		`{"propertyId":"prop_other","status":"reserved","checkIn":"2025-05-05","checkOut":"2025-05-25"}`,
	} {
		if r := h.admin("POST", "/orgs/"+org+"/reservations", b); r.status != 201 {
			t.Errorf("%s: %d %s", b, r.status, r.raw)
		}
	}
	// Turning an overlapping inquiry into a held booking is refused.
	r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"prop_race","status":"inquiry","checkIn":"2025-05-01","checkOut":"2025-05-31"}`)
	id := obj(r.body["reservation"])["id"].(string)
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"status":"reserved"}`); r.status != 409 {
		t.Fatalf("overlapping inquiry reserved: %d %s", r.status, r.raw)
	}
	if r := h.admin("PATCH", "/orgs/"+org+"/reservations/"+id, `{"checkIn":"2025-07-01","checkOut":"2025-08-01","status":"reserved"}`); r.status != 200 {
		t.Fatalf("moved and reserved: %d %s", r.status, r.raw)
	}
}

func TestAgreementEventsConfirmReservedBookings(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	tok := h.token(org)
	mk := func(status, in, out string) string {
		r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"prop_a","status":"`+status+`","checkIn":"`+in+`","checkOut":"`+out+`"}`)
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		return obj(r.body["reservation"])["id"].(string)
	}
	reserved := mk("reserved", "2025-01-01", "2025-02-01")
	sentOnly := mk("reserved", "2025-03-01", "2025-04-01")
	inquiry := mk("inquiry", "2025-05-01", "2025-06-01")
	agreement := func(resID string, version int64, status eventsv1.AgreementStatus, current bool) {
		now := timestamppb.Now()
		a := &eventsv1.Agreement{Id: "agr_" + resID, OrgId: org, ReservationId: resID, Version: 1,
			Provider: eventsv1.AgreementProvider_AGREEMENT_PROVIDER_QUARTERS, Status: status, TemplateName: str("standard"),
			SentAt: now, CreatedAt: now, UpdatedAt: now,
			Signers: []*eventsv1.Signer{{Role: "lessee", Name: "Jane", Email: "jane@example.com", Status: "pending", SigningUrl: str("https://sign.example/secret")}}}
		if status == eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED {
			a.CompletedAt = now
		}
		h.publish("agreements", resID, &eventsv1.AgreementEvent{Envelope: envelope("agreement.updated", org, resID, version), Agreement: a, Current: current})
	}
	agreement(reserved, 1, eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT, true)
	agreement(reserved, 2, eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED, true)
	agreement(sentOnly, 1, eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT, true)
	// A version that is no longer current completes late: the booking
	// keeps its current agreement and stays reserved.
	agreement(sentOnly, 2, eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED, false)
	agreement(inquiry, 1, eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED, true)
	// A stale redelivery of the first report changes nothing.
	agreement(reserved, 1, eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT, true)

	var res map[string]any
	h.eventually("reserved booking confirmed", func() bool {
		res = obj(h.public(tok, "GET", "/reservations/"+reserved, "").body["reservation"])
		return res["status"] == "confirmed"
	})
	if res["confirmedAt"] == nil || res["reservedAt"] == nil {
		t.Fatalf("stamps: %v", res)
	}
	h.eventually("agreement shown", func() bool {
		res = obj(h.public(tok, "GET", "/reservations/"+reserved, "").body["reservation"])
		return obj(res["agreement"])["status"] == "completed"
	})
	a := obj(res["agreement"])
	signer := obj(a["signers"].([]any)[0])
	if a["provider"] != "quarters" || a["version"] != 1.0 || signer["signingUrl"] != nil || signer["role"] != "lessee" {
		t.Fatalf("agreement: %v", a)
	}
	h.eventually("sent agreement shown", func() bool {
		res = obj(h.public(tok, "GET", "/reservations/"+sentOnly, "").body["reservation"])
		return res["agreement"] != nil
	})
	if res["status"] != "reserved" || res["confirmedAt"] != nil || obj(res["agreement"])["status"] != "sent" {
		t.Fatalf("a sent agreement, or a late report on an earlier one, changed the booking: %v", res)
	}
	res = obj(h.public(tok, "GET", "/reservations/"+inquiry, "").body["reservation"])
	if res["status"] != "inquiry" {
		t.Fatalf("a completed agreement changed an inquiry: %v", res)
	}
	// The confirmation went out as reservation.updated from reserved.
	found := false
	for _, m := range h.events("reservations", 4) {
		var ev eventsv1.ReservationEvent
		_ = proto.Unmarshal(m.Value, &ev)
		if ev.GetReservation().GetId() == reserved && ev.GetEnvelope().GetType() == "reservation.updated" &&
			ev.GetPreviousStatus() == eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED &&
			ev.GetReservation().GetStatus() == eventsv1.ReservationStatus_RESERVATION_STATUS_CONFIRMED {
			found = true
		}
	}
	if !found {
		t.Fatal("no reservation.updated for the confirmation")
	}
}

// A booking shows its current agreement, so an agreement change moves the
// booking's updatedAt and an updatedSince read finds it; the same agreement
// delivered again moves nothing.
func TestAgreementChangeMovesUpdatedAt(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	tok := h.token(org)
	r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"prop_a","status":"inquiry","checkIn":"2025-07-01","checkOut":"2025-08-01"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	created := obj(r.body["reservation"])
	id := created["id"].(string)
	before, _ := time.Parse(time.RFC3339Nano, created["updatedAt"].(string))
	time.Sleep(5 * time.Millisecond)
	changed := timestamppb.Now()
	ev := &eventsv1.AgreementEvent{Envelope: envelope("agreement.updated", org, id, 1), Current: true,
		Agreement: &eventsv1.Agreement{Id: "agr_" + id, OrgId: org, ReservationId: id, Version: 1,
			Provider: eventsv1.AgreementProvider_AGREEMENT_PROVIDER_EXTERNAL, ExternalId: str("env-1"),
			Status: eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT, SentAt: changed, CreatedAt: changed, UpdatedAt: changed}}
	h.publish("agreements", id, ev)
	// The agreement is stored, then the booking touched: a read between the
	// two shows the agreement with the earlier updatedAt.
	var res map[string]any
	h.eventually("agreement shown and updatedAt moved", func() bool {
		res = obj(h.public(tok, "GET", "/reservations/"+id, "").body["reservation"])
		after, _ := time.Parse(time.RFC3339Nano, res["updatedAt"].(string))
		return res["agreement"] != nil && after.After(before)
	})
	since := before.Add(time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
	list := h.public(tok, "GET", "/reservations?updatedSince="+since, "")
	if list.status != 200 || list.body["total"] != 1.0 {
		t.Fatalf("updatedSince=%s: %d %s, want the booking", since, list.status, list.raw)
	}
	// The same agreement again (a redelivery) leaves updatedAt alone.
	ev.Envelope = envelope("agreement.updated", org, id, 2)
	h.publish("agreements", id, ev)
	time.Sleep(500 * time.Millisecond)
	again := obj(h.public(tok, "GET", "/reservations/"+id, "").body["reservation"])
	if again["updatedAt"] != res["updatedAt"] {
		t.Fatalf("an unchanged agreement moved updatedAt from %v to %v", res["updatedAt"], again["updatedAt"])
	}
}
