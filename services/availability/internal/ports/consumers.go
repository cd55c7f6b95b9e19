package ports

import (
	"context"
	"log/slog"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/domain"
)

// Consumers turns the events of other services into the projections. Each
// handler stores its effect before it returns, and relies on the aggregate
// versions to ignore what it has already applied.
type Consumers struct {
	Svc *app.Service
	Log *slog.Logger
}

// undecodable logs a message that no retry can apply and lets it pass, so
// that one malformed message does not stop the projection.
func (c *Consumers) undecodable(msg kafka.Message, err error) error {
	c.Log.Error("drop undecodable event", "topic", msg.Topic, "partition", msg.Partition, "offset", msg.Offset, "error", err)
	return nil
}

// Org applies auth's org events.
func (c *Consumers) Org(ctx context.Context, msg kafka.Message) error {
	var ev eventsv1.OrgEvent
	if err := proto.Unmarshal(msg.Value, &ev); err != nil {
		return c.undecodable(msg, err)
	}
	env := ev.GetEnvelope()
	id := env.GetAggregateId()
	if id == "" {
		id = ev.GetOrg().GetId()
	}
	if id == "" {
		return nil
	}
	return c.Svc.ApplyOrg(ctx, id, env.GetAggregateVersion())
}

// Listing applies the catalog's listing events: listing.updated is a
// published snapshot, listing.deleted an unpublished or deleted property,
// property.created a new draft, property.deleted a deleted property.
func (c *Consumers) Listing(ctx context.Context, msg kafka.Message) error {
	var ev eventsv1.ListingEvent
	if err := proto.Unmarshal(msg.Value, &ev); err != nil {
		return c.undecodable(msg, err)
	}
	l, ok := ListingOf(&ev)
	if !ok {
		return nil
	}
	return c.Svc.ApplyListing(ctx, l)
}

// ListingOf reads what availability keeps of a listing event; ok is false
// for an event that names no listing or has an unknown type.
func ListingOf(ev *eventsv1.ListingEvent) (domain.Listing, bool) {
	env, li := ev.GetEnvelope(), ev.GetListing()
	l := domain.Listing{ID: env.GetAggregateId(), OrgID: env.GetOrgId(), Version: env.GetAggregateVersion()}
	if l.ID == "" {
		l.ID = li.GetId()
	}
	if l.OrgID == "" {
		l.OrgID = li.GetOrgId()
	}
	if l.ID == "" {
		return l, false
	}
	switch env.GetType() {
	case "listing.updated":
		l.Published = true
		l.Timezone = li.GetTimezone()
		if t := li.GetTerms(); t != nil && t.MinNights != nil {
			n := int(t.GetMinNights())
			l.MinNights = &n
		}
	case "listing.deleted", "property.created":
	case "property.deleted":
		l.Deleted = true
	default:
		return l, false
	}
	return l, true
}

// Reservation applies the bookings' reservation events.
func (c *Consumers) Reservation(ctx context.Context, msg kafka.Message) error {
	var ev eventsv1.ReservationEvent
	if err := proto.Unmarshal(msg.Value, &ev); err != nil {
		return c.undecodable(msg, err)
	}
	r, ok := ReservationOf(&ev)
	if !ok {
		return nil
	}
	return c.Svc.ApplyReservation(ctx, r)
}

// ReservationOf reads the day-blocking facts of a reservation event; ok is
// false for an event that names no reservation or has an unknown type.
func ReservationOf(ev *eventsv1.ReservationEvent) (domain.Reservation, bool) {
	env, res := ev.GetEnvelope(), ev.GetReservation()
	r := domain.Reservation{
		ID: env.GetAggregateId(), OrgID: env.GetOrgId(), PropertyID: res.GetPropertyId(),
		Version: env.GetAggregateVersion(),
	}
	if r.ID == "" {
		r.ID = res.GetId()
	}
	if r.OrgID == "" {
		r.OrgID = res.GetOrgId()
	}
	if r.ID == "" {
		return r, false
	}
	switch env.GetType() {
	case "reservation.created", "reservation.updated":
	case "reservation.deleted":
		r.Deleted = true
	default:
		return r, false
	}
	switch res.GetStatus() {
	case eventsv1.ReservationStatus_RESERVATION_STATUS_INQUIRY:
		r.Status = domain.StatusInquiry
	case eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED:
		r.Status = domain.StatusReserved
	case eventsv1.ReservationStatus_RESERVATION_STATUS_CONFIRMED:
		r.Status = domain.StatusConfirmed
	case eventsv1.ReservationStatus_RESERVATION_STATUS_CANCELLED:
		r.Status = domain.StatusCancelled
	}
	in, ok1 := domain.ParseDate(res.GetCheckIn())
	out, ok2 := domain.ParseDate(res.GetCheckOut())
	if ok1 && ok2 {
		r.CheckIn, r.CheckOut = in, out
	}
	return r, true
}
