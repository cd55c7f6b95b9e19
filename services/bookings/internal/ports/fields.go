package ports

import (
	"bytes"
	"encoding/json"
	"strconv"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/bookings/internal/domain"
)

// fields reads a JSON object field by field, so that a value of the wrong
// type is reported with its full path ("guest.firstName") and absent fields
// are told apart from null ones. The first error sticks.
type fields struct {
	m      map[string]json.RawMessage
	prefix string
	err    error
}

// object parses raw as a JSON object; path names it in errors ("" for the
// body).
func object(raw json.RawMessage, path string) (*fields, error) {
	f := &fields{prefix: path}
	if path != "" {
		f.prefix = path + "."
	}
	if err := json.Unmarshal(raw, &f.m); err != nil || f.m == nil {
		if path == "" {
			return nil, apperr.Invalid("The body must be a JSON object.")
		}
		return nil, apperr.Invalid("Field %s must be an object.", path)
	}
	return f, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func (f *fields) fail(name, what string) {
	if f.err == nil {
		f.err = apperr.Invalid("Field %s%s must be %s.", f.prefix, name, what)
	}
}

func (f *fields) str(name string) domain.Opt[string] {
	raw, ok := f.m[name]
	if !ok {
		return domain.Opt[string]{}
	}
	if isNull(raw) {
		return domain.Opt[string]{Set: true}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.fail(name, "a string")
		return domain.Opt[string]{}
	}
	return domain.Some(s)
}

func (f *fields) integer(name string) domain.Opt[int64] {
	raw, ok := f.m[name]
	if !ok {
		return domain.Opt[int64]{}
	}
	if isNull(raw) {
		return domain.Opt[int64]{Set: true}
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		f.fail(name, "an integer")
		return domain.Opt[int64]{}
	}
	return domain.Some(n)
}

func (f *fields) boolean(name string) domain.Opt[bool] {
	raw, ok := f.m[name]
	if !ok {
		return domain.Opt[bool]{}
	}
	if isNull(raw) {
		return domain.Opt[bool]{Set: true}
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		f.fail(name, "a boolean")
		return domain.Opt[bool]{}
	}
	return domain.Some(b)
}

// obj returns the nested object name: nil sub when absent or null.
func (f *fields) obj(name string) (set bool, sub *fields) {
	raw, ok := f.m[name]
	if !ok {
		return false, nil
	}
	if isNull(raw) {
		return true, nil
	}
	sub, err := object(raw, f.prefix+name)
	if err != nil {
		if f.err == nil {
			f.err = err
		}
		return false, nil
	}
	return true, sub
}

// ptr turns an optional field into a pointer (nil when absent or null).
func ptr[T any](o domain.Opt[T]) *T { return o.Val }

// reservationInput reads a ReservationInput body.
func reservationInput(f *fields) (domain.ReservationInput, error) {
	in := domain.ReservationInput{
		PropertyID:       f.str("propertyId"),
		Status:           f.str("status"),
		CheckIn:          f.str("checkIn"),
		CheckOut:         f.str("checkOut"),
		Adults:           f.integer("adults"),
		Children:         f.integer("children"),
		Infants:          f.integer("infants"),
		Pets:             f.boolean("pets"),
		RequiresContract: f.boolean("requiresContract"),
		InvoicePaid:      f.boolean("invoicePaid"),
		Notes:            f.str("notes"),
	}
	if set, g := f.obj("guest"); set && g != nil {
		in.Guest = &domain.GuestInput{FirstName: g.str("firstName"), LastName: g.str("lastName"),
			Email: g.str("email"), Phone: g.str("phone"), Company: g.str("company")}
		if g.err != nil {
			return in, g.err
		}
	}
	if set, p := f.obj("pricing"); set && p != nil {
		in.Pricing = &domain.PricingInput{RentCents: p.integer("rentCents"), UtilitiesCents: p.integer("utilitiesCents"),
			FurnitureCents: p.integer("furnitureCents"), DepositCents: p.integer("depositCents"),
			MinStayMonths: p.integer("minStayMonths"), RateBasis: p.str("rateBasis")}
		if p.err != nil {
			return in, p.err
		}
	}
	for _, c := range []struct {
		name string
		dst  *domain.Opt[domain.ContactInput]
	}{{"onContract", &in.OnContract}, {"staying", &in.Staying}} {
		set, sub := f.obj(c.name)
		if !set {
			continue
		}
		c.dst.Set = true
		if sub != nil {
			ci := domain.ContactInput{Name: sub.str("name"), Email: sub.str("email"), Phone: sub.str("phone"), Company: sub.str("company")}
			if sub.err != nil {
				return in, sub.err
			}
			c.dst.Val = &ci
		}
	}
	return in, f.err
}

// inquiryInput reads a POST /inquiries body.
func inquiryInput(f *fields) (domain.InquiryInput, error) {
	in := domain.InquiryInput{
		PropertyID:       ptr(f.str("propertyId")),
		FirstName:        ptr(f.str("firstName")),
		LastName:         ptr(f.str("lastName")),
		Email:            ptr(f.str("email")),
		Phone:            ptr(f.str("phone")),
		CheckIn:          ptr(f.str("checkIn")),
		CheckOut:         ptr(f.str("checkOut")),
		Adults:           ptr(f.integer("adults")),
		Children:         ptr(f.integer("children")),
		Infants:          ptr(f.integer("infants")),
		Pets:             ptr(f.boolean("pets")),
		GuestCount:       ptr(f.integer("guestCount")),
		Message:          ptr(f.str("message")),
		Locale:           ptr(f.str("locale")),
		Source:           ptr(f.str("source")),
		SendConfirmation: ptr(f.boolean("sendConfirmation")),
		Form:             ptr(f.str("form")),
	}
	if raw, ok := f.m["metadata"]; ok && !isNull(raw) {
		t := bytes.TrimSpace(raw)
		if len(t) == 0 || t[0] != '{' {
			f.fail("metadata", "an object")
		}
		in.Metadata = raw
	}
	return in, f.err
}
