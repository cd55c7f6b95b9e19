package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// BookingsSteps give the demo org reservations in every status on its
// published listings (State.Data["listings"], from the catalog's step;
// skipped when there are none) and a few inquiries submitted through the
// public API. The ids are kept in State.Data "reservations" and
// "inquiries".
func BookingsSteps() []Step {
	return []Step{{Name: "create the demo reservations and inquiries", Run: createBookings}}
}

// bookingsWait bounds how long seeding waits for the bookings service to
// learn of the demo org and its listings (they reach it as events).
const bookingsWait = 90 * time.Second

// demoStays are the bookings of each demo listing, relative to the first
// day of next month, so that the demo always shows upcoming stays.
var demoStays = []struct {
	status          string // the status to end in
	fromMonths, len int    // start (months after next month) and length in months
	guest           [2]string
}{
	{"confirmed", 0, 3, [2]string{"Sophie", "Martin"}},
	{"reserved", 4, 2, [2]string{"Lukas", "Schmidt"}},
	{"inquiry", 7, 1, [2]string{"Inês", "Costa"}},
	{"cancelled", 9, 2, [2]string{"Daan", "de Vries"}},
}

func createBookings(ctx context.Context, c *Client, st *State) error {
	listings := stringsOf(st.Data["listings"])
	if len(listings) == 0 {
		return nil
	}
	now := time.Now().UTC()
	base := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	var reservations []string
	for li, lst := range listings {
		for si, s := range demoStays {
			// Each listing's stays shift by a month so the lists differ.
			in := base.AddDate(0, s.fromMonths+li%2, 0)
			out := in.AddDate(0, s.len, 0)
			status := s.status
			if status == "cancelled" {
				status = "reserved"
			}
			body := map[string]any{
				"propertyId": lst, "status": status,
				"checkIn": in.Format("2006-01-02"), "checkOut": out.Format("2006-01-02"),
				"guest": map[string]any{"firstName": s.guest[0], "lastName": s.guest[1],
					"email": strings.ToLower(s.guest[0]) + "@example.com", "phone": "+31 20 555 01" + fmt.Sprint(10+li*4+si)},
				"adults": 1 + si%2, "children": 0, "invoicePaid": s.status == "confirmed",
			}
			id, err := createReservation(ctx, c, st.OrgID, body)
			if errors.Is(err, errBookingsAbsent) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reservation %s on %s: %w", s.status, lst, err)
			}
			if s.status == "cancelled" {
				if err := c.Do(ctx, http.MethodPatch, "/orgs/"+st.OrgID+"/reservations/"+id, map[string]any{"status": "cancelled"}, http.StatusOK, nil); err != nil {
					return err
				}
			}
			reservations = append(reservations, id)
		}
	}
	st.Data["reservations"] = reservations
	inquiries, err := createInquiries(ctx, c, st, listings[0])
	if err != nil {
		return err
	}
	st.Data["inquiries"] = inquiries
	return nil
}

var errBookingsAbsent = errors.New("the bookings service is not running")

// createReservation creates a reservation, retrying while the bookings
// service does not know the org yet.
func createReservation(ctx context.Context, c *Client, orgID string, body map[string]any) (string, error) {
	var out struct {
		Reservation struct {
			ID string `json:"id"`
		} `json:"reservation"`
	}
	deadline := time.Now().Add(bookingsWait)
	for {
		err := c.Do(ctx, http.MethodPost, "/orgs/"+orgID+"/reservations", body, http.StatusCreated, &out)
		if err == nil {
			return out.Reservation.ID, nil
		}
		if strings.Contains(err.Error(), "bookings service is not running") {
			return "", errBookingsAbsent
		}
		if !strings.Contains(err.Error(), "No organisation") || time.Now().After(deadline) {
			return "", err
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// createInquiries submits inquiries as a website form does: with the demo
// credentials, through the public API.
func createInquiries(ctx context.Context, c *Client, st *State, listing string) ([]string, error) {
	api := strings.TrimSuffix(c.AdminURL, "/admin/v1") + "/api/v1"
	pub := &Client{AdminURL: api, HTTP: c.HTTP}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {st.ClientID}, "client_secret": {st.ClientSecret}}
	if err := postForm(ctx, c.HTTP, api+"/oauth2/token", form, &tok); err != nil {
		return nil, fmt.Errorf("mint a demo token: %w", err)
	}
	pub.Token = tok.AccessToken
	next := time.Now().UTC().AddDate(0, 2, 0)
	forms := []map[string]any{
		{"firstName": "Emma", "lastName": "Jansen", "email": "emma.jansen@example.com", "locale": "nl-NL", "adults": 2,
			"message": "Is de woning geschikt voor een gezin met een baby?", "infants": 1},
		{"firstName": "Jonas", "lastName": "Weber", "email": "jonas.weber@example.com", "locale": "de", "guestCount": 1,
			"message": "Ich komme für ein Projekt von drei Monaten.", "metadata": map[string]any{"utm_source": "newsletter"}},
		{"firstName": "Maria", "lastName": "Silva", "email": "maria.silva@example.com", "locale": "pt-PT", "adults": 1,
			"source": "partner-portal", "sendConfirmation": false},
	}
	var ids []string
	for i, f := range forms {
		f["propertyId"] = listing
		f["checkIn"] = next.AddDate(0, i, 0).Format("2006-01-02")
		f["checkOut"] = next.AddDate(0, i+3, 0).Format("2006-01-02")
		var out struct {
			ID string `json:"id"`
		}
		deadline := time.Now().Add(bookingsWait)
		for {
			err := pub.Do(ctx, http.MethodPost, "/inquiries", f, http.StatusCreated, &out)
			if err == nil {
				break
			}
			// The listing reaches the bookings service as an event.
			if !strings.Contains(err.Error(), "propertyId") || time.Now().After(deadline) {
				return nil, fmt.Errorf("inquiry %d: %w", i, err)
			}
			if err := sleep(ctx, 500*time.Millisecond); err != nil {
				return nil, err
			}
		}
		ids = append(ids, out.ID)
	}
	return ids, nil
}

// postForm sends a form and decodes the 200 answer into out.
func postForm(ctx context.Context, hc *http.Client, target string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s answered %d", target, res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// stringsOf reads a list of ids kept in State.Data, as written by a step
// ([]string) or as read back from demo.json ([]any).
func stringsOf(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
