package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/bookings/internal/domain"
)

// RateLimitedError refuses an inquiry over the org's daily allowance; it
// says when a slot frees up.
type RateLimitedError struct {
	RetryAfter time.Duration
	err        *apperr.Error
}

func (e *RateLimitedError) Error() string { return e.err.Error() }
func (e *RateLimitedError) Unwrap() error { return e.err }

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1.
func (e *RateLimitedError) RetryAfterSeconds() int {
	s := int((e.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// CreateInquiry stores a booking-form submission of orgID, if the org's
// allowance has room, and queues the guest's confirmation email. A refused
// submission stores nothing; a submission that cannot be stored gives its
// slot of the allowance back.
func (s *Service) CreateInquiry(ctx context.Context, orgID string, in domain.InquiryInput) (string, error) {
	q, err := domain.NewInquiry(NewID("inq_"), orgID, in, s.now())
	if err != nil {
		return "", err
	}
	p, ok, err := s.property(ctx, q.PropertyID, true)
	if err != nil {
		return "", err
	}
	if !ok || !p.Published || p.OrgID != orgID {
		return "", apperr.Invalid("Field propertyId: %q is not a published listing of this organisation.", q.PropertyID)
	}
	org, found, err := s.Projections.Org(ctx, orgID)
	if err != nil {
		return "", err
	}
	limit := domain.DefaultInquiryDailyLimit
	if found {
		limit = org.InquiryDailyLimit
	}
	allowed, retry, err := s.Quota.Take(ctx, orgID, q.ID, limit)
	if err != nil {
		return "", apperr.Wrap(apperr.Unavailable, err, "The inquiry allowance cannot be checked right now. Retry shortly.")
	}
	if !allowed {
		if s.QuotaRejected != nil {
			s.QuotaRejected()
		}
		return "", &RateLimitedError{RetryAfter: retry, err: apperr.New(apperr.RateLimited,
			"The organisation's allowance of %d inquiries in 24 hours is spent.", limit)}
	}
	var email *domain.Confirmation
	if q.WantsConfirmation() {
		name := q.PropertyID
		if p.Identity != nil && p.Identity.Nickname != "" {
			name = p.Identity.Nickname
		}
		c := domain.NewConfirmation(q, name, org.Name)
		email = &c
	}
	if err := s.Inquiries.Insert(ctx, q, email); err != nil {
		if gerr := s.Quota.GiveBack(context.WithoutCancel(ctx), orgID, q.ID); gerr != nil {
			s.log().Warn("give back inquiry slot", "org", orgID, "inquiry", q.ID, "error", gerr)
		}
		return "", fmt.Errorf("store inquiry: %w", err)
	}
	if email != nil && s.MailQueued != nil {
		s.MailQueued()
	}
	return q.ID, nil
}

// ListInquiries returns an org's inquiries, newest first.
func (s *Service) ListInquiries(ctx context.Context, orgID string) ([]domain.Inquiry, error) {
	if _, err := s.RequireOrg(ctx, orgID); err != nil {
		return nil, err
	}
	return s.Inquiries.List(ctx, orgID)
}

// convertedID is the id of the booking an inquiry converts into: derived
// from the inquiry, so that a second conversion collides with the first,
// through a hash, so that the id shows nothing of the inquiry's: ids are
// opaque, with nothing encoded in them.
func convertedID(inquiryID string) string {
	sum := sha256.Sum256([]byte("quarters.dev/bookings/converted:" + inquiryID))
	return "res_" + hex.EncodeToString(sum[:12])
}

// ConvertInquiry turns an inquiry into a booking, status inquiry unless in
// says otherwise, with in's fields overriding the inquiry's.
func (s *Service) ConvertInquiry(ctx context.Context, orgID, inquiryID string, in domain.ReservationInput) (ReservationView, error) {
	if _, err := s.RequireOrg(ctx, orgID); err != nil {
		return ReservationView{}, err
	}
	q, err := s.Inquiries.Get(ctx, orgID, inquiryID)
	if err != nil {
		return ReservationView{}, err
	}
	if q.ReservationID != nil {
		return ReservationView{}, apperr.Conflictf("Inquiry %s was already converted into reservation %s.", q.ID, *q.ReservationID)
	}
	if in.PropertyID.Set && (in.PropertyID.Val == nil || *in.PropertyID.Val != q.PropertyID) {
		return ReservationView{}, apperr.Invalid("Field propertyId cannot differ from the inquiry's.")
	}
	merged := fromInquiry(q)
	overlay(&merged, in)
	var base domain.Pricing
	if p, ok, err := s.property(ctx, q.PropertyID, false); err != nil {
		return ReservationView{}, err
	} else if ok && p.Identity != nil && p.OrgID == orgID {
		base = p.Pricing.Snapshot()
	}
	now := s.now()
	r, err := domain.NewReservation(convertedID(q.ID), NewID("gst_"), orgID, merged, domain.StatusInquiry, base, now)
	if err != nil {
		return ReservationView{}, err
	}
	id := q.ID
	r.InquiryID = &id
	inquired := q.CreatedAt
	r.InquiredAt = &inquired
	if err := s.insert(ctx, r); err != nil {
		if apperr.Is(err, apperr.Conflict) {
			if _, found, ferr := s.Reservations.Find(ctx, r.ID); ferr == nil && found {
				// Converted before, but the inquiry missed its mark: repair it.
				if _, merr := s.Inquiries.MarkConverted(ctx, q, r.ID, now); merr != nil {
					s.log().Warn("mark inquiry converted", "inquiry", q.ID, "error", merr)
				}
				return ReservationView{}, apperr.Conflictf("Inquiry %s was already converted into reservation %s.", q.ID, r.ID)
			}
		}
		return ReservationView{}, err
	}
	if _, err := s.Inquiries.MarkConverted(ctx, q, r.ID, now); err != nil {
		return ReservationView{}, fmt.Errorf("mark inquiry %s converted: %w", q.ID, err)
	}
	return s.view(ctx, r)
}

// fromInquiry is the booking input an inquiry gives.
func fromInquiry(q domain.Inquiry) domain.ReservationInput {
	in := domain.ReservationInput{
		PropertyID: domain.Some(q.PropertyID),
		Guest: &domain.GuestInput{
			FirstName: domain.Opt[string]{Set: true, Val: q.FirstName},
			LastName:  domain.Some(q.LastName),
			Email:     domain.Some(q.Email),
			Phone:     domain.Opt[string]{Set: true, Val: q.Phone},
		},
	}
	if q.CheckIn != nil {
		in.CheckIn = domain.Some(q.CheckIn.String())
	}
	if q.CheckOut != nil {
		in.CheckOut = domain.Some(q.CheckOut.String())
	}
	for _, f := range []struct {
		v   *int
		dst *domain.Opt[int64]
	}{{q.Adults, &in.Adults}, {q.Children, &in.Children}, {q.Infants, &in.Infants}} {
		if f.v != nil {
			*f.dst = domain.Some(int64(*f.v))
		}
	}
	if q.Pets != nil {
		in.Pets = domain.Some(*q.Pets)
	}
	return in
}

// overlay copies every field present in over onto dst.
func overlay(dst *domain.ReservationInput, over domain.ReservationInput) {
	set := func(d *domain.Opt[string], o domain.Opt[string]) {
		if o.Set {
			*d = o
		}
	}
	setN := func(d *domain.Opt[int64], o domain.Opt[int64]) {
		if o.Set {
			*d = o
		}
	}
	setB := func(d *domain.Opt[bool], o domain.Opt[bool]) {
		if o.Set {
			*d = o
		}
	}
	set(&dst.Status, over.Status)
	set(&dst.CheckIn, over.CheckIn)
	set(&dst.CheckOut, over.CheckOut)
	set(&dst.Notes, over.Notes)
	setN(&dst.Adults, over.Adults)
	setN(&dst.Children, over.Children)
	setN(&dst.Infants, over.Infants)
	setB(&dst.Pets, over.Pets)
	setB(&dst.RequiresContract, over.RequiresContract)
	setB(&dst.InvoicePaid, over.InvoicePaid)
	if over.OnContract.Set {
		dst.OnContract = over.OnContract
	}
	if over.Staying.Set {
		dst.Staying = over.Staying
	}
	if over.Pricing != nil {
		dst.Pricing = over.Pricing
	}
	if g := over.Guest; g != nil {
		if dst.Guest == nil {
			dst.Guest = &domain.GuestInput{}
		}
		set(&dst.Guest.FirstName, g.FirstName)
		set(&dst.Guest.LastName, g.LastName)
		set(&dst.Guest.Email, g.Email)
		set(&dst.Guest.Phone, g.Phone)
		set(&dst.Guest.Company, g.Company)
	}
}

// Idempotency remembers the results of POSTs sent with an Idempotency-Key.
type Idempotency interface {
	Begin(ctx context.Context, orgID, key, bodyHash string) (claimed bool, prevID string, sameBody bool, err error)
	Done(ctx context.Context, orgID, key, bodyHash, id string) error
	Abandon(ctx context.Context, orgID, key string) error
}

// IdempotencyKey is the Idempotency-Key of a POST with the hash of its body.
type IdempotencyKey struct {
	Key, BodyHash string
}

// CreateInquiryOnce is CreateInquiry under an Idempotency-Key: a repeat
// with the same key and body within the window answers the first result
// without storing or counting anything; the same key with another body, or
// while the first request still runs, is a conflict. A first request that
// fails frees the key.
func (s *Service) CreateInquiryOnce(ctx context.Context, orgID string, in domain.InquiryInput, k IdempotencyKey) (string, error) {
	claimed, prev, same, err := s.Idempotency.Begin(ctx, orgID, k.Key, k.BodyHash)
	if err != nil {
		return "", apperr.Wrap(apperr.Unavailable, err, "The Idempotency-Key cannot be checked right now. Retry shortly.")
	}
	switch {
	case !claimed && !same:
		return "", apperr.Conflictf("The Idempotency-Key was used with a different body.")
	case !claimed && prev == "":
		return "", apperr.Conflictf("A request with this Idempotency-Key is still being handled; retry shortly.")
	case !claimed:
		return prev, nil
	}
	id, err := s.CreateInquiry(ctx, orgID, in)
	if err != nil {
		if aerr := s.Idempotency.Abandon(context.WithoutCancel(ctx), orgID, k.Key); aerr != nil {
			s.log().Warn("free idempotency key", "org", orgID, "error", aerr)
		}
		return "", err
	}
	if err := s.Idempotency.Done(context.WithoutCancel(ctx), orgID, k.Key, k.BodyHash, id); err != nil {
		s.log().Warn("record idempotency key", "org", orgID, "inquiry", id, "error", err)
	}
	return id, nil
}
