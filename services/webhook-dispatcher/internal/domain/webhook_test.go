package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestDeliveryIDIsDeterministicPerEventAndEndpoint(t *testing.T) {
	t.Parallel()
	a := DeliveryID("evt-1", "wh_1")
	if a != DeliveryID("evt-1", "wh_1") {
		t.Fatal("same event and endpoint gave two ids")
	}
	seen := map[string]bool{a: true}
	for _, p := range [][2]string{{"evt-1", "wh_2"}, {"evt-2", "wh_1"}, {"evt-1wh", "_1"}, {"", "evt-1wh_1"}} {
		id := DeliveryID(p[0], p[1])
		if seen[id] {
			t.Fatalf("%v collides", p)
		}
		seen[id] = true
	}
	u, err := uuid.Parse(a)
	if err != nil || u.Version() != 5 {
		t.Fatalf("%s is not a version 5 UUID", a)
	}
}

func TestSignatureIsLowercaseHexHMACOfTheBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"x","event":"ping","createdAt":"2026-01-01T00:00:00.000Z","data":{"webhookId":"wh_1"}}`)
	m := hmac.New(sha256.New, []byte("whsec_k"))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := Sign("whsec_k", body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if !VerifySignature("whsec_k", body, want) || VerifySignature("whsec_other", body, want) ||
		VerifySignature("whsec_k", append(body, ' '), want) || VerifySignature("whsec_k", body, strings.ToUpper(want)) {
		t.Fatal("verification accepts what it must not, or refuses the right signature")
	}
}

func TestBodyIsTheDocumentedEnvelope(t *testing.T) {
	t.Parallel()
	ev := Event{SourceID: "e", OrgID: "o", Name: CalendarUpdated, OccurredAt: time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.FixedZone("x", 3600)),
		Data: CalendarData{PropertyID: "p1", From: "2026-04-01", To: "2026-04-30"}}
	b, err := ev.Body("d1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"d1","event":"calendar.updated","createdAt":"2026-03-04T04:06:07.891Z","data":{"propertyId":"p1","from":"2026-04-01","to":"2026-04-30"}}`
	if string(b) != want {
		t.Fatalf("body\n%s\nwant\n%s", b, want)
	}
}

func TestSecretsAreRandomAndLong(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if a == b || len(a) < 40 || !strings.HasPrefix(a, "whsec_") {
		t.Fatalf("secrets %q %q", a, b)
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://hooks.example.com/x", " https://example.com ", "http://127.0.0.1:8080/h", "https://[2606:4700::1]/"} {
		if _, err := ValidateURL(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "example.com/x", "ftp://example.com", "https://", "https://u:p@example.com/", "https://example.com/#x", "javascript:alert(1)", "https://" + strings.Repeat("a", 3000)} {
		if _, err := ValidateURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
