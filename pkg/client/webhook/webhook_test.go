package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const secret = "whsec_test"

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"d","event":"ping","createdAt":"2026-01-01T00:00:00.000Z","data":{"webhookId":"w"}}`)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	good := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if Sign(secret, body) != good {
		t.Fatalf("Sign = %s, want %s", Sign(secret, body), good)
	}
	flipped := []byte(good)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name   string
		secret string
		body   []byte
		header string
		want   error
	}{
		{"valid", secret, body, good, nil},
		{"valid upper-case hex", secret, body, "sha256=" + strings.ToUpper(good[7:]), nil},
		{"no secret", "", body, good, ErrNoSecret},
		{"no header", secret, body, "", ErrNoSignature},
		{"other secret", "whsec_other", body, good, ErrBadSignature},
		{"body changed by one byte", secret, append(bytes.Clone(body[:len(body)-1]), ' '), good, ErrBadSignature},
		{"re-serialised body", secret, []byte(strings.ReplaceAll(string(body), ",", ", ")), good, ErrBadSignature},
		{"no prefix", secret, body, good[7:], ErrBadSignature},
		{"other algorithm", secret, body, "sha1=" + good[7:], ErrBadSignature},
		{"truncated", secret, body, good[:len(good)-2], ErrBadSignature},
		{"not hex", secret, body, "sha256=" + strings.Repeat("z", 64), ErrBadSignature},
		{"last bit flipped", secret, body, string(flipped), ErrBadSignature},
	} {
		if got := Verify(tc.secret, tc.body, tc.header); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseTypedData(t *testing.T) {
	t.Parallel()
	at := "2026-03-04T05:06:07.089Z"
	for _, tc := range []struct {
		event, data string
		want        Data
	}{
		{ListingUpdated, `{"listingId":"l1"}`, ListingData{ListingID: "l1"}},
		{ListingDeleted, `{"listingId":"l2"}`, ListingData{ListingID: "l2"}},
		{CalendarUpdated, `{"propertyId":"p","from":"2026-01-01","to":"2026-02-01"}`, CalendarData{PropertyID: "p", From: "2026-01-01", To: "2026-02-01"}},
		{ReservationCreated, `{"reservationId":"r","propertyId":"p","status":"inquiry"}`, ReservationData{ReservationID: "r", PropertyID: "p", Status: "inquiry"}},
		{ReservationDeleted, `{"reservationId":"r","propertyId":"p","status":"cancelled"}`, ReservationData{ReservationID: "r", PropertyID: "p", Status: "cancelled"}},
		{ReservationUpdated, `{"reservationId":"r","propertyId":"p","status":"confirmed","previousStatus":"reserved"}`, ReservationUpdatedData{ReservationID: "r", PropertyID: "p", Status: "confirmed", PreviousStatus: "reserved"}},
		{AgreementRequested, `{"reservationId":"r","propertyId":"p"}`, AgreementRequestedData{ReservationID: "r", PropertyID: "p"}},
		{Ping, `{"webhookId":"wh"}`, PingData{WebhookID: "wh"}},
		{"listing.renamed", `{"listingId":"l"}`, UnknownData{Raw: []byte(`{"listingId":"l"}`)}},
	} {
		body := fmt.Sprintf(`{"id":"d1","event":%q,"createdAt":%q,"data":%s}`, tc.event, at, tc.data)
		ev, err := Parse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", tc.event, err)
		}
		if ev.ID != "d1" || ev.Name != tc.event || !ev.CreatedAt.Equal(time.Date(2026, 3, 4, 5, 6, 7, 89e6, time.UTC)) || string(ev.Raw) != body {
			t.Errorf("%s: envelope %+v", tc.event, ev)
		}
		if u, ok := tc.want.(UnknownData); ok {
			if got, ok := ev.Data.(UnknownData); !ok || string(got.Raw) != string(u.Raw) {
				t.Errorf("%s: data %#v", tc.event, ev.Data)
			}
			continue
		}
		if ev.Data != tc.want {
			t.Errorf("%s: data %#v, want %#v", tc.event, ev.Data, tc.want)
		}
	}
	for _, bad := range []string{`not json`, `{"event":"ping","data":{}}`, `{"id":"d","event":"ping"}`, `{"id":"d","event":"ping","data":"x"}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

type delivery struct {
	body, id, event, sig string
}

func signed(id, event, data string) delivery {
	body := fmt.Sprintf(`{"id":%q,"event":%q,"createdAt":"2026-01-01T00:00:00.000Z","data":%s}`, id, event, data)
	return delivery{body: body, id: id, event: event, sig: Sign(secret, []byte(body))}
}

func post(t *testing.T, h http.Handler, prefix string, d delivery) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(d.body))
	req.Header.Set("Content-Type", "application/json")
	if d.id != "" {
		req.Header.Set("x-"+prefix+"-delivery", d.id)
	}
	if d.event != "" {
		req.Header.Set("x-"+prefix+"-event", d.event)
	}
	if d.sig != "" {
		req.Header.Set("x-"+prefix+"-signature", d.sig)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestHandlerAnswers(t *testing.T) {
	t.Parallel()
	var got []Event
	var mu sync.Mutex
	h := Handler(secret, func(_ context.Context, ev Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	}, WithMaxBodyBytes(512))

	ok := signed("d1", ListingUpdated, `{"listingId":"l1"}`)
	if c := post(t, h, "legacy", ok); c != http.StatusNoContent {
		t.Fatalf("valid delivery: %d", c)
	}
	if len(got) != 1 || got[0].Data != (ListingData{ListingID: "l1"}) {
		t.Fatalf("handled %+v", got)
	}

	tampered := ok
	tampered.body = strings.Replace(ok.body, "l1", "l9", 1)
	tampered.id = "d1x"
	tampered.body = strings.Replace(tampered.body, `"d1"`, `"d1x"`, 1)
	noSig := signed("d2", Ping, `{"webhookId":"w"}`)
	noSig.sig = ""
	otherID := signed("d3", Ping, `{"webhookId":"w"}`)
	otherID.id = "d4"
	otherEvent := signed("d5", Ping, `{"webhookId":"w"}`)
	otherEvent.event = ListingUpdated
	big := signed("d6", Ping, `{"webhookId":"`+strings.Repeat("w", 600)+`"}`)
	notDelivery := delivery{body: `{"hello":"world"}`, sig: Sign(secret, []byte(`{"hello":"world"}`))}
	for name, tc := range map[string]struct {
		d    delivery
		want int
	}{
		"tampered body":    {tampered, http.StatusUnauthorized},
		"no signature":     {noSig, http.StatusUnauthorized},
		"other id header":  {otherID, http.StatusBadRequest},
		"other event":      {otherEvent, http.StatusBadRequest},
		"too large":        {big, http.StatusRequestEntityTooLarge},
		"not a delivery":   {notDelivery, http.StatusBadRequest},
		"duplicate of one": {ok, http.StatusOK},
	} {
		if c := post(t, h, "legacy", tc.d); c != tc.want {
			t.Errorf("%s: %d, want %d", name, c, tc.want)
		}
	}
	if len(got) != 1 {
		t.Fatalf("rejected deliveries reached the function: %+v", got)
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hook", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
		t.Errorf("GET: %d %v", rec.Code, rec.Header())
	}

	unconfigured := Handler("", func(context.Context, Event) error { t.Error("called without a secret"); return nil })
	if c := post(t, unconfigured, "legacy", ok); c != http.StatusInternalServerError {
		t.Errorf("empty secret: %d", c)
	}
}

func TestHandlerHeaderPrefix(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	h := Handler(secret, func(context.Context, Event) error { n.Add(1); return nil }, WithHeaderPrefix("quarters"))
	d := signed("d1", Ping, `{"webhookId":"w"}`)
	if c := post(t, h, "legacy", d); c != http.StatusUnauthorized {
		t.Errorf("old header names: %d", c)
	}
	if c := post(t, h, "quarters", d); c != http.StatusNoContent || n.Load() != 1 {
		t.Errorf("new header names: %d, %d calls", c, n.Load())
	}
}

// A failed handling releases the id: the redelivery is handled again.
func TestHandlerReleasesOnFailure(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	h := Handler(secret, func(context.Context, Event) error {
		if calls.Add(1) == 1 {
			return errors.New("database down")
		}
		return nil
	})
	d := signed("d1", ReservationDeleted, `{"reservationId":"r","propertyId":"p","status":"cancelled"}`)
	if c := post(t, h, "legacy", d); c != http.StatusInternalServerError {
		t.Fatalf("failing handler: %d", c)
	}
	if c := post(t, h, "legacy", d); c != http.StatusNoContent {
		t.Fatalf("redelivery: %d", c)
	}
	if c := post(t, h, "legacy", d); c != http.StatusOK || calls.Load() != 2 {
		t.Fatalf("third copy: %d after %d calls", c, calls.Load())
	}
}

// Concurrent copies of one delivery are handled once.
func TestHandlerConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	h := Handler(secret, func(context.Context, Event) error {
		calls.Add(1)
		<-release
		return nil
	})
	d := signed("d1", Ping, `{"webhookId":"w"}`)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() { codes <- post(t, h, "legacy", d) })
	}
	// All but the one being handled answer without waiting for it.
	for range 19 {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("duplicate: %d", c)
		}
	}
	close(release)
	wg.Wait()
	if c := <-codes; c != http.StatusNoContent || calls.Load() != 1 {
		t.Fatalf("handled %d times, last answer %d", calls.Load(), c)
	}
}

type failingStore struct{}

func (failingStore) Claim(context.Context, string) (bool, error) { return false, errors.New("down") }
func (failingStore) Release(context.Context, string) error       { return nil }

func TestHandlerStoreOptions(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	fn := func(context.Context, Event) error { calls.Add(1); return nil }
	d := signed("d1", Ping, `{"webhookId":"w"}`)
	if c := post(t, Handler(secret, fn, WithStore(failingStore{})), "legacy", d); c != http.StatusInternalServerError || calls.Load() != 0 {
		t.Errorf("failing store: %d, %d calls", c, calls.Load())
	}
	every := Handler(secret, fn, WithoutDedupe())
	post(t, every, "legacy", d)
	post(t, every, "legacy", d)
	if calls.Load() != 2 {
		t.Errorf("without dedupe: %d calls", calls.Load())
	}
}

func TestMemoryStoreIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewMemoryStore(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		if fresh, _ := s.Claim(ctx, id); !fresh {
			t.Fatalf("%s not fresh", id)
		}
	}
	if s.Len() != 3 {
		t.Fatalf("len %d", s.Len())
	}
	if fresh, _ := s.Claim(ctx, "d"); fresh {
		t.Error("d forgotten")
	}
	if fresh, _ := s.Claim(ctx, "a"); !fresh {
		t.Error("a, the oldest, still remembered beyond the bound")
	}
	_ = s.Release(ctx, "a")
	if fresh, _ := s.Claim(ctx, "a"); !fresh {
		t.Error("released id still remembered")
	}
}
