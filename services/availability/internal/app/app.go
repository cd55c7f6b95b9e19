// Package app holds the availability service's use cases: the calendar of a
// published listing, the operator's blocks, and the projections of orgs,
// listings and reservations that feed them.
package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/await"
	"quarters.dev/services/availability/internal/domain"
)

// Orgs is the projection of the organisations auth announces.
type Orgs interface {
	Exists(ctx context.Context, id string) (bool, error)
	// Apply records org id at version unless a version at least as new is
	// recorded.
	Apply(ctx context.Context, id string, version int64) error
}

// Listings is the projection of the catalog's listings.
type Listings interface {
	Get(ctx context.Context, id string) (domain.Listing, bool, error)
	// Apply stores l unless a version at least as new is stored.
	Apply(ctx context.Context, l domain.Listing) error
}

// Reservations is the projection of the bookings' day-blocking facts: the
// last applied state of every reservation.
type Reservations interface {
	Get(ctx context.Context, id string) (domain.Reservation, bool, error)
	// Apply stores r unless a version at least as new is stored.
	Apply(ctx context.Context, r domain.Reservation) error
}

// Change is what an update of a calendar did: Changed says whether to store
// it; Days, when set, are the days whose status changed, announced in a
// calendar.updated event written with the change.
type Change struct {
	Changed bool
	Days    *domain.Span
}

// Calendars keeps one calendar per property.
type Calendars interface {
	// Get returns the property's calendar; an empty one when it has none.
	Get(ctx context.Context, propertyID string) (domain.Calendar, error)
	// Update loads the calendar (an empty one when there is none), lets
	// change modify it and stores it with its event under a version guard,
	// retrying on a concurrent change. Nothing is written unless the change
	// says so.
	Update(ctx context.Context, propertyID string, change func(*domain.Calendar) (Change, error)) (domain.Calendar, error)
}

// Service is the availability service's application layer.
type Service struct {
	Orgs         Orgs
	Listings     Listings
	Reservations Reservations
	Calendars    Calendars
	// ListingWait bounds how long a call about a listing availability has
	// never heard of waits for one published a moment ago to arrive
	// through its event, before answering 404.
	ListingWait time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	zones sync.Map // IANA name → *time.Location
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// NewBlockID returns a new opaque block id.
func NewBlockID() string { return "blk_" + uuid.NewString() }

// location resolves a listing's zone, once per name. A zone this process
// cannot resolve counts as UTC rather than failing every request.
func (s *Service) location(name string) *time.Location {
	if v, ok := s.zones.Load(name); ok {
		return v.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" {
		loc = time.UTC
	}
	s.zones.Store(name, loc)
	return loc
}

// CalendarView is the calendar of a listing over a range of days.
type CalendarView struct {
	First     domain.Date
	Days      []domain.Status
	MinNights int
}

// Calendar returns the days of a published listing of orgID, live: the
// bookings and blocks stored when the request is served.
func (s *Service) Calendar(ctx context.Context, orgID, listingID string, q domain.RangeQuery, buf []domain.Status) (CalendarView, error) {
	l, ok, err := s.listing(ctx, listingID)
	if err != nil {
		return CalendarView{}, err
	}
	if !ok || !l.Published || l.OrgID != orgID {
		return CalendarView{}, apperr.NotFoundf("No listing %s.", listingID)
	}
	first, last, err := q.Resolve(s.now(), s.location(l.Timezone))
	if err != nil {
		return CalendarView{}, err
	}
	cal, err := s.Calendars.Get(ctx, listingID)
	if err != nil {
		return CalendarView{}, err
	}
	return CalendarView{First: first, Days: cal.Statuses(first, last, buf), MinNights: l.BaseMinNights()}, nil
}

// checkProperty answers 404 unless org is known and the property is one of
// its listings (published or not): availability knows a property only from
// the catalog's listing events.
func (s *Service) checkProperty(ctx context.Context, orgID, propertyID string) error {
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return err
	}
	l, ok, err := s.listing(ctx, propertyID)
	if err != nil {
		return err
	}
	if !ok || l.Deleted || l.OrgID != orgID {
		return apperr.NotFoundf("No property %s in organisation %s.", propertyID, orgID)
	}
	return nil
}

// RequireOrg answers not found for an org availability does not know.
func (s *Service) RequireOrg(ctx context.Context, orgID string) error {
	ok, err := s.Orgs.Exists(ctx, orgID)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.NotFoundf("No organisation %s.", orgID)
	}
	return nil
}

// listing returns what availability knows of a listing. One it has never
// heard of is waited for, up to ListingWait: a publish answers before its
// event has reached this service, and the caller's next request should
// find the listing all the same. A listing known to be unpublished is not
// waited for.
func (s *Service) listing(ctx context.Context, id string) (domain.Listing, bool, error) {
	return await.Found(ctx, s.ListingWait, func(ctx context.Context) (domain.Listing, bool, error) {
		return s.Listings.Get(ctx, id)
	})
}

// BlockInput is an operator's new block.
type BlockInput struct {
	Start, End string
	Reason     *string
}

// AddBlock makes the days from start up to (not including) end unavailable.
func (s *Service) AddBlock(ctx context.Context, orgID, propertyID string, in BlockInput) (domain.Block, error) {
	b, err := domain.NewBlock(NewBlockID(), in.Start, in.End, in.Reason, s.now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return domain.Block{}, err
	}
	if err := s.checkProperty(ctx, orgID, propertyID); err != nil {
		return domain.Block{}, err
	}
	_, err = s.Calendars.Update(ctx, propertyID, func(c *domain.Calendar) (Change, error) {
		if c.OrgID == "" {
			c.OrgID = orgID
		}
		before := c.Clone()
		c.AddBlock(b)
		days := domain.Span{First: b.Start, Last: b.End - 1}
		if changed, ok := domain.Changed(&before, c, days); ok {
			days = changed
		}
		// A block is announced even when bookings hide all of its days: the
		// calendar's blocks changed.
		return Change{Changed: true, Days: &days}, nil
	})
	if err != nil {
		return domain.Block{}, fmt.Errorf("add block to %s: %w", propertyID, err)
	}
	return b, nil
}

// Blocks lists a property's blocks, ordered by start.
func (s *Service) Blocks(ctx context.Context, orgID, propertyID string) ([]domain.Block, error) {
	if err := s.checkProperty(ctx, orgID, propertyID); err != nil {
		return nil, err
	}
	c, err := s.Calendars.Get(ctx, propertyID)
	if err != nil {
		return nil, err
	}
	return c.Blocks, nil
}

// RemoveBlock frees the days of a block (unless something else occupies
// them).
func (s *Service) RemoveBlock(ctx context.Context, orgID, propertyID, blockID string) error {
	if err := s.checkProperty(ctx, orgID, propertyID); err != nil {
		return err
	}
	_, err := s.Calendars.Update(ctx, propertyID, func(c *domain.Calendar) (Change, error) {
		b, ok := c.Block(blockID)
		if !ok {
			return Change{}, apperr.NotFoundf("No block %s on property %s.", blockID, propertyID)
		}
		before := c.Clone()
		c.RemoveBlock(blockID)
		days := domain.Span{First: b.Start, Last: b.End - 1}
		if changed, ok := domain.Changed(&before, c, days); ok {
			days = changed
		}
		return Change{Changed: true, Days: &days}, nil
	})
	return err
}

// ApplyOrg records an organisation announced by auth.
func (s *Service) ApplyOrg(ctx context.Context, id string, version int64) error {
	return s.Orgs.Apply(ctx, id, version)
}

// ApplyListing records a listing's state from the catalog.
func (s *Service) ApplyListing(ctx context.Context, l domain.Listing) error {
	return s.Listings.Apply(ctx, l)
}

// ApplyReservation brings the calendars in line with a reservation's state
// and records it. A state no newer than the recorded one is ignored, so
// redelivered and reordered events change nothing.
//
// The calendars are updated before the reservation is recorded: if the
// process stops in between, the event is delivered again and the calendar
// updates, which compare entries and change nothing the second time, are
// completed.
func (s *Service) ApplyReservation(ctx context.Context, r domain.Reservation) error {
	prev, found, err := s.Reservations.Get(ctx, r.ID)
	if err != nil {
		return err
	}
	if found && prev.Version >= r.Version {
		return nil
	}
	if found && sameFacts(prev, r) {
		// Nothing this service keeps changed (a change of notes, guests,
		// pricing…): the calendars were brought in line with these facts
		// before they were stored, so there is nothing to write.
		return nil
	}
	status, occupies := r.Occupies()
	if occupies {
		// A booking never occupies another organisation's property.
		l, known, err := s.Listings.Get(ctx, r.PropertyID)
		if err != nil {
			return err
		}
		if known && l.OrgID != r.OrgID {
			occupies = false
		}
	}
	if occupies {
		if err := s.putBooking(ctx, r, status); err != nil {
			return err
		}
	}
	// Calendars that may still hold an earlier state of the booking.
	var stale []string
	if found && prev.PropertyID != "" && (prev.PropertyID != r.PropertyID || !occupies) {
		stale = append(stale, prev.PropertyID)
	}
	if !occupies && r.PropertyID != "" && (!found || prev.PropertyID != r.PropertyID) {
		stale = append(stale, r.PropertyID)
	}
	for _, p := range stale {
		if err := s.removeBooking(ctx, p, r.ID); err != nil {
			return err
		}
	}
	return s.Reservations.Apply(ctx, r)
}

// sameFacts reports whether two states of a reservation agree on every
// fact the projection keeps, whatever their versions.
func sameFacts(a, b domain.Reservation) bool {
	a.Version, b.Version = 0, 0
	return a == b
}

func (s *Service) putBooking(ctx context.Context, r domain.Reservation, status domain.Status) error {
	nb := domain.Booking{ReservationID: r.ID, Status: status, CheckIn: r.CheckIn, CheckOut: r.CheckOut, Version: r.Version}
	_, err := s.Calendars.Update(ctx, r.PropertyID, func(c *domain.Calendar) (Change, error) {
		if c.OrgID == "" {
			c.OrgID = r.OrgID
		}
		old, had := c.Booking(r.ID)
		if had && old.Status == nb.Status && old.CheckIn == nb.CheckIn && old.CheckOut == nb.CheckOut {
			return Change{}, nil
		}
		before := c.Clone()
		c.PutBooking(nb)
		iv := [][2]domain.Date{{nb.CheckIn, nb.CheckOut}}
		if had {
			iv = append(iv, [2]domain.Date{old.CheckIn, old.CheckOut})
		}
		return changeOver(&before, c, iv), nil
	})
	if err != nil {
		return fmt.Errorf("book reservation %s on %s: %w", r.ID, r.PropertyID, err)
	}
	return nil
}

func (s *Service) removeBooking(ctx context.Context, propertyID, reservationID string) error {
	_, err := s.Calendars.Update(ctx, propertyID, func(c *domain.Calendar) (Change, error) {
		old, had := c.Booking(reservationID)
		if !had {
			return Change{}, nil
		}
		before := c.Clone()
		c.RemoveBooking(reservationID)
		return changeOver(&before, c, [][2]domain.Date{{old.CheckIn, old.CheckOut}}), nil
	})
	if err != nil {
		return fmt.Errorf("release reservation %s on %s: %w", reservationID, propertyID, err)
	}
	return nil
}

// changeOver stores a booking change, announcing the days whose status
// changed within the intervals it touched; a change that leaves every day
// as it was is stored without an event.
func changeOver(before, after *domain.Calendar, intervals [][2]domain.Date) Change {
	hull, ok := domain.Hull(intervals...)
	if !ok {
		return Change{Changed: true}
	}
	days, ok := domain.Changed(before, after, hull)
	if !ok {
		return Change{Changed: true}
	}
	return Change{Changed: true, Days: &days}
}
