package domain

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
)

func TestStatusTransitions(t *testing.T) {
	t.Parallel()
	allowed := map[[2]Status]bool{
		{StatusInquiry, StatusReserved}: true, {StatusInquiry, StatusConfirmed}: true, {StatusInquiry, StatusCancelled}: true,
		{StatusReserved, StatusConfirmed}: true, {StatusReserved, StatusCancelled}: true,
		{StatusConfirmed, StatusCancelled}: true,
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			if from == to {
				continue
			}
			if got := from.CanMoveTo(to); got != allowed[[2]Status{from, to}] {
				t.Errorf("%s → %s allowed = %v", from, to, got)
			}
		}
	}
}

func TestStampsAreNeverCleared(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Reservation{Status: StatusInquiry}
	r.Stamp(StatusInquiry, t0)
	for i, s := range []Status{StatusReserved, StatusConfirmed, StatusCancelled} {
		if err := r.MoveTo(s, t0.Add(time.Duration(i+1)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if r.InquiredAt == nil || r.ReservedAt == nil || r.ConfirmedAt == nil || r.CancelledAt == nil {
		t.Fatalf("stamps lost: %+v", r)
	}
	if !r.ReservedAt.Equal(t0.Add(time.Hour)) || !r.CancelledAt.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("stamps: %v %v", r.ReservedAt, r.CancelledAt)
	}
	if err := r.MoveTo(StatusReserved, t0); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("cancelled → reserved: %v, want conflict", err)
	}
}

func TestMonthlyCents(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		p    Pricing
		want *int64
	}{
		{Pricing{RentCents: n(100000), UtilitiesCents: n(15000), FurnitureCents: n(5000), Basis: BasisMonthly}, n(120000)},
		{Pricing{RentCents: n(100000), UtilitiesCents: n(0), FurnitureCents: n(0)}, n(100000)},
		{Pricing{RentCents: n(100000), UtilitiesCents: n(15000), Basis: BasisMonthly}, nil},
		{Pricing{RentCents: n(9000), UtilitiesCents: n(0), FurnitureCents: n(0), Basis: BasisNightly}, nil},
	}
	for i, tt := range tests {
		got := tt.p.MonthlyCents()
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%d: %v, want %v", i, got, tt.want)
		}
	}
}

func TestOverlaps(t *testing.T) {
	t.Parallel()
	d := MustDate
	tests := []struct {
		a, b [2]string
		want bool
	}{
		{[2]string{"2025-01-01", "2025-01-10"}, [2]string{"2025-01-10", "2025-01-20"}, false}, // handover day
		{[2]string{"2025-01-01", "2025-01-10"}, [2]string{"2025-01-09", "2025-01-20"}, true},
		{[2]string{"2025-01-05", "2025-01-06"}, [2]string{"2025-01-01", "2025-01-10"}, true},
		{[2]string{"2025-02-01", "2025-02-10"}, [2]string{"2025-01-01", "2025-01-10"}, false},
	}
	for _, tt := range tests {
		if got := Overlaps(d(tt.a[0]), d(tt.a[1]), d(tt.b[0]), d(tt.b[1])); got != tt.want {
			t.Errorf("%v %v: %v", tt.a, tt.b, got)
		}
	}
}

func TestParseListQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		param string // "" means valid
	}{
		{"", ""},
		{"status=inquiry,reserved&sort=updatedAt&order=desc&limit=100&skip=0", ""},
		{"status=booked", "status"},
		{"status=reserved,", "status"},
		{"checkInFrom=2025-01-01&checkInTo=2025-12-31&checkOutFrom=2025-01-02&checkOutTo=2026-01-01", ""},
		{"checkInFrom=2025-1-1", "checkInFrom"},
		{"checkInTo=2025-02-30", "checkInTo"},
		{"checkOutFrom=tomorrow", "checkOutFrom"},
		{"checkOutTo=2025-01-01T00:00:00Z", "checkOutTo"},
		{"updatedSince=2025-01-01T10:00:00Z", ""},
		{"updatedSince=2025-01-01T10:00:00.123%2B02:00", ""},
		{"updatedSince=2025-01-01", "updatedSince"},
		{"updatedSince=yesterday", "updatedSince"},
		{"sort=price", "sort"},
		{"sort=checkin", "sort"},
		{"order=up", "order"},
		{"limit=0", "limit"},
		{"limit=1", ""},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"limit=2.5", "limit"},
		{"skip=-1", "skip"},
		{"skip=x", "skip"},
		{"skip=1000000", ""},
		{"propertyId=", "propertyId"},
		{"propertyId=prop_1", ""},
		{"propertyId=prop_1&propertyId=prop_2", "propertyId"},
		{"limit=5&limit=6", "limit"},
		{"status=inquiry&status=cancelled", ""},
		{"status=inquiry&status=booked", "status"},
	}
	for _, tt := range tests {
		v, _ := url.ParseQuery(tt.query)
		q, err := ParseListQuery("org_1", v)
		if tt.param == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.query, err)
			}
			continue
		}
		if !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(apperr.As(err).Message, tt.param) {
			t.Errorf("%q: %v (%+v), want invalid_request naming %s", tt.query, err, q, tt.param)
		}
	}
	if q, _ := ParseListQuery("org_1", url.Values{"status": {"inquiry", "cancelled,inquiry"}}); len(q.Statuses) != 2 {
		t.Errorf("status given twice: %v, want inquiry and cancelled", q.Statuses)
	}
	q, _ := ParseListQuery("org_1", url.Values{})
	if q.Limit != DefaultLimit || q.Skip != 0 || q.Sort != SortCheckIn || q.Desc {
		t.Errorf("defaults: %+v", q)
	}
}

func TestNewReservationRules(t *testing.T) {
	t.Parallel()
	base := func() ReservationInput {
		return ReservationInput{PropertyID: Some("lst_1"), CheckIn: Some("2025-03-01"), CheckOut: Some("2025-04-01")}
	}
	tests := []struct {
		name  string
		edit  func(*ReservationInput)
		field string
	}{
		{"minimal", func(*ReservationInput) {}, ""},
		{"no property", func(in *ReservationInput) { in.PropertyID = Opt[string]{} }, "propertyId"},
		{"no checkIn", func(in *ReservationInput) { in.CheckIn = Opt[string]{} }, "checkIn"},
		{"null checkOut", func(in *ReservationInput) { in.CheckOut = Opt[string]{Set: true} }, "checkOut"},
		{"checkOut not after checkIn", func(in *ReservationInput) { in.CheckOut = Some("2025-03-01") }, "checkOut"},
		{"cancelled on create", func(in *ReservationInput) { in.Status = Some("cancelled") }, "status"},
		{"unknown status", func(in *ReservationInput) { in.Status = Some("booked") }, "status"},
		{"negative adults", func(in *ReservationInput) { in.Adults = Some(int64(-1)) }, "adults"},
		{"bad rate basis", func(in *ReservationInput) { in.Pricing = &PricingInput{RateBasis: Some("weekly")} }, "pricing.rateBasis"},
		{"negative rent", func(in *ReservationInput) { in.Pricing = &PricingInput{RentCents: Some(int64(-5))} }, "pricing.rentCents"},
		{"guest email", func(in *ReservationInput) { in.Guest = &GuestInput{Email: Some("nope")} }, "guest.email"},
	}
	for _, tt := range tests {
		in := base()
		tt.edit(&in)
		r, err := NewReservation("res_1", "gst_1", "org_1", in, StatusInquiry, Pricing{}, time.Now())
		if tt.field == "" {
			if err != nil || r.Nights() != 31 || !r.RequiresContract || r.InquiredAt == nil {
				t.Errorf("%s: %v %+v", tt.name, err, r)
			}
			continue
		}
		if !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(apperr.As(err).Message, tt.field) {
			t.Errorf("%s: %v, want invalid_request naming %s", tt.name, err, tt.field)
		}
	}
}
