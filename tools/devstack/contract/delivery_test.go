package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

func TestCheckDelivery(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	sign := func(body string) string {
		m := hmac.New(sha256.New, []byte("whsec"))
		m.Write([]byte(body))
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	headers := func(event, id, body string) http.Header {
		h := http.Header{}
		h.Set("x-legacy-event", event)
		h.Set("x-legacy-delivery", id)
		h.Set("x-legacy-signature", sign(body))
		return h
	}
	good := map[string]string{
		"listing.updated":     `{"id":"d1","event":"listing.updated","createdAt":"2026-09-01T10:00:00Z","data":{"listingId":"l1"}}`,
		"listing.deleted":     `{"id":"d1","event":"listing.deleted","createdAt":"2026-09-01T10:00:00Z","data":{"listingId":"l1"}}`,
		"calendar.updated":    `{"id":"d1","event":"calendar.updated","createdAt":"2026-09-01T10:00:00Z","data":{"propertyId":"p1","from":"2027-01-01","to":"2027-02-01"}}`,
		"reservation.created": `{"id":"d1","event":"reservation.created","createdAt":"2026-09-01T10:00:00Z","data":{"reservationId":"r1","propertyId":"p1","status":"reserved"}}`,
		"reservation.updated": `{"id":"d1","event":"reservation.updated","createdAt":"2026-09-01T10:00:00Z","data":{"reservationId":"r1","propertyId":"p1","status":"confirmed","previousStatus":"reserved"}}`,
		"reservation.deleted": `{"id":"d1","event":"reservation.deleted","createdAt":"2026-09-01T10:00:00Z","data":{"reservationId":"r1","propertyId":"p1","status":"cancelled"}}`,
		"agreement.requested": `{"id":"d1","event":"agreement.requested","createdAt":"2026-09-01T10:00:00Z","data":{"reservationId":"r1","propertyId":"p1"}}`,
		"ping":                `{"id":"d1","event":"ping","createdAt":"2026-09-01T10:00:00Z","data":{"webhookId":"w1"}}`,
	}
	for event, body := range good {
		if p := c.CheckDelivery(headers(event, "d1", body), []byte(body), "whsec"); len(p) > 0 {
			t.Errorf("%s: %q", event, p)
		}
	}
	bad := []struct{ name, event, id, body, want string }{
		{"undeclared data field", "ping", "d1", `{"id":"d1","event":"ping","createdAt":"2026-09-01T10:00:00Z","data":{"webhookId":"w1","x":1}}`, "x"},
		{"missing previousStatus", "reservation.updated", "d1", `{"id":"d1","event":"reservation.updated","createdAt":"2026-09-01T10:00:00Z","data":{"reservationId":"r1","propertyId":"p1","status":"confirmed"}}`, "previousStatus"},
		{"header and body disagree", "ping", "d2", good["ping"], "x-legacy-delivery"},
		{"unknown event", "listing.created", "d1", `{"id":"d1","event":"listing.created","createdAt":"2026-09-01T10:00:00Z","data":{}}`, "not in the document"},
	}
	for _, tc := range bad {
		p := c.CheckDelivery(headers(tc.event, tc.id, tc.body), []byte(tc.body), "whsec")
		if !strings.Contains(strings.Join(p, "\n"), tc.want) {
			t.Errorf("%s: %q, want a failure naming %s", tc.name, p, tc.want)
		}
	}
	h := headers("ping", "d1", good["ping"])
	if p := c.CheckDelivery(h, []byte(good["ping"]), "other-secret"); len(p) != 1 || !strings.Contains(p[0], "signature") {
		t.Errorf("wrong secret: %q", p)
	}
}
