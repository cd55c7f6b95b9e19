package adapters

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"quarters.dev/pkg/outbox"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/domain"
)

func date(s string) domain.Date {
	d, ok := domain.ParseDate(s)
	if !ok {
		panic(s)
	}
	return d
}

// A projection keeps the newest state whatever the order of arrival.
func TestProjectionsKeepTheNewestVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	listings, reservations, orgs := NewListings(db), NewReservations(db), NewOrgs(db)
	seven := 7
	for _, l := range []domain.Listing{
		{ID: "l1", OrgID: "o1", Published: true, Timezone: "Europe/Lisbon", MinNights: &seven, Version: 2},
		{ID: "l1", OrgID: "o1", Published: false, Version: 1},                                              // late and older
		{ID: "l1", OrgID: "o1", Published: true, Timezone: "Europe/Lisbon", MinNights: &seven, Version: 2}, // again
	} {
		if err := listings.Apply(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	l, ok, err := listings.Get(ctx, "l1")
	if err != nil || !ok || !l.Published || l.Version != 2 || l.Timezone != "Europe/Lisbon" || l.BaseMinNights() != 7 {
		t.Fatalf("listing %+v %v %v", l, ok, err)
	}
	if err := listings.Apply(ctx, domain.Listing{ID: "l1", OrgID: "o1", Version: 3}); err != nil {
		t.Fatal(err)
	}
	if l, _, _ := listings.Get(ctx, "l1"); l.Published || l.MinNights != nil || l.Version != 3 {
		t.Fatalf("unpublished listing %+v", l)
	}
	if _, ok, err := listings.Get(ctx, "none"); ok || err != nil {
		t.Fatalf("unknown listing: %v %v", ok, err)
	}

	r := domain.Reservation{ID: "r1", OrgID: "o1", PropertyID: "l1", Status: domain.StatusConfirmed,
		CheckIn: date("2028-02-28"), CheckOut: date("2028-03-02"), Version: 4}
	if err := reservations.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	older := r
	older.Version, older.Status = 3, domain.StatusReserved
	if err := reservations.Apply(ctx, older); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := reservations.Get(ctx, "r1"); err != nil || !ok || got != r {
		t.Fatalf("reservation %+v %v %v, want %+v", got, ok, err, r)
	}

	if err := orgs.Apply(ctx, "o1", 2); err != nil {
		t.Fatal(err)
	}
	if err := orgs.Apply(ctx, "o1", 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := orgs.Exists(ctx, "o1"); !ok || err != nil {
		t.Fatalf("org: %v %v", ok, err)
	}
	if ok, err := orgs.Exists(ctx, "o2"); ok || err != nil {
		t.Fatalf("unknown org: %v %v", ok, err)
	}
}

// Concurrent changes of one calendar all land, each with its event, and the
// version counts them.
func TestCalendarUpdatesUnderContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	cals := NewCalendars(db, CalendarEvents("t.calendars"), func(any) {})
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			start := date("2026-01-01").AddDays(i * 3)
			_, err := cals.Update(ctx, "p1", func(c *domain.Calendar) (app.Change, error) {
				c.OrgID = "o1"
				c.AddBlock(domain.Block{ID: fmt.Sprintf("b%02d", i), Start: start, End: start.AddDays(2), CreatedAt: time.Now().UTC().Truncate(time.Millisecond)})
				days := domain.Span{First: start, Last: start.AddDays(1)}
				return app.Change{Changed: true, Days: &days}, nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := cals.Get(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Blocks) != n || c.Version != n || c.OrgID != "o1" {
		t.Fatalf("calendar: %d blocks, version %d, org %q; want %d and %d", len(c.Blocks), c.Version, c.OrgID, n, n)
	}
	for i := 1; i < len(c.Blocks); i++ {
		if c.Blocks[i].Start < c.Blocks[i-1].Start {
			t.Fatalf("blocks out of order: %v", c.Blocks)
		}
	}

	// Every change left its event in the document, versions 1 to n.
	var doc struct {
		outbox.Pending `bson:",inline"`
	}
	if err := CalendarCollection(db).FindOne(ctx, bson.D{{Key: "_id", Value: "p1"}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Outbox) != n || doc.OutboxPending != n {
		t.Fatalf("%d pending events (counter %d), want %d", len(doc.Outbox), doc.OutboxPending, n)
	}
	seen := map[int64]bool{}
	for _, e := range doc.Outbox {
		var ev eventsv1.CalendarEvent
		if err := proto.Unmarshal(e.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if e.Key != "p1" || e.Topic != "t.calendars" || ev.GetEnvelope().GetType() != CalendarUpdated || ev.GetEnvelope().GetOrgId() != "o1" {
			t.Fatalf("event %+v: %v", e, &ev)
		}
		seen[ev.GetEnvelope().GetAggregateVersion()] = true
	}
	for v := int64(1); v <= n; v++ {
		if !seen[v] {
			t.Fatalf("no event of version %d: %v", v, seen)
		}
	}

	// An update that changes nothing writes nothing.
	if _, err := cals.Update(ctx, "p1", func(*domain.Calendar) (app.Change, error) { return app.Change{}, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := cals.Update(ctx, "none", func(*domain.Calendar) (app.Change, error) { return app.Change{}, nil }); err != nil {
		t.Fatal(err)
	}
	if c2, _ := cals.Get(ctx, "p1"); c2.Version != n {
		t.Fatalf("version %d after a no-op", c2.Version)
	}
	if n, err := CalendarCollection(db).CountDocuments(ctx, bson.D{{Key: "_id", Value: "none"}}); err != nil || n != 0 {
		t.Fatalf("a no-op created a calendar: %d %v", n, err)
	}
}
