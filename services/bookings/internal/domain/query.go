package domain

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"quarters.dev/pkg/apperr"
)

// SortKey is a field GET /reservations sorts by.
type SortKey string

// The sort keys.
const (
	SortCheckIn   SortKey = "checkIn"
	SortCheckOut  SortKey = "checkOut"
	SortUpdatedAt SortKey = "updatedAt"
	SortCreatedAt SortKey = "createdAt"
)

// Page sizes of GET /reservations.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// ListQuery is a parsed GET /reservations query.
type ListQuery struct {
	OrgID        string
	Statuses     []Status // empty: all
	PropertyID   *string
	CheckInFrom  *Date
	CheckInTo    *Date
	CheckOutFrom *Date
	CheckOutTo   *Date
	UpdatedSince *time.Time
	Sort         SortKey
	Desc         bool
	Limit        int
	Skip         int
}

// ParseListQuery reads the query string of GET /reservations. Each error
// names the parameter at fault.
func ParseListQuery(orgID string, v url.Values) (ListQuery, error) {
	q := ListQuery{OrgID: orgID, Sort: SortCheckIn, Limit: DefaultLimit}
	// A parameter given twice is refused rather than half read; status
	// twice is the same as its values joined by commas.
	for _, name := range []string{"propertyId", "checkInFrom", "checkInTo", "checkOutFrom", "checkOutTo",
		"updatedSince", "sort", "order", "limit", "skip"} {
		if len(v[name]) > 1 {
			return q, apperr.Invalid("Parameter %s is given more than once.", name)
		}
	}
	if vals := v["status"]; len(vals) > 0 {
		raw := strings.Join(vals, ",")
		seen := map[Status]bool{}
		for _, part := range strings.Split(raw, ",") {
			s, ok := ParseStatus(strings.TrimSpace(part))
			if !ok {
				return q, apperr.Invalid("Parameter status: %q is not one of inquiry, reserved, confirmed, cancelled.", part)
			}
			if !seen[s] {
				seen[s] = true
				q.Statuses = append(q.Statuses, s)
			}
		}
	}
	if raw, ok := one(v, "propertyId"); ok {
		if raw == "" {
			return q, apperr.Invalid("Parameter propertyId must not be empty.")
		}
		q.PropertyID = &raw
	}
	for _, p := range []struct {
		name string
		dst  **Date
	}{
		{"checkInFrom", &q.CheckInFrom}, {"checkInTo", &q.CheckInTo},
		{"checkOutFrom", &q.CheckOutFrom}, {"checkOutTo", &q.CheckOutTo},
	} {
		if raw, ok := one(v, p.name); ok {
			d, ok := ParseDate(raw)
			if !ok {
				return q, apperr.Invalid("Parameter %s must be a date YYYY-MM-DD, got %q.", p.name, raw)
			}
			*p.dst = &d
		}
	}
	if raw, ok := one(v, "updatedSince"); ok {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return q, apperr.Invalid("Parameter updatedSince must be an RFC 3339 date-time such as 2025-01-31T12:00:00Z, got %q.", raw)
		}
		t = t.UTC()
		q.UpdatedSince = &t
	}
	if raw, ok := one(v, "sort"); ok {
		switch k := SortKey(raw); k {
		case SortCheckIn, SortCheckOut, SortUpdatedAt, SortCreatedAt:
			q.Sort = k
		default:
			return q, apperr.Invalid("Parameter sort must be one of checkIn, checkOut, updatedAt, createdAt, got %q.", raw)
		}
	}
	if raw, ok := one(v, "order"); ok {
		switch raw {
		case "asc":
		case "desc":
			q.Desc = true
		default:
			return q, apperr.Invalid("Parameter order must be asc or desc, got %q.", raw)
		}
	}
	if raw, ok := one(v, "limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxLimit {
			return q, apperr.Invalid("Parameter limit must be an integer from 1 to %d, got %q.", MaxLimit, raw)
		}
		q.Limit = n
	}
	if raw, ok := one(v, "skip"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return q, apperr.Invalid("Parameter skip must be an integer of 0 or more, got %q.", raw)
		}
		q.Skip = n
	}
	return q, nil
}

// one returns the first value of a parameter that was given.
func one(v url.Values, name string) (string, bool) {
	vals, ok := v[name]
	if !ok || len(vals) == 0 {
		return "", false
	}
	return vals[0], true
}
