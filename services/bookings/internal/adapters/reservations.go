// Package adapters keeps the bookings service's documents in MongoDB, its
// inquiry allowance in Redis, and sends mail over SMTP.
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
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/outbox"
	"quarters.dev/services/bookings/internal/domain"
)

// Reservation event types.
const (
	ReservationCreated = "reservation.created"
	ReservationUpdated = "reservation.updated"
	ReservationDeleted = "reservation.deleted"
)

// Reservations keeps bookings, one document each with its version and its
// pending events. A deleted booking stays as a tombstone (deleted: true)
// until its reservation.deleted event is published, then it is purged.
type Reservations struct {
	coll   *mongo.Collection
	events ReservationEventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
}

// ReservationEventFunc encodes a booking's event.
type ReservationEventFunc func(ctx context.Context, r domain.Reservation, eventType string, prev domain.Status) (outbox.Event, error)

// ReservationCollection is the collection of bookings (the relay drains it).
func ReservationCollection(db *mongo.Database) *mongo.Collection {
	return db.Collection("reservations")
}

// NewReservations returns the repository and makes sure its indexes exist:
// one per sort key (org, live, key, id), and the property and status
// filters with the default sort. The updatedAt one also serves
// updatedSince, the checkOut one the check-out bounds.
func NewReservations(ctx context.Context, db *mongo.Database, events ReservationEventFunc, notify func(id any)) (*Reservations, error) {
	coll := ReservationCollection(db)
	var models []mongo.IndexModel
	for _, key := range []string{"checkIn", "checkOut", "updatedAt", "createdAt"} {
		models = append(models, mongo.IndexModel{
			Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "deleted", Value: 1}, {Key: key, Value: 1}, {Key: "_id", Value: 1}},
			Options: options.Index().SetName("org_" + key),
		})
	}
	models = append(models,
		mongo.IndexModel{
			Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "deleted", Value: 1}, {Key: "propertyId", Value: 1}, {Key: "checkIn", Value: 1}, {Key: "_id", Value: 1}},
			Options: options.Index().SetName("org_property_checkIn"),
		},
		mongo.IndexModel{
			Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "deleted", Value: 1}, {Key: "status", Value: 1}, {Key: "checkIn", Value: 1}, {Key: "_id", Value: 1}},
			Options: options.Index().SetName("org_status_checkIn"),
		},
		mongo.IndexModel{
			Keys:    bson.D{{Key: "deleted", Value: 1}, {Key: "outboxPending", Value: 1}},
			Options: options.Index().SetName("tombstones"),
		},
	)
	if err := extmongo.EnsureIndexes(ctx, coll, models...); err != nil {
		return nil, fmt.Errorf("reservation indexes: %w", err)
	}
	return &Reservations{coll: coll, events: events, notify: notify}, nil
}

type guestDoc struct {
	ID        string  `bson:"id"`
	FirstName *string `bson:"firstName"`
	LastName  *string `bson:"lastName"`
	Email     *string `bson:"email"`
	Phone     *string `bson:"phone"`
	Company   *string `bson:"company"`
}

type contactDoc struct {
	Name    *string `bson:"name"`
	Email   *string `bson:"email"`
	Phone   *string `bson:"phone"`
	Company *string `bson:"company"`
}

type pricingDoc struct {
	RentCents      *int64 `bson:"rentCents"`
	UtilitiesCents *int64 `bson:"utilitiesCents"`
	FurnitureCents *int64 `bson:"furnitureCents"`
	DepositCents   *int64 `bson:"depositCents"`
	MinStayMonths  *int   `bson:"minStayMonths"`
	Basis          string `bson:"rateBasis"`
}

type reservationDoc struct {
	ID               string      `bson:"_id"`
	OrgID            string      `bson:"orgId"`
	Deleted          bool        `bson:"deleted"`
	Status           string      `bson:"status"`
	PropertyID       string      `bson:"propertyId"`
	Guest            guestDoc    `bson:"guest"`
	CheckIn          string      `bson:"checkIn"`
	CheckOut         string      `bson:"checkOut"`
	Adults           *int        `bson:"adults"`
	Children         *int        `bson:"children"`
	Infants          *int        `bson:"infants"`
	Pets             bool        `bson:"pets"`
	Pricing          pricingDoc  `bson:"pricing"`
	RequiresContract bool        `bson:"requiresContract"`
	InvoicePaid      bool        `bson:"invoicePaid"`
	OnContract       *contactDoc `bson:"onContract"`
	Staying          *contactDoc `bson:"staying"`
	Notes            *string     `bson:"notes"`
	InquiryID        *string     `bson:"inquiryId"`
	InquiredAt       *time.Time  `bson:"inquiredAt"`
	ReservedAt       *time.Time  `bson:"reservedAt"`
	ConfirmedAt      *time.Time  `bson:"confirmedAt"`
	CancelledAt      *time.Time  `bson:"cancelledAt"`
	CreatedAt        time.Time   `bson:"createdAt"`
	UpdatedAt        time.Time   `bson:"updatedAt"`
	Version          int64       `bson:"version"`
	outbox.Pending   `bson:",inline"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (d *reservationDoc) domain() domain.Reservation {
	r := domain.Reservation{
		ID: d.ID, OrgID: d.OrgID, Status: domain.Status(d.Status), PropertyID: d.PropertyID,
		Guest: domain.Guest{ID: d.Guest.ID, FirstName: d.Guest.FirstName, LastName: d.Guest.LastName,
			Email: d.Guest.Email, Phone: d.Guest.Phone, Company: d.Guest.Company},
		CheckIn: domain.MustDate(d.CheckIn), CheckOut: domain.MustDate(d.CheckOut),
		Adults: d.Adults, Children: d.Children, Infants: d.Infants, Pets: d.Pets,
		Pricing: domain.Pricing{RentCents: d.Pricing.RentCents, UtilitiesCents: d.Pricing.UtilitiesCents,
			FurnitureCents: d.Pricing.FurnitureCents, DepositCents: d.Pricing.DepositCents,
			MinStayMonths: d.Pricing.MinStayMonths, Basis: domain.RateBasis(d.Pricing.Basis)},
		RequiresContract: d.RequiresContract, InvoicePaid: d.InvoicePaid, Notes: d.Notes, InquiryID: d.InquiryID,
		InquiredAt: utc(d.InquiredAt), ReservedAt: utc(d.ReservedAt), ConfirmedAt: utc(d.ConfirmedAt), CancelledAt: utc(d.CancelledAt),
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), Version: d.Version,
	}
	if c := d.OnContract; c != nil {
		r.OnContract = &domain.Contact{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
	}
	if c := d.Staying; c != nil {
		r.Staying = &domain.Contact{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
	}
	return r
}

func reservationDocOf(r domain.Reservation) reservationDoc {
	d := reservationDoc{
		ID: r.ID, OrgID: r.OrgID, Status: string(r.Status), PropertyID: r.PropertyID,
		Guest: guestDoc{ID: r.Guest.ID, FirstName: r.Guest.FirstName, LastName: r.Guest.LastName,
			Email: r.Guest.Email, Phone: r.Guest.Phone, Company: r.Guest.Company},
		CheckIn: r.CheckIn.String(), CheckOut: r.CheckOut.String(),
		Adults: r.Adults, Children: r.Children, Infants: r.Infants, Pets: r.Pets,
		Pricing: pricingDoc{RentCents: r.Pricing.RentCents, UtilitiesCents: r.Pricing.UtilitiesCents,
			FurnitureCents: r.Pricing.FurnitureCents, DepositCents: r.Pricing.DepositCents,
			MinStayMonths: r.Pricing.MinStayMonths, Basis: string(r.Pricing.Basis)},
		RequiresContract: r.RequiresContract, InvoicePaid: r.InvoicePaid, Notes: r.Notes, InquiryID: r.InquiryID,
		InquiredAt: r.InquiredAt, ReservedAt: r.ReservedAt, ConfirmedAt: r.ConfirmedAt, CancelledAt: r.CancelledAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version,
	}
	if c := r.OnContract; c != nil {
		d.OnContract = &contactDoc{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
	}
	if c := r.Staying; c != nil {
		d.Staying = &contactDoc{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
	}
	return d
}

// Insert stores a new booking with its reservation.created event.
func (r *Reservations) Insert(ctx context.Context, res domain.Reservation) error {
	ev, err := r.events(ctx, res, ReservationCreated, "")
	if err != nil {
		return err
	}
	d := reservationDocOf(res)
	d.Add(ev)
	if _, err := r.coll.InsertOne(ctx, d); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return apperr.Conflictf("Reservation %s exists already.", res.ID)
		}
		return fmt.Errorf("insert reservation %s: %w", res.ID, err)
	}
	r.notify(res.ID)
	return nil
}

// Get returns a live booking of orgID.
func (r *Reservations) Get(ctx context.Context, orgID, id string) (domain.Reservation, error) {
	res, found, err := r.find(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return domain.Reservation{}, err
	}
	if !found || res.OrgID != orgID {
		return domain.Reservation{}, apperr.NotFoundf("No reservation %s.", id)
	}
	return res, nil
}

// Find returns a live booking of any org.
func (r *Reservations) Find(ctx context.Context, id string) (domain.Reservation, bool, error) {
	return r.find(ctx, bson.D{{Key: "_id", Value: id}})
}

func (r *Reservations) find(ctx context.Context, filter bson.D) (domain.Reservation, bool, error) {
	var d reservationDoc
	err := r.coll.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: outbox.FieldEvents, Value: 0}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Reservation{}, false, nil
	}
	if err != nil {
		return domain.Reservation{}, false, fmt.Errorf("read reservation: %w", err)
	}
	if d.Deleted {
		return domain.Reservation{}, false, nil
	}
	return d.domain(), true, nil
}

// stateFields are the document fields a change rewrites.
func stateFields(d reservationDoc) bson.D {
	return bson.D{
		{Key: "status", Value: d.Status},
		{Key: "guest", Value: d.Guest},
		{Key: "checkIn", Value: d.CheckIn},
		{Key: "checkOut", Value: d.CheckOut},
		{Key: "adults", Value: d.Adults},
		{Key: "children", Value: d.Children},
		{Key: "infants", Value: d.Infants},
		{Key: "pets", Value: d.Pets},
		{Key: "pricing", Value: d.Pricing},
		{Key: "requiresContract", Value: d.RequiresContract},
		{Key: "invoicePaid", Value: d.InvoicePaid},
		{Key: "onContract", Value: d.OnContract},
		{Key: "staying", Value: d.Staying},
		{Key: "notes", Value: d.Notes},
		{Key: "inquiredAt", Value: d.InquiredAt},
		{Key: "reservedAt", Value: d.ReservedAt},
		{Key: "confirmedAt", Value: d.ConfirmedAt},
		{Key: "cancelledAt", Value: d.CancelledAt},
		{Key: "updatedAt", Value: d.UpdatedAt},
		{Key: "version", Value: d.Version},
	}
}

// Replace stores a changed booking under a compare-and-set on its version.
func (r *Reservations) Replace(ctx context.Context, res domain.Reservation, prevVersion int64, prevStatus domain.Status) (bool, error) {
	ev, err := r.events(ctx, res, ReservationUpdated, prevStatus)
	if err != nil {
		return false, err
	}
	update, err := outbox.Append(bson.D{{Key: "$set", Value: stateFields(reservationDocOf(res))}}, ev)
	if err != nil {
		return false, err
	}
	out, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: res.ID}, {Key: "version", Value: prevVersion}, {Key: "deleted", Value: false}}, update)
	if err != nil {
		return false, fmt.Errorf("update reservation %s: %w", res.ID, err)
	}
	if out.MatchedCount == 1 {
		r.notify(res.ID)
		return true, nil
	}
	return false, nil
}

// Touch moves a live booking's updatedAt forward to at; a later one stays.
func (r *Reservations) Touch(ctx context.Context, id string, at time.Time) error {
	_, err := r.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "deleted", Value: false}, {Key: "updatedAt", Value: bson.D{{Key: "$lt", Value: at}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "updatedAt", Value: at}}}})
	if err != nil {
		return fmt.Errorf("touch reservation %s: %w", id, err)
	}
	return nil
}

// Delete turns a booking into a tombstone carrying reservation.deleted.
func (r *Reservations) Delete(ctx context.Context, res domain.Reservation) (bool, error) {
	ev, err := r.events(ctx, res, ReservationDeleted, "")
	if err != nil {
		return false, err
	}
	update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
		{Key: "deleted", Value: true},
		{Key: "deletedAt", Value: res.UpdatedAt},
		{Key: "version", Value: res.Version + 1},
	}}}, ev)
	if err != nil {
		return false, err
	}
	out, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: res.ID}, {Key: "version", Value: res.Version}, {Key: "deleted", Value: false}}, update)
	if err != nil {
		return false, fmt.Errorf("delete reservation %s: %w", res.ID, err)
	}
	if out.MatchedCount == 1 {
		r.notify(res.ID)
		return true, nil
	}
	return false, nil
}

// PurgeTombstones removes deleted bookings whose events are published.
func (r *Reservations) PurgeTombstones(ctx context.Context) (int64, error) {
	out, err := r.coll.DeleteMany(ctx, bson.D{{Key: "deleted", Value: true}, {Key: outbox.FieldPending, Value: 0}})
	if err != nil {
		return 0, fmt.Errorf("purge deleted reservations: %w", err)
	}
	return out.DeletedCount, nil
}

// ListFilter is the MongoDB filter of a list query; exported for the
// benchmark that compares the service with the bare driver query.
func ListFilter(q domain.ListQuery) bson.D {
	f := bson.D{{Key: "orgId", Value: q.OrgID}, {Key: "deleted", Value: false}}
	if len(q.Statuses) == 1 {
		f = append(f, bson.E{Key: "status", Value: string(q.Statuses[0])})
	} else if len(q.Statuses) > 1 && len(q.Statuses) < len(domain.Statuses) {
		in := make(bson.A, len(q.Statuses))
		for i, s := range q.Statuses {
			in[i] = string(s)
		}
		f = append(f, bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: in}}})
	}
	if q.PropertyID != nil {
		f = append(f, bson.E{Key: "propertyId", Value: *q.PropertyID})
	}
	rng := func(field string, from, to *domain.Date) {
		var r bson.D
		if from != nil {
			r = append(r, bson.E{Key: "$gte", Value: from.String()})
		}
		if to != nil {
			r = append(r, bson.E{Key: "$lte", Value: to.String()})
		}
		if len(r) > 0 {
			f = append(f, bson.E{Key: field, Value: r})
		}
	}
	rng("checkIn", q.CheckInFrom, q.CheckInTo)
	rng("checkOut", q.CheckOutFrom, q.CheckOutTo)
	if q.UpdatedSince != nil {
		f = append(f, bson.E{Key: "updatedAt", Value: bson.D{{Key: "$gte", Value: *q.UpdatedSince}}})
	}
	return f
}

// ListSort is the sort of a list query: the key, then the id, in the
// query's direction.
func ListSort(q domain.ListQuery) bson.D {
	dir := 1
	if q.Desc {
		dir = -1
	}
	return bson.D{{Key: string(q.Sort), Value: dir}, {Key: "_id", Value: dir}}
}

// List returns one page and the total across pages.
func (r *Reservations) List(ctx context.Context, q domain.ListQuery) ([]domain.Reservation, int64, error) {
	filter := ListFilter(q)
	opts := options.Find().SetSort(ListSort(q)).SetSkip(int64(q.Skip)).SetLimit(int64(q.Limit)).
		SetProjection(bson.D{{Key: outbox.FieldEvents, Value: 0}})
	cur, err := r.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("list reservations: %w", err)
	}
	var docs []reservationDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, 0, fmt.Errorf("list reservations: %w", err)
	}
	// A short page that is not empty ends the result: its rows are the
	// last ones, so the total needs no count.
	total := int64(q.Skip + len(docs))
	if len(docs) == 0 || len(docs) >= q.Limit {
		if total, err = r.coll.CountDocuments(ctx, filter); err != nil {
			return nil, 0, fmt.Errorf("count reservations: %w", err)
		}
	}
	out := make([]domain.Reservation, len(docs))
	for i := range docs {
		out[i] = docs[i].domain()
	}
	return out, total, nil
}
