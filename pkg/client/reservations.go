package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sort keys and orders of ReservationQuery.
const (
	SortCheckIn   = "checkIn"
	SortCheckOut  = "checkOut"
	SortUpdatedAt = "updatedAt"
	SortCreatedAt = "createdAt"
	OrderAsc      = "asc"
	OrderDesc     = "desc"
)

// MaxPageSize is the largest page of GET /reservations.
const MaxPageSize = 100

// ReservationQuery is the query of GET /reservations; zero fields are left
// out (and take the API's defaults: every status, sort by check-in
// ascending, 25 a page).
type ReservationQuery struct {
	// Status keeps the bookings in any of these statuses.
	Status     []string
	PropertyID string
	// CheckInFrom, CheckInTo, CheckOutFrom and CheckOutTo are inclusive
	// YYYY-MM-DD bounds.
	CheckInFrom  string
	CheckInTo    string
	CheckOutFrom string
	CheckOutTo   string
	// UpdatedSince keeps the bookings changed at or after this instant.
	UpdatedSince time.Time
	// Sort is a Sort constant, Order OrderAsc or OrderDesc. Ties are
	// broken by id.
	Sort  string
	Order string
	// Limit is the page size, 1 to MaxPageSize.
	Limit int
	Skip  int
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
	// Total counts the bookings matching the filters across all pages.
	Total int
	Limit int
	Skip  int
}

// Reservations returns one page of GET /reservations.
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
		if err := decodeReservation(raw, &page.Reservations[i]); err != nil {
			return ReservationPage{}, err
		}
	}
	return page, nil
}

// AllReservations iterates over every booking matching q, page by page
// (q.Limit a page, MaxPageSize when zero), from q.Skip on. It stops at the
// first error, which it yields.
//
// Paging by offset over data that changes may skip or repeat a booking
// that moves between pages while the loop runs. To follow changes, use
// [Client.NewSync], which gives that guarantee.
func (c *Client) AllReservations(ctx context.Context, q ReservationQuery) iter.Seq2[Reservation, error] {
	return func(yield func(Reservation, error) bool) {
		if q.Limit <= 0 {
			q.Limit = MaxPageSize
		}
		for {
			page, err := c.Reservations(ctx, q)
			if err != nil {
				yield(Reservation{}, err)
				return
			}
			for _, r := range page.Reservations {
				if !yield(r, nil) {
					return
				}
			}
			q.Skip += len(page.Reservations)
			if len(page.Reservations) < q.Limit || q.Skip >= page.Total {
				return
			}
		}
	}
}

// Reservation returns one booking. An unknown one is an [*Error] with
// Code [CodeNotFound].
func (c *Client) Reservation(ctx context.Context, id string) (Reservation, error) {
	var out struct {
		Reservation json.RawMessage `json:"reservation"`
	}
	if err := c.Get(ctx, "/reservations/"+url.PathEscape(id), &out); err != nil {
		return Reservation{}, err
	}
	var r Reservation
	if err := decodeReservation(out.Reservation, &r); err != nil {
		return Reservation{}, err
	}
	return r, nil
}

func decodeReservation(raw json.RawMessage, r *Reservation) error {
	if err := json.Unmarshal(raw, r); err != nil {
		return fmt.Errorf("decode reservation: %w", err)
	}
	r.Raw = raw
	return nil
}
