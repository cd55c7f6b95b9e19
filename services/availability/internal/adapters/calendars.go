package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/outbox"
	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/domain"
)

// CalendarUpdated is the type of the event announcing changed days.
const CalendarUpdated = "calendar.updated"

// EventFunc turns a calendar state and its changed days into its event.
type EventFunc func(ctx context.Context, c domain.Calendar, days domain.Span, at time.Time) (outbox.Event, error)

// Calendars keeps one document per property: its blocks, the bookings that
// occupy its days, its version and its pending events (the outbox), all
// written together in one version-guarded update.
type Calendars struct {
	coll   *mongo.Collection
	events EventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
	now    func() time.Time
}

// CalendarCollection is the collection of calendars (the outbox relay
// drains it).
func CalendarCollection(db *mongo.Database) *mongo.Collection { return db.Collection("calendars") }

// NewCalendars returns the repository over CalendarCollection; notify wakes
// the outbox relay after a write.
func NewCalendars(db *mongo.Database, events EventFunc, notify func(id any)) *Calendars {
	return &Calendars{coll: CalendarCollection(db), events: events, notify: notify, now: time.Now}
}

type bookingDoc struct {
	ReservationID string `bson:"reservationId"`
	Status        string `bson:"status"`
	CheckIn       string `bson:"checkIn"`
	CheckOut      string `bson:"checkOut"`
	Version       int64  `bson:"version"`
}

type blockDoc struct {
	ID        string    `bson:"id"`
	Start     string    `bson:"start"`
	End       string    `bson:"end"`
	Reason    *string   `bson:"reason"`
	CreatedAt time.Time `bson:"createdAt"`
}

type calendarDoc struct {
	ID             string       `bson:"_id"`
	OrgID          string       `bson:"orgId"`
	Version        int64        `bson:"version"`
	Bookings       []bookingDoc `bson:"bookings"`
	Blocks         []blockDoc   `bson:"blocks"`
	outbox.Pending `bson:",inline"`
}

func bookingStatus(s string) domain.Status {
	switch s {
	case "booked":
		return domain.Booked
	case "reserved":
		return domain.Reserved
	default:
		return domain.Unavailable
	}
}

func (d *calendarDoc) domain() domain.Calendar {
	c := domain.Calendar{PropertyID: d.ID, OrgID: d.OrgID, Version: d.Version,
		Bookings: make([]domain.Booking, 0, len(d.Bookings)),
		Blocks:   make([]domain.Block, 0, len(d.Blocks)),
	}
	for _, b := range d.Bookings {
		in, ok1 := domain.ParseDate(b.CheckIn)
		out, ok2 := domain.ParseDate(b.CheckOut)
		if !ok1 || !ok2 {
			continue
		}
		c.Bookings = append(c.Bookings, domain.Booking{
			ReservationID: b.ReservationID, Status: bookingStatus(b.Status),
			CheckIn: in, CheckOut: out, Version: b.Version,
		})
	}
	for _, b := range d.Blocks {
		start, ok1 := domain.ParseDate(b.Start)
		end, ok2 := domain.ParseDate(b.End)
		if !ok1 || !ok2 {
			continue
		}
		c.Blocks = append(c.Blocks, domain.Block{ID: b.ID, Start: start, End: end, Reason: b.Reason, CreatedAt: b.CreatedAt.UTC()})
	}
	return c
}

func bookingDocs(bs []domain.Booking) []bookingDoc {
	out := make([]bookingDoc, 0, len(bs))
	for _, b := range bs {
		out = append(out, bookingDoc{
			ReservationID: b.ReservationID, Status: b.Status.String(),
			CheckIn: b.CheckIn.String(), CheckOut: b.CheckOut.String(), Version: b.Version,
		})
	}
	return out
}

func blockDocs(bs []domain.Block) []blockDoc {
	out := make([]blockDoc, 0, len(bs))
	for _, b := range bs {
		out = append(out, blockDoc{ID: b.ID, Start: b.Start.String(), End: b.End.String(), Reason: b.Reason, CreatedAt: b.CreatedAt})
	}
	return out
}

// readProjection leaves the pending events out of a calendar read.
var readProjection = bson.D{
	{Key: outbox.FieldEvents, Value: 0},
}

func (r *Calendars) load(ctx context.Context, propertyID string, opts ...options.Lister[options.FindOneOptions]) (calendarDoc, bool, error) {
	var d calendarDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: propertyID}}, opts...).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return calendarDoc{ID: propertyID}, false, nil
	}
	if err != nil {
		return calendarDoc{}, false, fmt.Errorf("read calendar %s: %w", propertyID, err)
	}
	return d, true, nil
}

// Get reads one document by its id: the bookings and blocks of the
// property, whatever range is asked for, are found through the _id index.
func (r *Calendars) Get(ctx context.Context, propertyID string) (domain.Calendar, error) {
	d, _, err := r.load(ctx, propertyID, options.FindOne().SetProjection(readProjection))
	if err != nil {
		return domain.Calendar{}, err
	}
	return d.domain(), nil
}

// maxAttempts bounds the retries of a version-guarded update under
// contention; each failed attempt means another writer made progress.
const maxAttempts = 20

func (r *Calendars) Update(ctx context.Context, propertyID string, change func(*domain.Calendar) (app.Change, error)) (domain.Calendar, error) {
	for range maxAttempts {
		d, found, err := r.load(ctx, propertyID, options.FindOne().SetProjection(readProjection))
		if err != nil {
			return domain.Calendar{}, err
		}
		c := d.domain()
		prev := c.Version
		ch, err := change(&c)
		if err != nil || !ch.Changed {
			return c, err
		}
		c.Version = prev + 1
		var events []outbox.Event
		if ch.Days != nil {
			ev, err := r.events(ctx, c, *ch.Days, r.now())
			if err != nil {
				return domain.Calendar{}, err
			}
			events = append(events, ev)
		}
		if !found {
			doc := calendarDoc{ID: propertyID, OrgID: c.OrgID, Version: c.Version,
				Bookings: bookingDocs(c.Bookings), Blocks: blockDocs(c.Blocks)}
			doc.Add(events...)
			_, err := r.coll.InsertOne(ctx, doc)
			if mongo.IsDuplicateKeyError(err) {
				continue // created meanwhile: apply the change to it
			}
			if err != nil {
				return domain.Calendar{}, fmt.Errorf("insert calendar %s: %w", propertyID, err)
			}
			r.notify(propertyID)
			return c, nil
		}
		update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
			{Key: "orgId", Value: c.OrgID},
			{Key: "version", Value: c.Version},
			{Key: "bookings", Value: bookingDocs(c.Bookings)},
			{Key: "blocks", Value: blockDocs(c.Blocks)},
		}}}, events...)
		if err != nil {
			return domain.Calendar{}, err
		}
		res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: propertyID}, {Key: "version", Value: prev}}, update)
		if err != nil {
			return domain.Calendar{}, fmt.Errorf("update calendar %s: %w", propertyID, err)
		}
		if res.MatchedCount == 1 {
			if len(events) > 0 {
				r.notify(propertyID)
			}
			return c, nil
		}
	}
	return domain.Calendar{}, apperr.Conflictf("The calendar of %s is being changed concurrently; retry.", propertyID)
}
