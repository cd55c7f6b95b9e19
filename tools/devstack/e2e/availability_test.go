package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

// eventWait bounds how long a test waits for an event to reach another
// service (the org reaching the catalog, a listing reaching availability).
const eventWait = 90 * time.Second

// publishProperty creates a property of org through the admin API and
// publishes it, retrying while the catalog does not know the org yet.
func publishProperty(t *testing.T, org, draft string) string {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	var a answer
	for {
		a = admin(t, "POST", "/orgs/"+org+"/properties", draft)
		if a.status == 201 || a.status != 404 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a.status != 201 {
		t.Fatalf("create property: %d %s", a.status, a.raw)
	}
	id := obj(a.body["property"])["id"].(string)
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", ""); a.status != 200 {
		t.Fatalf("publish: %d %s", a.status, a.raw)
	}
	return id
}

func calendarDraft(nickname string) string {
	return `{"nickname":"` + nickname + `","timezone":"Europe/Amsterdam",
		"address":{"city":"Amsterdam","country":"NL"},
		"terms":{"minNights":30,"maxNights":null},
		"images":[{"isPrimary":true,"caption":null,"sortOrder":1,"width":800,"height":600,"bytes":1000,
			"url":"https://uploads.quarters.dev/e2e/calendar.jpg"}]}`
}

// waitForCalendar waits until availability has the published listing.
func waitForCalendar(t *testing.T, c *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		_, err := c.Calendar(context.Background(), id, "2026-01-01", "2026-01-01")
		if err == nil {
			return
		}
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("calendar of the published listing %s: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func statusesOf(days []client.CalendarDay) string {
	var b strings.Builder
	for i, d := range days {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(d.Date + ":" + d.Status)
	}
	return b.String()
}

func TestCalendarWithBlocks(t *testing.T) {
	org, creds := newOrg(t, "Calendar Org", 1)
	id := publishProperty(t, org, calendarDraft("Calendar Loft"))
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	waitForCalendar(t, c, id)
	ctx := context.Background()
	tok, err := c.FetchToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bearer := []string{"Authorization", "Bearer " + tok.AccessToken}

	// A block from 2027-03-27 up to 2027-03-30 (exclusive), across the
	// Amsterdam spring-forward night.
	blocks := "/orgs/" + org + "/properties/" + id + "/blocks"
	a := admin(t, "POST", blocks, `{"start":"2027-03-27","end":"2027-03-30","reason":"renovation"}`)
	if a.status != 201 {
		t.Fatalf("add block: %d %s", a.status, a.raw)
	}
	block := obj(a.body["block"])
	if block["propertyId"] != id || block["start"] != "2027-03-27" || block["end"] != "2027-03-30" || block["reason"] != "renovation" {
		t.Fatalf("block: %s", a.raw)
	}
	if a := admin(t, "GET", blocks, ""); a.status != 200 || !strings.Contains(a.raw, block["id"].(string)) {
		t.Fatalf("list blocks: %d %s", a.status, a.raw)
	}

	days, err := c.Calendar(ctx, id, "2027-03-26", "2027-03-31")
	if err != nil {
		t.Fatal(err)
	}
	want := "2027-03-26:available 2027-03-27:unavailable 2027-03-28:unavailable 2027-03-29:unavailable 2027-03-30:available 2027-03-31:available"
	if got := statusesOf(days); got != want {
		t.Fatalf("calendar with a block:\n got %s\nwant %s", got, want)
	}
	for _, d := range days {
		if d.MinNights != 30 || !d.IsBaseMinNights {
			t.Fatalf("day %+v: want minNights 30 and isBaseMinNights", d)
		}
	}

	// The default range starts today in Amsterdam and covers 731 days.
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().In(ams).Format(time.DateOnly)
	a = call(t, "GET", st.BaseURL+"/listings/"+id+"/calendar", "", "", bearer...)
	after := time.Now().In(ams).Format(time.DateOnly)
	list, _ := a.body["days"].([]any)
	if a.status != 200 || len(list) != 731 {
		t.Fatalf("default range: %d, %d days", a.status, len(list))
	}
	if first := obj(list[0])["date"]; first != before && first != after {
		t.Fatalf("default start %v, want today in Amsterdam (%s)", first, before)
	}

	// Errors the spec names.
	for _, q := range []string{"?start=2027-02-30", "?start=2027-03-01&end=2027-02-28", "?start=2027-01-01&end=2030-01-05", "?end=27-01-01"} {
		a := call(t, "GET", st.BaseURL+"/listings/"+id+"/calendar"+q, "", "", bearer...)
		if a.status != 400 || a.body["error"] != "invalid_request" {
			t.Errorf("calendar%s: %d %s", q, a.status, a.raw)
		}
	}
	if a := call(t, "GET", st.BaseURL+"/listings/no-such-listing/calendar", "", "", bearer...); a.status != 404 || a.body["error"] != "not_found" {
		t.Errorf("unknown listing: %d %s", a.status, a.raw)
	}
	if a := call(t, "GET", st.BaseURL+"/listings/"+id+"/calendar/extra", "", "", bearer...); a.status != 404 || a.body["error"] != "not_found" {
		t.Errorf("path under the calendar: %d %s", a.status, a.raw)
	}
	if a := call(t, "GET", st.BaseURL+"/listings/"+id+"/calendar", "", ""); a.status != 401 || a.body["error"] != "unauthorized" {
		t.Errorf("no token: %d %s", a.status, a.raw)
	}

	// Another org sees nothing of it.
	_, others := newOrg(t, "Calendar Other", 1)
	other := client.New(st.BaseURL, others[0].id, others[0].secret)
	var e *client.Error
	if _, err := other.Calendar(ctx, id, "", ""); !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" {
		t.Errorf("another org's calendar: %v", err)
	}

	// Removing the block frees its days on the next request.
	if a := admin(t, "DELETE", blocks+"/"+block["id"].(string), ""); a.status != 204 {
		t.Fatalf("remove block: %d %s", a.status, a.raw)
	}
	if days, err := c.Calendar(ctx, id, "2027-03-27", "2027-03-29"); err != nil ||
		statusesOf(days) != "2027-03-27:available 2027-03-28:available 2027-03-29:available" {
		t.Fatalf("after removing the block: %v %s", err, statusesOf(days))
	}

	// Unpublished, the listing has no calendar.
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/unpublish", ""); a.status != 204 {
		t.Fatalf("unpublish: %d %s", a.status, a.raw)
	}
	deadline := time.Now().Add(eventWait)
	for {
		_, err := c.Calendar(ctx, id, "", "")
		if errors.As(err, &e) && e.Status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calendar of an unpublished listing: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// availReservation creates a reservation through the bookings admin API,
// waiting while bookings has not heard of the org yet; it skips the test
// when the bookings service is not part of the stack.
func availReservation(t *testing.T, org, body string) string {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		a := admin(t, "POST", "/orgs/"+org+"/reservations", body)
		switch {
		case a.status == 201:
			return obj(a.body["reservation"])["id"].(string)
		case a.status == 503 && a.body["error"] == "service_unavailable":
			t.Skip("the bookings service is not running in this stack")
		case a.status == 404 && time.Now().Before(deadline):
			time.Sleep(200 * time.Millisecond)
		default:
			t.Fatalf("create reservation: %d %s", a.status, a.raw)
		}
	}
}

// waitForDays polls the calendar until it shows want (reservations reach
// availability as events).
func waitForDays(t *testing.T, c *client.Client, id, start, end, want string) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		days, err := c.Calendar(context.Background(), id, start, end)
		if err == nil && statusesOf(days) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calendar %s..%s: %v\n got %s\nwant %s", start, end, err, statusesOf(days), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestCalendarWithReservationsInEveryStatus(t *testing.T) {
	org, creds := newOrg(t, "Calendar Bookings", 1)
	id := publishProperty(t, org, calendarDraft("Calendar Bookings Loft"))
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	waitForCalendar(t, c, id)
	guest := `"guest":{"firstName":"Ada","lastName":"Lovelace","email":"ada@example.com"}`
	reservation := func(status, in, out string) string {
		return availReservation(t, org, `{"propertyId":"`+id+`","status":"`+status+`","checkIn":"`+in+`","checkOut":"`+out+`",`+guest+`}`)
	}
	reserved := reservation("reserved", "2027-05-02", "2027-05-04")
	confirmed := reservation("confirmed", "2027-05-04", "2027-05-06") // check-in on the other's check-out day
	reservation("inquiry", "2027-05-06", "2027-05-08")
	cancelled := reservation("confirmed", "2027-05-08", "2027-05-09")
	if a := admin(t, "PATCH", "/orgs/"+org+"/reservations/"+cancelled, `{"status":"cancelled"}`); a.status != 200 {
		t.Fatalf("cancel: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/blocks", `{"start":"2027-05-05","end":"2027-05-10"}`); a.status != 201 {
		t.Fatalf("block: %d %s", a.status, a.raw)
	}
	waitForDays(t, c, id, "2027-05-01", "2027-05-10",
		"2027-05-01:available 2027-05-02:reserved 2027-05-03:reserved 2027-05-04:booked 2027-05-05:booked "+
			"2027-05-06:unavailable 2027-05-07:unavailable 2027-05-08:unavailable 2027-05-09:unavailable 2027-05-10:available")

	// Confirming the held booking books its days; cancelling the confirmed
	// one frees them (the block still holds the 5th); deleting frees too.
	if a := admin(t, "PATCH", "/orgs/"+org+"/reservations/"+reserved, `{"status":"confirmed"}`); a.status != 200 {
		t.Fatalf("confirm: %d %s", a.status, a.raw)
	}
	if a := admin(t, "PATCH", "/orgs/"+org+"/reservations/"+confirmed, `{"status":"cancelled"}`); a.status != 200 {
		t.Fatalf("cancel: %d %s", a.status, a.raw)
	}
	waitForDays(t, c, id, "2027-05-01", "2027-05-06",
		"2027-05-01:available 2027-05-02:booked 2027-05-03:booked 2027-05-04:available 2027-05-05:unavailable 2027-05-06:unavailable")
	if a := admin(t, "DELETE", "/orgs/"+org+"/reservations/"+reserved, ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	waitForDays(t, c, id, "2027-05-01", "2027-05-04",
		"2027-05-01:available 2027-05-02:available 2027-05-03:available 2027-05-04:available")
}

// The demo org's first published listing carries the demo block.
func TestDemoListingHasABlock(t *testing.T) {
	if st.Demo == nil {
		t.Fatal("no demo org")
	}
	// Seeding keeps []string; a state read back from demo.json holds []any.
	var listings []string
	raw, _ := json.Marshal(st.Demo.Data["listings"])
	_ = json.Unmarshal(raw, &listings)
	if len(listings) == 0 {
		t.Skip("the demo has no published listings in this stack")
	}
	id := listings[0]
	a := admin(t, "GET", "/orgs/"+st.Demo.OrgID+"/properties/"+id+"/blocks", "")
	blocks, _ := a.body["blocks"].([]any)
	if a.status != 200 || len(blocks) != 1 {
		t.Fatalf("demo blocks: %d %s", a.status, a.raw)
	}
	start := obj(blocks[0])["start"].(string)
	c := client.New(st.BaseURL, st.Demo.ClientID, st.Demo.ClientSecret)
	days, err := c.Calendar(context.Background(), id, start, start)
	if err != nil || len(days) != 1 || days[0].Status == "available" {
		t.Fatalf("calendar on the demo block's first day: %v %+v", err, days)
	}
}

// A draft takes blocks before its first publish, and a deleted property
// takes none: availability learns of both from the catalog's events.
func TestBlocksOfADraftAndADeletedProperty(t *testing.T) {
	t.Parallel()
	org, creds := newOrg(t, "Draft Blocks Org", 1)
	deadline := time.Now().Add(eventWait)
	var a answer
	for {
		a = admin(t, "POST", "/orgs/"+org+"/properties", calendarDraft("Draft with a block"))
		if a.status != 404 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a.status != 201 {
		t.Fatalf("create property: %d %s", a.status, a.raw)
	}
	id := obj(a.body["property"])["id"].(string)
	blocks := "/orgs/" + org + "/properties/" + id + "/blocks"
	for {
		a = admin(t, "POST", blocks, `{"start":"2027-05-01","end":"2027-05-03","reason":"painting"}`)
		if a.status != 404 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a.status != 201 {
		t.Fatalf("block on a draft: %d %s", a.status, a.raw)
	}
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	if _, err := c.Calendar(context.Background(), id, "2027-05-01", "2027-05-02"); !isNotFound(err) {
		t.Fatalf("calendar of a draft: %v, want 404", err)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", ""); a.status != 200 {
		t.Fatalf("publish: %d %s", a.status, a.raw)
	}
	waitForDays(t, c, id, "2027-04-30", "2027-05-03", "2027-04-30:available 2027-05-01:unavailable 2027-05-02:unavailable 2027-05-03:available")

	if a := admin(t, "DELETE", "/orgs/"+org+"/properties/"+id, ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	for {
		a = admin(t, "GET", blocks, "")
		if a.status == 404 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a.status != 404 || a.body["error"] != "not_found" {
		t.Fatalf("blocks of a deleted property: %d %s", a.status, a.raw)
	}
}
