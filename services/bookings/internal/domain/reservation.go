// Package domain holds the bookings service's types and rules: reservations
// with their status machine and stamps, inquiries with the rules of the
// submission form, and the projections of other services' data that bookings
// read (organisations, published listings, current agreements).
package domain

import (
	"time"

	"quarters.dev/pkg/apperr"
)

// Status is a reservation's status.
type Status string

// The reservation statuses. Only reserved and confirmed block days.
const (
	StatusInquiry   Status = "inquiry"
	StatusReserved  Status = "reserved"
	StatusConfirmed Status = "confirmed"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{StatusInquiry, StatusReserved, StatusConfirmed, StatusCancelled}

// ParseStatus returns the status named s.
func ParseStatus(s string) (Status, bool) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// Blocks reports whether a booking in this status occupies its days.
func (s Status) Blocks() bool { return s == StatusReserved || s == StatusConfirmed }

// CanMoveTo reports whether the admin API may change a booking from s to
// next: inquiry → reserved | confirmed | cancelled; reserved → confirmed |
// cancelled; confirmed → cancelled.
func (s Status) CanMoveTo(next Status) bool {
	switch s {
	case StatusInquiry:
		return next == StatusReserved || next == StatusConfirmed || next == StatusCancelled
	case StatusReserved:
		return next == StatusConfirmed || next == StatusCancelled
	case StatusConfirmed:
		return next == StatusCancelled
	}
	return false
}

// RateBasis says whether rent is quoted per month or per night.
type RateBasis string

// The rate bases.
const (
	BasisMonthly RateBasis = "monthly"
	BasisNightly RateBasis = "nightly"
)

// Guest is the person who booked.
type Guest struct {
	ID        string
	FirstName *string
	LastName  *string
	Email     *string
	Phone     *string
	Company   *string
}

// Name is the guest's full name: first and last name joined by a space.
func (g Guest) Name() string {
	switch {
	case g.FirstName != nil && *g.FirstName != "" && g.LastName != nil && *g.LastName != "":
		return *g.FirstName + " " + *g.LastName
	case g.LastName != nil && *g.LastName != "":
		return *g.LastName
	case g.FirstName != nil:
		return *g.FirstName
	}
	return ""
}

// Contact is a further person named on a booking.
type Contact struct {
	Name    *string
	Email   *string
	Phone   *string
	Company *string
}

// Pricing is the money snapshot of a booking, in euro-cents.
type Pricing struct {
	RentCents      *int64
	UtilitiesCents *int64
	FurnitureCents *int64
	DepositCents   *int64
	MinStayMonths  *int
	Basis          RateBasis
}

// MonthlyCents is rent plus utilities plus furniture when all three are set
// and rent is monthly; nil otherwise.
func (p Pricing) MonthlyCents() *int64 {
	if p.Basis == BasisNightly || p.RentCents == nil || p.UtilitiesCents == nil || p.FurnitureCents == nil {
		return nil
	}
	sum := *p.RentCents + *p.UtilitiesCents + *p.FurnitureCents
	return &sum
}

// Reservation is a booking.
type Reservation struct {
	ID               string
	OrgID            string
	Status           Status
	PropertyID       string
	Guest            Guest
	CheckIn          Date
	CheckOut         Date
	Adults           *int
	Children         *int
	Infants          *int
	Pets             bool
	Pricing          Pricing
	RequiresContract bool
	InvoicePaid      bool
	OnContract       *Contact
	Staying          *Contact
	Notes            *string
	InquiryID        *string
	InquiredAt       *time.Time
	ReservedAt       *time.Time
	ConfirmedAt      *time.Time
	CancelledAt      *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Version          int64
}

// Nights is check-out minus check-in.
func (r *Reservation) Nights() int { return r.CheckIn.DaysUntil(r.CheckOut) }

// Stamp records that the booking entered status at now. A stamp once set is
// never changed or cleared.
func (r *Reservation) Stamp(s Status, now time.Time) {
	t := now
	var field **time.Time
	switch s {
	case StatusInquiry:
		field = &r.InquiredAt
	case StatusReserved:
		field = &r.ReservedAt
	case StatusConfirmed:
		field = &r.ConfirmedAt
	case StatusCancelled:
		field = &r.CancelledAt
	default:
		return
	}
	if *field == nil {
		*field = &t
	}
}

// MoveTo changes the status under the admin API's rules, stamping the new
// status. Moving to the current status changes nothing.
func (r *Reservation) MoveTo(next Status, now time.Time) error {
	if next == r.Status {
		return nil
	}
	if !r.Status.CanMoveTo(next) {
		return apperr.Conflictf("A %s booking cannot become %s.", r.Status, next)
	}
	r.Status = next
	r.Stamp(next, now)
	return nil
}

// Validate checks the invariants every stored booking keeps.
func (r *Reservation) Validate() error {
	if r.PropertyID == "" {
		return apperr.Invalid("Field propertyId is required.")
	}
	if r.CheckIn.IsZero() {
		return apperr.Invalid("Field checkIn is required (YYYY-MM-DD).")
	}
	if r.CheckOut.IsZero() {
		return apperr.Invalid("Field checkOut is required (YYYY-MM-DD).")
	}
	if !r.CheckIn.Before(r.CheckOut) {
		return apperr.Invalid("Field checkOut must be after checkIn.")
	}
	return nil
}

// Overlaps reports whether two stays share a night: check-out is exclusive,
// so one stay may start on the day the other ends.
func Overlaps(aIn, aOut, bIn, bOut Date) bool {
	return aIn.Before(bOut) && bIn.Before(aOut)
}
