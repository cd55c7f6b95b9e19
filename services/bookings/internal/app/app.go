// Package app holds the bookings service's use cases: operator changes to
// reservations under the status rules and the no-overlap rule, the public
// reads, inquiry submission under the daily allowance, conversion, and the
// effects of other services' events.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/await"
	"quarters.dev/services/bookings/internal/domain"
)

// Reservations stores bookings. Writes carry the booking's event in the same
// single-document update (the outbox).
type Reservations interface {
	// Insert stores a new booking with reservation.created; an existing id
	// is a conflict.
	Insert(ctx context.Context, r domain.Reservation) error
	// Get returns a live booking of orgID (not_found otherwise).
	Get(ctx context.Context, orgID, id string) (domain.Reservation, error)
	// Find returns a live booking of any org; found is false otherwise.
	Find(ctx context.Context, id string) (r domain.Reservation, found bool, err error)
	// Replace stores r if the stored version is still prevVersion, with
	// reservation.updated naming prevStatus. stored is false on a version
	// mismatch.
	Replace(ctx context.Context, r domain.Reservation, prevVersion int64, prevStatus domain.Status) (stored bool, err error)
	// Delete removes r from every read if its version is still r.Version,
	// with reservation.deleted.
	Delete(ctx context.Context, r domain.Reservation) (deleted bool, err error)
	// List returns one page of the query and the total across pages.
	List(ctx context.Context, q domain.ListQuery) ([]domain.Reservation, int64, error)
	// Touch moves a live booking's updatedAt forward to at (never back),
	// without an event: something the booking shows changed elsewhere.
	Touch(ctx context.Context, id string, at time.Time) error
}

// Occupancy keeps, per property, the stays of its reserved and confirmed
// bookings, changed only by compare-and-set so that two overlapping holds
// can never both be stored.
type Occupancy interface {
	// Hold records reservationID's stay, replacing its previous one; a
	// stay overlapping another booking's is a conflict.
	Hold(ctx context.Context, orgID, propertyID, reservationID string, in, out domain.Date) error
	// Release drops reservationID's stay.
	Release(ctx context.Context, propertyID, reservationID string) error
}

// Inquiries stores inquiries; the confirmation email waits in the inquiry's
// own document until it is sent.
type Inquiries interface {
	Insert(ctx context.Context, q domain.Inquiry, email *domain.Confirmation) error
	Get(ctx context.Context, orgID, id string) (domain.Inquiry, error)
	List(ctx context.Context, orgID string) ([]domain.Inquiry, error)
	// MarkConverted records the booking an inquiry became, with
	// inquiry.converted; converted is false when it already names one.
	MarkConverted(ctx context.Context, q domain.Inquiry, reservationID string, at time.Time) (converted bool, err error)
}

// Projections hold what bookings know of other services' data.
type Projections interface {
	Org(ctx context.Context, id string) (domain.Org, bool, error)
	Property(ctx context.Context, id string) (domain.Property, bool, error)
	Properties(ctx context.Context, ids []string) (map[string]domain.Property, error)
	Agreements(ctx context.Context, reservationIDs []string) (map[string]domain.Agreement, error)
}

// Quota decides the inquiry allowance.
type Quota interface {
	// Take counts one inquiry (member) of orgID if fewer than limit were
	// counted in the window; otherwise it reports when a slot frees up.
	Take(ctx context.Context, orgID, member string, limit int) (ok bool, retryAfter time.Duration, err error)
	// GiveBack uncounts member.
	GiveBack(ctx context.Context, orgID, member string) error
}

// Service is the bookings application layer.
type Service struct {
	Reservations Reservations
	Occupancy    Occupancy
	Inquiries    Inquiries
	Projections  Projections
	Writer       ProjectionWriter
	Quota        Quota
	Idempotency  Idempotency
	Log          *slog.Logger
	// ProjectionWait bounds how long an operator call waits for an org or
	// property created a moment ago elsewhere to reach the projections.
	ProjectionWait time.Duration
	// QuotaRejected is called for each inquiry refused by the allowance.
	QuotaRejected func()
	// MailQueued wakes the mailer after an inquiry with an email is stored.
	MailQueued func()
	Now        func() time.Time
}

const maxAttempts = 30

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// NewID returns an opaque random id with a short prefix.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ReservationView is a booking with what the public resource joins to it.
type ReservationView struct {
	domain.Reservation
	Property  *domain.PropertyIdentity
	Agreement *domain.Agreement
}

// CheckOrg answers not found for an org bookings do not know, after waiting
// briefly for one just created.
func (s *Service) CheckOrg(ctx context.Context, orgID string) error {
	_, err := s.RequireOrg(ctx, orgID)
	return err
}

// RequireOrg returns the org, waiting briefly for one just created.
func (s *Service) RequireOrg(ctx context.Context, orgID string) (domain.Org, error) {
	o, ok, err := await.Found(ctx, s.ProjectionWait, func(ctx context.Context) (domain.Org, bool, error) {
		return s.Projections.Org(ctx, orgID)
	})
	if err == nil && !ok {
		err = apperr.NotFoundf("No organisation %s.", orgID)
	}
	return o, err
}

// property returns what is known of a property. When wait is set and the
// property was never heard of, it waits briefly for one just published.
func (s *Service) property(ctx context.Context, id string, wait bool) (domain.Property, bool, error) {
	var d time.Duration
	if wait {
		d = s.ProjectionWait
	}
	return await.Found(ctx, d, func(ctx context.Context) (domain.Property, bool, error) {
		return s.Projections.Property(ctx, id)
	})
}

// CreateReservation creates a booking for an operator.
func (s *Service) CreateReservation(ctx context.Context, orgID string, in domain.ReservationInput) (ReservationView, error) {
	if _, err := s.RequireOrg(ctx, orgID); err != nil {
		return ReservationView{}, err
	}
	var base domain.Pricing
	if in.PropertyID.Val != nil {
		p, ok, err := s.property(ctx, *in.PropertyID.Val, false)
		if err != nil {
			return ReservationView{}, err
		}
		if ok && p.OrgID != orgID {
			return ReservationView{}, apperr.Invalid("Field propertyId names a property of another organisation.")
		}
		if ok && p.Identity != nil {
			base = p.Pricing.Snapshot()
		}
	}
	r, err := domain.NewReservation(NewID("res_"), NewID("gst_"), orgID, in, domain.StatusInquiry, base, s.now())
	if err != nil {
		return ReservationView{}, err
	}
	if err := s.insert(ctx, r); err != nil {
		return ReservationView{}, err
	}
	return s.view(ctx, r)
}

// insert holds the stay (for a blocking booking) and stores the booking; a
// failed store puts the hold back to what the stored record says.
func (s *Service) insert(ctx context.Context, r domain.Reservation) error {
	if r.Status.Blocks() {
		if err := s.Occupancy.Hold(ctx, r.OrgID, r.PropertyID, r.ID, r.CheckIn, r.CheckOut); err != nil {
			return err
		}
	}
	if err := s.Reservations.Insert(ctx, r); err != nil {
		s.syncHold(context.WithoutCancel(ctx), r.PropertyID, r.ID)
		return err
	}
	return nil
}

// syncHold makes the occupancy agree with the stored booking after a write
// that failed half-way.
func (s *Service) syncHold(ctx context.Context, propertyID, id string) {
	r, found, err := s.Reservations.Find(ctx, id)
	switch {
	case err != nil:
		s.log().Warn("restore occupancy: read booking", "reservation", id, "error", err)
		return
	case found && r.Status.Blocks():
		err = s.Occupancy.Hold(ctx, r.OrgID, r.PropertyID, r.ID, r.CheckIn, r.CheckOut)
	default:
		err = s.Occupancy.Release(ctx, propertyID, id)
	}
	if err != nil {
		s.log().Warn("restore occupancy", "reservation", id, "error", err)
	}
}

// UpdateReservation changes a booking for an operator.
//
// The organisation is read only when the answer is an error: a stored
// reservation proves its organisation exists (organisations are never
// deleted), and an unknown organisation answers 404 before any other error,
// as if it had been checked first.
func (s *Service) UpdateReservation(ctx context.Context, orgID, id string, in domain.ReservationInput) (ReservationView, error) {
	v, err := s.updateReservation(ctx, orgID, id, in)
	if err != nil {
		if _, orgErr := s.RequireOrg(ctx, orgID); orgErr != nil {
			return ReservationView{}, orgErr
		}
		return ReservationView{}, err
	}
	return v, nil
}

func (s *Service) updateReservation(ctx context.Context, orgID, id string, in domain.ReservationInput) (ReservationView, error) {
	if in.PropertyID.Set {
		return ReservationView{}, apperr.Invalid("Field propertyId cannot be changed.")
	}
	var next *domain.Status
	if in.Status.Set {
		if in.Status.Val == nil {
			return ReservationView{}, apperr.Invalid("Field status must be one of inquiry, reserved, confirmed, cancelled.")
		}
		st, ok := domain.ParseStatus(*in.Status.Val)
		if !ok {
			return ReservationView{}, apperr.Invalid("Field status must be one of inquiry, reserved, confirmed, cancelled, got %q.", *in.Status.Val)
		}
		next = &st
	}
	if in.RequiresContract.Set {
		return ReservationView{}, apperr.Invalid("Field requiresContract is resolved once at booking and cannot be changed.")
	}
	r, err := s.change(ctx, orgID, id, func(r *domain.Reservation, now time.Time) error {
		if err := r.ApplyFields(in); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return err
		}
		if next != nil {
			return r.MoveTo(*next, now)
		}
		return nil
	})
	if err != nil {
		return ReservationView{}, err
	}
	return s.view(ctx, r)
}

// change applies fn to a stored booking and stores it under its version,
// keeping the occupancy in step. Nothing is written when fn changes nothing.
func (s *Service) change(ctx context.Context, orgID, id string, fn func(*domain.Reservation, time.Time) error) (domain.Reservation, error) {
	for range maxAttempts {
		var (
			r   domain.Reservation
			err error
		)
		if orgID == "" {
			var found bool
			r, found, err = s.Reservations.Find(ctx, id)
			if err == nil && !found {
				err = apperr.NotFoundf("No reservation %s.", id)
			}
		} else {
			r, err = s.Reservations.Get(ctx, orgID, id)
		}
		if err != nil {
			return domain.Reservation{}, err
		}
		prev := r
		now := s.now()
		if err := fn(&r, now); err != nil {
			return domain.Reservation{}, err
		}
		if same(prev, r) {
			return r, nil
		}
		r.Version = prev.Version + 1
		r.UpdatedAt = now
		if !r.UpdatedAt.After(prev.UpdatedAt) {
			r.UpdatedAt = prev.UpdatedAt.Add(time.Millisecond)
		}
		if r.Status.Blocks() {
			if err := s.Occupancy.Hold(ctx, r.OrgID, r.PropertyID, r.ID, r.CheckIn, r.CheckOut); err != nil {
				if apperr.Is(err, apperr.Conflict) {
					return domain.Reservation{}, err
				}
				s.syncHold(context.WithoutCancel(ctx), r.PropertyID, r.ID)
				return domain.Reservation{}, err
			}
		}
		stored, err := s.Reservations.Replace(ctx, r, prev.Version, prev.Status)
		if err != nil || !stored {
			s.syncHold(context.WithoutCancel(ctx), r.PropertyID, r.ID)
			if err != nil {
				return domain.Reservation{}, err
			}
			continue
		}
		if prev.Status.Blocks() && !r.Status.Blocks() {
			if err := s.Occupancy.Release(ctx, r.PropertyID, r.ID); err != nil {
				s.log().Warn("release occupancy", "reservation", r.ID, "error", err)
				s.syncHold(context.WithoutCancel(ctx), r.PropertyID, r.ID)
			}
		}
		return r, nil
	}
	return domain.Reservation{}, apperr.Conflictf("Reservation %s is being changed concurrently; retry.", id)
}

// same reports whether a change left the booking as it was.
func same(a, b domain.Reservation) bool {
	return fmt.Sprintf("%+v", deref(a)) == fmt.Sprintf("%+v", deref(b))
}

// deref renders the pointer fields by value so that same compares content.
func deref(r domain.Reservation) []any {
	p := func(v any) any {
		switch x := v.(type) {
		case *string:
			if x != nil {
				return *x
			}
		case *int:
			if x != nil {
				return *x
			}
		case *int64:
			if x != nil {
				return *x
			}
		case *time.Time:
			if x != nil {
				return x.UnixMilli()
			}
		case *domain.Contact:
			if x != nil {
				return []any{"c", p2(x.Name), p2(x.Email), p2(x.Phone), p2(x.Company)}
			}
		}
		return nil
	}
	g, pr := r.Guest, r.Pricing
	return []any{
		r.Status, r.CheckIn, r.CheckOut, p(r.Adults), p(r.Children), p(r.Infants), r.Pets, r.RequiresContract, r.InvoicePaid,
		p(g.FirstName), p(g.LastName), p(g.Email), p(g.Phone), p(g.Company),
		p(pr.RentCents), p(pr.UtilitiesCents), p(pr.FurnitureCents), p(pr.DepositCents), p(pr.MinStayMonths), pr.Basis,
		p(r.OnContract), p(r.Staying), p(r.Notes),
		p(r.InquiredAt), p(r.ReservedAt), p(r.ConfirmedAt), p(r.CancelledAt),
	}
}

func p2(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// DeleteReservation deletes a booking outright.
func (s *Service) DeleteReservation(ctx context.Context, orgID, id string) error {
	if _, err := s.RequireOrg(ctx, orgID); err != nil {
		return err
	}
	for range maxAttempts {
		r, err := s.Reservations.Get(ctx, orgID, id)
		if err != nil {
			return err
		}
		r.UpdatedAt = s.now()
		deleted, err := s.Reservations.Delete(ctx, r)
		if err != nil {
			return err
		}
		if !deleted {
			continue
		}
		if r.Status.Blocks() {
			if err := s.Occupancy.Release(ctx, r.PropertyID, r.ID); err != nil {
				s.log().Warn("release occupancy", "reservation", r.ID, "error", err)
			}
		}
		return nil
	}
	return apperr.Conflictf("Reservation %s is being changed concurrently; retry.", id)
}

// GetReservation returns a booking of the caller's org.
func (s *Service) GetReservation(ctx context.Context, orgID, id string) (ReservationView, error) {
	r, err := s.Reservations.Get(ctx, orgID, id)
	if err != nil {
		return ReservationView{}, err
	}
	return s.view(ctx, r)
}

// Page is one page of GET /reservations.
type Page struct {
	Reservations []ReservationView
	Total        int64
}

// ListReservations answers GET /reservations.
func (s *Service) ListReservations(ctx context.Context, q domain.ListQuery) (Page, error) {
	rs, total, err := s.Reservations.List(ctx, q)
	if err != nil {
		return Page{}, err
	}
	views, err := s.views(ctx, rs)
	if err != nil {
		return Page{}, err
	}
	return Page{Reservations: views, Total: total}, nil
}

func (s *Service) view(ctx context.Context, r domain.Reservation) (ReservationView, error) {
	vs, err := s.views(ctx, []domain.Reservation{r})
	if err != nil {
		return ReservationView{}, err
	}
	return vs[0], nil
}

// views joins the property identities and current agreements to bookings,
// with one read of each projection.
func (s *Service) views(ctx context.Context, rs []domain.Reservation) ([]ReservationView, error) {
	out := make([]ReservationView, len(rs))
	if len(rs) == 0 {
		return out, nil
	}
	pids := make([]string, 0, len(rs))
	ids := make([]string, 0, len(rs))
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.PropertyID] {
			seen[r.PropertyID] = true
			pids = append(pids, r.PropertyID)
		}
		ids = append(ids, r.ID)
	}
	props, err := s.Projections.Properties(ctx, pids)
	if err != nil {
		return nil, err
	}
	agreements, err := s.Projections.Agreements(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		out[i].Reservation = r
		if p, ok := props[r.PropertyID]; ok && p.OrgID == r.OrgID && p.Identity != nil {
			id := *p.Identity
			out[i].Property = &id
		}
		if a, ok := agreements[r.ID]; ok {
			out[i].Agreement = &a
		}
	}
	return out, nil
}

// ConfirmByAgreement applies a completed report on the current agreement of
// a booking: a reserved booking becomes confirmed. Anything else is left
// as it is, so a redelivered report changes nothing.
func (s *Service) ConfirmByAgreement(ctx context.Context, reservationID string) error {
	_, err := s.change(ctx, "", reservationID, func(r *domain.Reservation, now time.Time) error {
		if r.Status == domain.StatusReserved {
			return r.MoveTo(domain.StatusConfirmed, now)
		}
		return nil
	})
	if apperr.Is(err, apperr.NotFound) {
		return nil
	}
	if apperr.Is(err, apperr.Conflict) {
		// A reserved booking may always become confirmed: a conflict here
		// is only contention, which the consumer retries.
		return fmt.Errorf("confirm reservation %s: %w", reservationID, err)
	}
	return err
}

// agreementShown identifies what a booking shows of its current agreement:
// the agreement and its last change.
func agreementShown(a *domain.Agreement) string {
	if a == nil {
		return ""
	}
	return a.ID + "@" + a.UpdatedAt.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

// ProjectionWriter stores what other services' events say.
type ProjectionWriter interface {
	PutOrg(ctx context.Context, o domain.Org) (bool, error)
	PutProperty(ctx context.Context, p domain.Property) (bool, error)
	UnpublishProperty(ctx context.Context, id, orgID string, version int64) (bool, error)
	// PutAgreement stores the current agreement of a booking from an event
	// of the given version, with when what the booking shows of it last
	// changed; stored is false for an event older than the stored one.
	PutAgreement(ctx context.Context, reservationID, orgID string, version int64, a *domain.Agreement, changedAt time.Time) (stored bool, err error)
	// AgreementChange returns the stored current agreement and when it last
	// changed (zero when never).
	AgreementChange(ctx context.Context, reservationID string) (*domain.Agreement, time.Time, error)
}

// ApplyOrg stores an org's settings from an org event.
func (s *Service) ApplyOrg(ctx context.Context, o domain.Org) error {
	_, err := s.Writer.PutOrg(ctx, o)
	return err
}

// ApplyListing stores a published snapshot's identity and prices.
func (s *Service) ApplyListing(ctx context.Context, p domain.Property) error {
	_, err := s.Writer.PutProperty(ctx, p)
	return err
}

// ApplyUnpublished records that a property left the website.
func (s *Service) ApplyUnpublished(ctx context.Context, id, orgID string, version int64) error {
	_, err := s.Writer.UnpublishProperty(ctx, id, orgID, version)
	return err
}

// ApplyAgreement stores the current agreement of a booking and, when the
// stored current agreement is completed, confirms a reserved booking. The
// check is on what is stored (this event's agreement, or a newer one when
// the event is stale), so a redelivery after a crash between the two steps
// still confirms, and a stale event changes nothing.
//
// A booking shows its current agreement, so a change of what it shows moves
// the booking's updatedAt, the incremental-sync key, to when the change was
// stored: an updatedSince read finds it, and sees the new agreement, since
// the agreement is stored first. The moment is stored with the agreement,
// so a redelivery after a crash between the two writes still moves it.
func (s *Service) ApplyAgreement(ctx context.Context, reservationID, orgID string, version int64, a *domain.Agreement) error {
	prev, changedAt, err := s.Writer.AgreementChange(ctx, reservationID)
	if err != nil {
		return err
	}
	changed := agreementShown(prev) != agreementShown(a)
	if changed {
		changedAt = s.now()
	}
	stored, err := s.Writer.PutAgreement(ctx, reservationID, orgID, version, a, changedAt)
	if err != nil {
		return err
	}
	if !changedAt.IsZero() && (stored || !changed) {
		if err := s.Reservations.Touch(ctx, reservationID, changedAt); err != nil {
			return err
		}
	}
	// What is stored now: this event's agreement, or the newer one read
	// above when this event was stale.
	cur := prev
	if stored {
		cur = a
	}
	if cur == nil || cur.Status != domain.AgreementCompleted {
		return nil
	}
	return s.ConfirmByAgreement(ctx, reservationID)
}
