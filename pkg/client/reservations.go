package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reservation is the subset of the Reservation resource the client names;
// the whole resource is kept in Raw.
type Reservation struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	PropertyID  string          `json:"propertyId"`
	CheckIn     string          `json:"checkIn"`
	CheckOut    string          `json:"checkOut"`
	Nights      int             `json:"nights"`
	InquiredAt  *time.Time      `json:"inquiredAt"`
	ReservedAt  *time.Time      `json:"reservedAt"`
	ConfirmedAt *time.Time      `json:"confirmedAt"`
	CancelledAt *time.Time      `json:"cancelledAt"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	Raw         json.RawMessage `json:"-"`
}

// ReservationQuery is the query of GET /reservations; zero fields are left
// out.
type ReservationQuery struct {
	Status       []string
	PropertyID   string
	CheckInFrom  string
	CheckInTo    string
	CheckOutFrom string
	CheckOutTo   string
	UpdatedSince time.Time
	Sort         string
	Order        string
	Limit        int
	Skip         int
}

// Values renders the query string.
func (q ReservationQuery) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("status", strings.Join(q.Status, ","))
	set("propertyId", q.PropertyID)
	set("checkInFrom", q.CheckInFrom)
	set("checkInTo", q.CheckInTo)
	set("checkOutFrom", q.CheckOutFrom)
	set("checkOutTo", q.CheckOutTo)
	if !q.UpdatedSince.IsZero() {
		v.Set("updatedSince", q.UpdatedSince.UTC().Format(time.RFC3339Nano))
	}
	set("sort", q.Sort)
	set("order", q.Order)
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Skip != 0 {
		v.Set("skip", strconv.Itoa(q.Skip))
	}
	return v
}

// ReservationPage is one page of GET /reservations.
type ReservationPage struct {
	Reservations []Reservation
	Total        int
	Limit        int
	Skip         int
}

// Reservations calls GET /reservations.
func (c *Client) Reservations(ctx context.Context, q ReservationQuery) (ReservationPage, error) {
	var out struct {
		Reservations []json.RawMessage `json:"reservations"`
		Total        int               `json:"total"`
		Limit        int               `json:"limit"`
		Skip         int               `json:"skip"`
	}
	path := "/reservations"
	if v := q.Values(); len(v) > 0 {
		path += "?" + v.Encode()
	}
	if err := c.Get(ctx, path, &out); err != nil {
		return ReservationPage{}, err
	}
	page := ReservationPage{Total: out.Total, Limit: out.Limit, Skip: out.Skip, Reservations: make([]Reservation, len(out.Reservations))}
	for i, raw := range out.Reservations {
		if err := json.Unmarshal(raw, &page.Reservations[i]); err != nil {
			return ReservationPage{}, fmt.Errorf("decode reservation: %w", err)
		}
		page.Reservations[i].Raw = raw
	}
	return page, nil
}

// Reservation calls GET /reservations/{id}.
func (c *Client) Reservation(ctx context.Context, id string) (Reservation, error) {
	var out struct {
		Reservation json.RawMessage `json:"reservation"`
	}
	if err := c.Get(ctx, "/reservations/"+url.PathEscape(id), &out); err != nil {
		return Reservation{}, err
	}
	var r Reservation
	if err := json.Unmarshal(out.Reservation, &r); err != nil {
		return Reservation{}, fmt.Errorf("decode reservation: %w", err)
	}
	r.Raw = out.Reservation
	return r, nil
}

// CreateInquiry calls POST /inquiries with body (an InquiryInput, as a
// struct or map) and returns the new inquiry's id.
func (c *Client) CreateInquiry(ctx context.Context, body any) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := c.Do(ctx, http.MethodPost, "/inquiries", body, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}
