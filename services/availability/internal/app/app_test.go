package app

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"quarters.dev/services/availability/internal/domain"
)

// memCalendars keeps calendars in memory and records the changed days of
// every event an update would write.
type memCalendars struct {
	cals   map[string]domain.Calendar
	events []string
}

func (m *memCalendars) Get(_ context.Context, p string) (domain.Calendar, error) {
	c, ok := m.cals[p]
	if !ok {
		return domain.Calendar{PropertyID: p}, nil
	}
	return c.Clone(), nil
}

func (m *memCalendars) Update(ctx context.Context, p string, change func(*domain.Calendar) (Change, error)) (domain.Calendar, error) {
	c, _ := m.Get(ctx, p)
	ch, err := change(&c)
	if err != nil || !ch.Changed {
		return c, err
	}
	c.Version++
	m.cals[p] = c
	if ch.Days != nil {
		m.events = append(m.events, fmt.Sprintf("%s %s..%s", p, ch.Days.First, ch.Days.Last))
	}
	return c, nil
}

// memReservations keeps reservations in memory; failNext makes the next
// Apply fail, as a crash between the calendar update and the record would.
type memReservations struct {
	rs       map[string]domain.Reservation
	failNext bool
	applied  int
}

func (m *memReservations) Get(_ context.Context, id string) (domain.Reservation, bool, error) {
	r, ok := m.rs[id]
	return r, ok, nil
}

func (m *memReservations) Apply(_ context.Context, r domain.Reservation) error {
	m.applied++
	if m.failNext {
		m.failNext = false
		return errors.New("store unavailable")
	}
	if old, ok := m.rs[r.ID]; !ok || old.Version < r.Version {
		m.rs[r.ID] = r
	}
	return nil
}

// memListings knows listing "foreign" of another org.
type memListings struct{}

func (memListings) Get(_ context.Context, id string) (domain.Listing, bool, error) {
	if id == "foreign" {
		return domain.Listing{ID: id, OrgID: "other", Published: true}, true, nil
	}
	return domain.Listing{}, false, nil
}

func (memListings) Apply(context.Context, domain.Listing) error { return nil }

func date(s string) domain.Date {
	d, ok := domain.ParseDate(s)
	if !ok {
		panic(s)
	}
	return d
}

func res(id, p string, st domain.ReservationStatus, in, out string, v int64) domain.Reservation {
	return domain.Reservation{ID: id, OrgID: "o", PropertyID: p, Status: st, CheckIn: date(in), CheckOut: date(out), Version: v}
}

func TestApplyReservation(t *testing.T) {
	t.Parallel()
	type step struct {
		r          domain.Reservation
		failRecord bool
		wantEvents []string
	}
	tests := []struct {
		name  string
		steps []step
		// final statuses of p1 and p2 from 2026-05-01 to 2026-05-06
		wantP1, wantP2 string
	}{
		{
			name: "held, confirmed, cancelled",
			steps: []step{
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-02", "2026-05-04", 2), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p1", domain.StatusCancelled, "2026-05-02", "2026-05-04", 3), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
			},
			wantP1: "aaaaaa", wantP2: "aaaaaa",
		},
		{
			name: "an inquiry and a change that keeps the days announce nothing",
			steps: []step{
				{r: res("r", "p1", domain.StatusInquiry, "2026-05-02", "2026-05-04", 1)},
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 2), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 3)},
			},
			wantP1: "arraaa", wantP2: "aaaaaa",
		},
		{
			name: "redelivered and older states change nothing",
			steps: []step{
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-02", "2026-05-04", 2), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-02", "2026-05-04", 2)},
				{r: res("r", "p1", domain.StatusReserved, "2026-05-01", "2026-05-06", 1)},
			},
			wantP1: "abbaaa", wantP2: "aaaaaa",
		},
		{
			name: "moving between properties frees the old days and takes the new",
			steps: []step{
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p2", domain.StatusReserved, "2026-05-03", "2026-05-05", 2), wantEvents: []string{"p2 2026-05-03..2026-05-04", "p1 2026-05-02..2026-05-03"}},
			},
			wantP1: "aaaaaa", wantP2: "aarraa",
		},
		{
			name: "moving and cancelling at once frees the old property",
			steps: []step{
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p2", domain.StatusCancelled, "2026-05-03", "2026-05-05", 2), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
			},
			wantP1: "aaaaaa", wantP2: "aaaaaa",
		},
		{
			name: "moving dates announces the union of old and new days that changed",
			steps: []step{
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-01", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-01..2026-05-03"}},
				{r: res("r", "p1", domain.StatusConfirmed, "2026-05-02", "2026-05-06", 2), wantEvents: []string{"p1 2026-05-01..2026-05-05"}},
			},
			wantP1: "abbbba", wantP2: "aaaaaa",
		},
		{
			name: "a delivery interrupted before the record is completed by the next one, without a second event",
			steps: []step{
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p2", domain.StatusReserved, "2026-05-02", "2026-05-04", 2), failRecord: true,
					wantEvents: []string{"p2 2026-05-02..2026-05-03", "p1 2026-05-02..2026-05-03"}},
				{r: res("r", "p2", domain.StatusReserved, "2026-05-02", "2026-05-04", 2)},
			},
			wantP1: "aaaaaa", wantP2: "arraaa",
		},
		{
			name: "a booking naming another organisation's property occupies nothing",
			steps: []step{
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: res("r", "foreign", domain.StatusReserved, "2026-05-02", "2026-05-04", 2), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
			},
			wantP1: "aaaaaa", wantP2: "aaaaaa",
		},
		{
			name: "deleted",
			steps: []step{
				{r: res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
				{r: func() domain.Reservation {
					r := res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 2)
					r.Deleted = true
					return r
				}(), wantEvents: []string{"p1 2026-05-02..2026-05-03"}},
			},
			wantP1: "aaaaaa", wantP2: "aaaaaa",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cals := &memCalendars{cals: map[string]domain.Calendar{}}
			rs := &memReservations{rs: map[string]domain.Reservation{}}
			s := &Service{Calendars: cals, Reservations: rs, Listings: memListings{}}
			ctx := context.Background()
			for i, st := range tt.steps {
				cals.events = nil
				rs.failNext = st.failRecord
				err := s.ApplyReservation(ctx, st.r)
				if st.failRecord != (err != nil) {
					t.Fatalf("step %d: err %v", i, err)
				}
				if fmt.Sprint(cals.events) != fmt.Sprint(st.wantEvents) {
					t.Fatalf("step %d: events %v, want %v", i, cals.events, st.wantEvents)
				}
			}
			for p, want := range map[string]string{"p1": tt.wantP1, "p2": tt.wantP2} {
				c, _ := cals.Get(ctx, p)
				got := ""
				for _, s := range c.Statuses(date("2026-05-01"), date("2026-05-06"), nil) {
					got += s.String()[:1]
				}
				if got != want {
					t.Errorf("%s: %s, want %s", p, got, want)
				}
			}
		})
	}
}

// An event that changes none of the facts the projection keeps (a new
// note on a booking) writes nothing; the next real change still applies.
func TestApplyReservationWithTheSameFactsWritesNothing(t *testing.T) {
	t.Parallel()
	cals := &memCalendars{cals: map[string]domain.Calendar{}}
	rs := &memReservations{rs: map[string]domain.Reservation{}}
	s := &Service{Calendars: cals, Reservations: rs, Listings: memListings{}}
	ctx := context.Background()
	for _, r := range []domain.Reservation{
		res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 1),
		res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 2),
		res("r", "p1", domain.StatusReserved, "2026-05-02", "2026-05-04", 3),
	} {
		if err := s.ApplyReservation(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if rs.applied != 1 || cals.cals["p1"].Version != 1 {
		t.Fatalf("after two events with the same facts: %d records written, calendar version %d; want 1 and 1", rs.applied, cals.cals["p1"].Version)
	}
	if err := s.ApplyReservation(ctx, res("r", "p1", domain.StatusCancelled, "2026-05-02", "2026-05-04", 4)); err != nil {
		t.Fatal(err)
	}
	if got := rs.rs["r"]; rs.applied != 2 || got.Version != 4 || got.Status != domain.StatusCancelled {
		t.Fatalf("the cancellation after them: %d records written, stored %+v", rs.applied, got)
	}
	if len(cals.events) != 2 {
		t.Fatalf("calendar events %v, want the hold and its release", cals.events)
	}
}
