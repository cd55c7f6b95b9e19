package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

// bookingsAdmin calls an admin route, waiting while the bookings service has
// not yet heard of an org created a moment ago (it learns of it from an
// event).
func bookingsAdmin(t *testing.T, method, path, body string, want int) answer {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := admin(t, method, path, body)
		if a.status == want || a.status != 404 || !strings.Contains(a.raw, "No organisation") || time.Now().After(deadline) {
			if a.status != want {
				t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.raw, want)
			}
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func bookingsReservation(t *testing.T, orgID, body string) map[string]any {
	t.Helper()
	return obj(bookingsAdmin(t, "POST", "/orgs/"+orgID+"/reservations", body, 201).body["reservation"])
}

// bookingsListing creates and publishes a property and waits until the
// bookings service accepts inquiries for it.
func bookingsListing(t *testing.T, orgID, nickname string, c *client.Client) string {
	t.Helper()
	draft, _ := json.Marshal(map[string]any{
		"nickname": nickname, "active": true, "isListed": true, "timezone": "Europe/Lisbon",
		"address":   map[string]any{"street": "Rua Augusta 1", "postalCode": "1100-048", "city": "Lisbon", "country": "PT"},
		"pricing":   map[string]any{"monthlyRateCents": 150000, "utilitiesCents": 12000, "furnitureCents": 3000, "depositCents": 300000, "rateBasis": "monthly"},
		"ownerName": "Baixa Imóveis Lda.",
		"images": []any{map[string]any{"isPrimary": true, "caption": nil, "sortOrder": 1, "width": 800, "height": 600,
			"bytes": 1000, "url": "https://uploads.quarters.dev/e2e/bookings.jpg"}},
	})
	deadline := time.Now().Add(60 * time.Second)
	var id string
	for {
		a := admin(t, "POST", "/orgs/"+orgID+"/properties", string(draft))
		if a.status == 201 {
			id = obj(a.body["property"])["id"].(string)
			break
		}
		if a.status != 404 || time.Now().After(deadline) {
			t.Fatalf("create property: %d %s", a.status, a.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a := admin(t, "POST", "/orgs/"+orgID+"/properties/"+id+"/publish", ""); a.status != 200 {
		t.Fatalf("publish: %d %s", a.status, a.raw)
	}
	// An invalid body after the propertyId check tells when bookings knows
	// the listing, without using up any of the allowance.
	for {
		_, err := c.CreateInquiry(context.Background(), map[string]any{"propertyId": id, "lastName": "Probe", "email": "probe@example.com", "adults": 99})
		var e *client.Error
		if errors.As(err, &e) && e.Status == 400 && strings.Contains(e.Message, "adults") {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("bookings never learnt of listing %s: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestBookingsIncrementalSync mirrors the reservations as an integrator
// does, paging by updatedSince and sort=updatedAt while the operator keeps
// changing bookings, and checks that the mirror ends equal to the API.
func TestBookingsIncrementalSync(t *testing.T) {
	orgID, creds := newOrg(t, "Sync Rentals", 1)
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	ctx := context.Background()
	var ids []string
	for i := range 23 {
		r := bookingsReservation(t, orgID, fmt.Sprintf(`{"propertyId":"prop_sync_%d","status":"inquiry","checkIn":"2026-0%d-01","checkOut":"2026-0%d-15"}`, i%4, 1+i%8, 1+i%8))
		ids = append(ids, r["id"].(string))
	}

	mirror := map[string]time.Time{}
	var (
		cursor  time.Time
		atCurse int // rows seen whose updatedAt equals the cursor
	)
	syncPass := func(onPage func(page int)) {
		for page := 0; ; page++ {
			p, err := c.Reservations(ctx, client.ReservationQuery{Sort: "updatedAt", Order: "asc", Limit: 5, UpdatedSince: cursor, Skip: atCurse})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Reservations {
				mirror[r.ID] = r.UpdatedAt
				if r.UpdatedAt.Equal(cursor) {
					atCurse++
				} else {
					cursor, atCurse = r.UpdatedAt, 1
				}
			}
			if len(p.Reservations) < 5 {
				return
			}
			if onPage != nil {
				onPage(page)
			}
		}
	}
	// While the first pass pages, the operator changes rows already read,
	// rows not read yet, and adds new ones.
	syncPass(func(page int) {
		switch page {
		case 0:
			bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[1], `{"status":"reserved"}`, 200)
			bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[20], `{"notes":"changed while paging"}`, 200)
		case 1:
			bookingsReservation(t, orgID, `{"propertyId":"prop_sync_new","checkIn":"2026-10-01","checkOut":"2026-11-01"}`)
			bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[7], `{"status":"cancelled"}`, 200)
		case 2:
			bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[3], `{"adults":2}`, 200)
		}
	})
	// A later change is picked up by the next incremental pass.
	bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[0], `{"invoicePaid":true}`, 200)
	syncPass(nil)

	all, err := c.Reservations(ctx, client.ReservationQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 24 || len(mirror) != 24 {
		t.Fatalf("mirror has %d rows, the API %d", len(mirror), all.Total)
	}
	for _, r := range all.Reservations {
		if got, ok := mirror[r.ID]; !ok || !got.Equal(r.UpdatedAt) {
			t.Errorf("%s: mirror has updatedAt %v, the API %v", r.ID, got, r.UpdatedAt)
		}
	}
}

func TestBookingsCancellationKeepsStamps(t *testing.T) {
	orgID, creds := newOrg(t, "Stamps Rentals", 1)
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	r := bookingsReservation(t, orgID, `{"propertyId":"prop_stamps","status":"inquiry","checkIn":"2026-02-01","checkOut":"2026-05-01","guest":{"firstName":"Ana","lastName":"Lima"}}`)
	id := r["id"].(string)
	for _, s := range []string{"reserved", "confirmed"} {
		bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+id, `{"status":"`+s+`"}`, 200)
	}
	before, err := c.Reservation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if before.InquiredAt == nil || before.ReservedAt == nil || before.ConfirmedAt == nil || before.CancelledAt != nil {
		t.Fatalf("stamps before: %s", before.Raw)
	}
	bookingsAdmin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+id, `{"status":"cancelled"}`, 200)
	after, err := c.Reservation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != "cancelled" || after.CancelledAt == nil || !after.InquiredAt.Equal(*before.InquiredAt) ||
		!after.ReservedAt.Equal(*before.ReservedAt) || !after.ConfirmedAt.Equal(*before.ConfirmedAt) || !after.UpdatedAt.After(before.UpdatedAt) {
		t.Fatalf("after cancellation: %s\nbefore: %s", after.Raw, before.Raw)
	}
	if a := admin(t, "PATCH", "/orgs/"+orgID+"/reservations/"+id, `{"status":"confirmed"}`); a.status != 409 || a.body["error"] != "conflict" {
		t.Fatalf("cancelled → confirmed: %d %s", a.status, a.raw)
	}
	// The cancellation released the days: the same stay can be held again.
	bookingsReservation(t, orgID, `{"propertyId":"prop_stamps","status":"confirmed","checkIn":"2026-02-01","checkOut":"2026-05-01"}`)
	if a := admin(t, "POST", "/orgs/"+orgID+"/reservations", `{"propertyId":"prop_stamps","status":"reserved","checkIn":"2026-04-30","checkOut":"2026-06-01"}`); a.status != 409 {
		t.Fatalf("overlap: %d %s", a.status, a.raw)
	}
	// Unmatched paths under the bookings prefixes answer the JSON 404.
	tok, err := c.FetchToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/reservations/a/b/c/d", "/inquiries/x/y", "/reservations/" + id + "/x"} {
		a := call(t, "GET", st.BaseURL+p, "", "", "Authorization", "Bearer "+tok.AccessToken)
		if a.status != 404 || a.body["error"] != "not_found" {
			t.Errorf("GET %s: %d %s", p, a.status, a.raw)
		}
	}
}

// TestBookingsInquiryAllowance sends 600 inquiries at once against the
// default allowance of 500.
func TestBookingsInquiryAllowance(t *testing.T) {
	orgID, creds := newOrg(t, "Busy Rentals", 1)
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	listing := bookingsListing(t, orgID, "Busy Flat", c)
	tok, err := c.FetchToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"propertyId":"` + listing + `","lastName":"Load","email":"load@example.com","sendConfirmation":false}`
	const n = 600
	status := make([]int, n)
	retry := make([]string, n)
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 100}}
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", st.BaseURL+"/inquiries", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			resp, err := hc.Do(req)
			if err != nil {
				t.Errorf("POST %d: %v", i, err)
				return
			}
			resp.Body.Close()
			status[i], retry[i] = resp.StatusCode, resp.Header.Get("Retry-After")
		})
	}
	wg.Wait()
	created, limited := 0, 0
	for i, s := range status {
		switch s {
		case 201:
			created++
		case 429:
			limited++
			if secs, err := strconv.Atoi(retry[i]); err != nil || secs < 1 || secs > 86400 {
				t.Errorf("Retry-After %q", retry[i])
			}
		default:
			t.Errorf("status %d", s)
		}
	}
	if created != 500 || limited != 100 {
		t.Fatalf("%d × 201 and %d × 429, want 500 and 100", created, limited)
	}
	// The refused ones stored nothing.
	a := bookingsAdmin(t, "GET", "/orgs/"+orgID+"/inquiries", "", 200)
	if got := len(a.body["inquiries"].([]any)); got != 500 {
		t.Fatalf("%d stored inquiries, want 500", got)
	}
	// One more answers 429 with the spec's body, through the client too.
	_, err = c.CreateInquiry(context.Background(), json.RawMessage(body))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 429 || e.Code != "rate_limited" {
		t.Fatalf("601st: %v", err)
	}
}

func TestBookingsInquiryEmailsInTheSink(t *testing.T) {
	orgID, creds := newOrg(t, "Mail Rentals", 1)
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	listing := bookingsListing(t, orgID, "Alfama Loft", c)
	ctx := context.Background()
	id, err := c.CreateInquiry(ctx, map[string]any{"propertyId": listing, "firstName": "João", "lastName": "Gonçalves",
		"email": "joao@example.com", "checkIn": "2026-09-01", "checkOut": "2026-12-01", "locale": "pt-BR", "adults": 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateInquiry(ctx, map[string]any{"propertyId": listing, "lastName": "Quiet", "email": "quiet@example.com", "sendConfirmation": false}); err != nil {
		t.Fatal(err)
	}
	other, err := c.CreateInquiry(ctx, map[string]any{"propertyId": listing, "lastName": "Dupont", "email": "dupont@example.com", "locale": "fr"})
	if err != nil {
		t.Fatal(err)
	}
	// A name carrying a header is refused, not mailed.
	_, err = c.CreateInquiry(ctx, map[string]any{"propertyId": listing, "lastName": "Eve\r\nBcc: victim@example.com", "email": "eve@example.com"})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "lastName") {
		t.Fatalf("CR/LF in a name: %v", err)
	}

	var emails []any
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := admin(t, "GET", "/orgs/"+orgID+"/emails", "")
		if a.status == 200 {
			emails, _ = a.body["emails"].([]any)
		}
		if len(emails) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if len(emails) != 2 {
		t.Fatalf("%d emails in the sink, want 2: %v", len(emails), emails)
	}
	byInquiry := map[string]map[string]any{}
	for _, m := range emails {
		byInquiry[obj(m)["inquiryId"].(string)] = obj(m)
	}
	pt := byInquiry[id]
	if pt == nil || pt["to"] == nil || !strings.Contains(fmt.Sprint(pt["to"]), "joao@example.com") || pt["locale"] != "pt" ||
		!strings.Contains(pt["subject"].(string), "Alfama Loft") {
		t.Fatalf("Portuguese email: %v", pt)
	}
	for _, want := range []string{"Alfama Loft", "2026-09-01", "2026-12-01", id, "João Gonçalves"} {
		if !strings.Contains(pt["body"].(string), want) {
			t.Errorf("email body lacks %q: %q", want, pt["body"])
		}
	}
	if en := byInquiry[other]; en == nil || en["locale"] != "en" || !strings.Contains(en["body"].(string), other) {
		t.Fatalf("English fallback: %v", en)
	}
}
