package domain

import (
	"strings"
	"time"

	"quarters.dev/pkg/apperr"
)

// Opt is an input field: Set when the field was present, Val nil when it
// was null.
type Opt[T any] struct {
	Set bool
	Val *T
}

// Some returns a present, non-null field.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, Val: &v} }

// GuestInput is the guest part of ReservationInput.
type GuestInput struct {
	FirstName, LastName, Email, Phone, Company Opt[string]
}

// ContactInput is an onContract or staying block.
type ContactInput struct {
	Name, Email, Phone, Company Opt[string]
}

// PricingInput is the pricing part of ReservationInput.
type PricingInput struct {
	RentCents, UtilitiesCents, FurnitureCents, DepositCents, MinStayMonths Opt[int64]
	RateBasis                                                              Opt[string]
}

// ReservationInput is an operator's booking body (create, patch or the
// overrides of a convert). Absent fields are left alone.
type ReservationInput struct {
	PropertyID       Opt[string]
	Status           Opt[string]
	Guest            *GuestInput
	CheckIn          Opt[string]
	CheckOut         Opt[string]
	Adults           Opt[int64]
	Children         Opt[int64]
	Infants          Opt[int64]
	Pets             Opt[bool]
	Pricing          *PricingInput
	RequiresContract Opt[bool]
	InvoicePaid      Opt[bool]
	OnContract       Opt[ContactInput]
	Staying          Opt[ContactInput]
	Notes            Opt[string]
}

// ParseCreateStatus reads the status of a new booking: inquiry (default),
// reserved or confirmed.
func ParseCreateStatus(o Opt[string], def Status) (Status, error) {
	if !o.Set || o.Val == nil {
		return def, nil
	}
	s, ok := ParseStatus(*o.Val)
	if !ok || s == StatusCancelled {
		return "", apperr.Invalid("Field status must be one of inquiry, reserved, confirmed, got %q.", *o.Val)
	}
	return s, nil
}

// ApplyFields applies every field of in except status and propertyId to r.
// Absent fields are left alone; null clears an optional field.
func (r *Reservation) ApplyFields(in ReservationInput) error {
	if in.CheckIn.Set {
		d, err := requiredDate("checkIn", in.CheckIn)
		if err != nil {
			return err
		}
		r.CheckIn = d
	}
	if in.CheckOut.Set {
		d, err := requiredDate("checkOut", in.CheckOut)
		if err != nil {
			return err
		}
		r.CheckOut = d
	}
	if g := in.Guest; g != nil {
		for _, f := range []struct {
			name string
			in   Opt[string]
			dst  **string
		}{
			{"guest.firstName", g.FirstName, &r.Guest.FirstName},
			{"guest.lastName", g.LastName, &r.Guest.LastName},
			{"guest.email", g.Email, &r.Guest.Email},
			{"guest.phone", g.Phone, &r.Guest.Phone},
			{"guest.company", g.Company, &r.Guest.Company},
		} {
			if err := setText(f.name, f.in, f.dst); err != nil {
				return err
			}
		}
		if r.Guest.Email != nil && *r.Guest.Email != "" && !ValidEmail(*r.Guest.Email) {
			return apperr.Invalid("Field guest.email must be an email address.")
		}
	}
	for _, f := range []struct {
		name string
		in   Opt[int64]
		dst  **int
	}{
		{"adults", in.Adults, &r.Adults}, {"children", in.Children, &r.Children}, {"infants", in.Infants, &r.Infants},
	} {
		if !f.in.Set {
			continue
		}
		if f.in.Val == nil {
			*f.dst = nil
			continue
		}
		if *f.in.Val < 0 || *f.in.Val > 1000 {
			return apperr.Invalid("Field %s must be an integer from 0 to 1000.", f.name)
		}
		n := int(*f.in.Val)
		*f.dst = &n
	}
	if in.Pets.Set {
		r.Pets = in.Pets.Val != nil && *in.Pets.Val
	}
	if p := in.Pricing; p != nil {
		if err := r.Pricing.apply(*p); err != nil {
			return err
		}
	}
	if in.RequiresContract.Set {
		r.RequiresContract = in.RequiresContract.Val == nil || *in.RequiresContract.Val
	}
	if in.InvoicePaid.Set {
		r.InvoicePaid = in.InvoicePaid.Val != nil && *in.InvoicePaid.Val
	}
	for _, f := range []struct {
		name string
		in   Opt[ContactInput]
		dst  **Contact
	}{
		{"onContract", in.OnContract, &r.OnContract}, {"staying", in.Staying, &r.Staying},
	} {
		if !f.in.Set {
			continue
		}
		if f.in.Val == nil {
			*f.dst = nil
			continue
		}
		c := Contact{}
		if *f.dst != nil {
			c = **f.dst
		}
		ci := *f.in.Val
		for _, g := range []struct {
			name string
			in   Opt[string]
			dst  **string
		}{
			{f.name + ".name", ci.Name, &c.Name}, {f.name + ".email", ci.Email, &c.Email},
			{f.name + ".phone", ci.Phone, &c.Phone}, {f.name + ".company", ci.Company, &c.Company},
		} {
			if err := setText(g.name, g.in, g.dst); err != nil {
				return err
			}
		}
		*f.dst = &c
	}
	if in.Notes.Set {
		if in.Notes.Val == nil {
			r.Notes = nil
		} else {
			n := *in.Notes.Val
			r.Notes = &n
		}
	}
	return nil
}

func (p *Pricing) apply(in PricingInput) error {
	for _, f := range []struct {
		name string
		in   Opt[int64]
		dst  **int64
	}{
		{"pricing.rentCents", in.RentCents, &p.RentCents},
		{"pricing.utilitiesCents", in.UtilitiesCents, &p.UtilitiesCents},
		{"pricing.furnitureCents", in.FurnitureCents, &p.FurnitureCents},
		{"pricing.depositCents", in.DepositCents, &p.DepositCents},
	} {
		if !f.in.Set {
			continue
		}
		if f.in.Val == nil {
			*f.dst = nil
			continue
		}
		if *f.in.Val < 0 {
			return apperr.Invalid("Field %s must not be negative.", f.name)
		}
		v := *f.in.Val
		*f.dst = &v
	}
	if in.MinStayMonths.Set {
		if in.MinStayMonths.Val == nil {
			p.MinStayMonths = nil
		} else {
			if *in.MinStayMonths.Val < 0 || *in.MinStayMonths.Val > 1200 {
				return apperr.Invalid("Field pricing.minStayMonths must be an integer from 0 to 1200.")
			}
			n := int(*in.MinStayMonths.Val)
			p.MinStayMonths = &n
		}
	}
	if in.RateBasis.Set {
		switch {
		case in.RateBasis.Val == nil:
			p.Basis = BasisMonthly
		case *in.RateBasis.Val == string(BasisMonthly), *in.RateBasis.Val == string(BasisNightly):
			p.Basis = RateBasis(*in.RateBasis.Val)
		default:
			return apperr.Invalid("Field pricing.rateBasis must be monthly or nightly, got %q.", *in.RateBasis.Val)
		}
	}
	return nil
}

func requiredDate(field string, o Opt[string]) (Date, error) {
	if o.Val == nil {
		return Date{}, apperr.Invalid("Field %s is required (YYYY-MM-DD).", field)
	}
	d, ok := ParseDate(strings.TrimSpace(*o.Val))
	if !ok {
		return Date{}, apperr.Invalid("Field %s must be a date YYYY-MM-DD, got %q.", field, *o.Val)
	}
	return d, nil
}

func setText(field string, in Opt[string], dst **string) error {
	if !in.Set {
		return nil
	}
	if in.Val == nil {
		*dst = nil
		return nil
	}
	s := strings.TrimSpace(*in.Val)
	if strings.ContainsAny(s, "\r\n") {
		return apperr.Invalid("Field %s must not contain line breaks.", field)
	}
	if len(s) > 1000 {
		return apperr.Invalid("Field %s is longer than 1000 characters.", field)
	}
	*dst = &s
	return nil
}

// NewReservation builds a booking of orgID from an operator's input: the
// pricing starts from base (the listing's prices, if published) and the
// input's pricing fields override it; requiresContract defaults to true.
func NewReservation(id, guestID, orgID string, in ReservationInput, def Status, base Pricing, now time.Time) (Reservation, error) {
	r := Reservation{ID: id, OrgID: orgID, RequiresContract: true, Pricing: base, CreatedAt: now, UpdatedAt: now, Version: 1}
	r.Guest.ID = guestID
	if r.Pricing.Basis == "" {
		r.Pricing.Basis = BasisMonthly
	}
	if !in.PropertyID.Set || in.PropertyID.Val == nil || strings.TrimSpace(*in.PropertyID.Val) == "" {
		return r, apperr.Invalid("Field propertyId is required.")
	}
	r.PropertyID = strings.TrimSpace(*in.PropertyID.Val)
	st, err := ParseCreateStatus(in.Status, def)
	if err != nil {
		return r, err
	}
	r.Status = st
	if !in.CheckIn.Set {
		return r, apperr.Invalid("Field checkIn is required (YYYY-MM-DD).")
	}
	if !in.CheckOut.Set {
		return r, apperr.Invalid("Field checkOut is required (YYYY-MM-DD).")
	}
	if err := r.ApplyFields(in); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	r.Stamp(st, now)
	return r, nil
}
