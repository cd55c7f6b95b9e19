// Package adapters keeps the availability service's documents in MongoDB:
// the calendars (with their pending events) and the projections of orgs,
// listings and reservations.
package adapters

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/services/availability/internal/domain"
)

// applyNewer stores fields and version on document id unless the document
// holds a version at least as new. The filter matches only an older
// document; when none matches, the upsert's insert collides with the newer
// document on _id and the stale state is dropped.
func applyNewer(ctx context.Context, coll *mongo.Collection, id string, version int64, fields bson.D) error {
	set := append(bson.D{{Key: "version", Value: version}}, fields...)
	_, err := coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "version", Value: bson.D{{Key: "$lt", Value: version}}}},
		bson.D{{Key: "$set", Value: set}},
		options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply %s %s version %d: %w", coll.Name(), id, version, err)
	}
	return nil
}

// Orgs is the projection of organisations: their ids and versions.
type Orgs struct{ coll *mongo.Collection }

// NewOrgs returns the org projection in db.
func NewOrgs(db *mongo.Database) *Orgs { return &Orgs{coll: db.Collection("orgs")} }

func (r *Orgs) Exists(ctx context.Context, id string) (bool, error) {
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read org %s: %w", id, err)
	}
	return true, nil
}

func (r *Orgs) Apply(ctx context.Context, id string, version int64) error {
	return applyNewer(ctx, r.coll, id, version, nil)
}

// Listings is the projection of the catalog's listings.
type Listings struct{ coll *mongo.Collection }

// NewListings returns the listing projection in db.
func NewListings(db *mongo.Database) *Listings { return &Listings{coll: db.Collection("listings")} }

type listingDoc struct {
	ID        string `bson:"_id"`
	OrgID     string `bson:"orgId"`
	Published bool   `bson:"published"`
	Deleted   bool   `bson:"deleted,omitempty"`
	Timezone  string `bson:"timezone"`
	MinNights *int   `bson:"minNights"`
	Version   int64  `bson:"version"`
}

func (r *Listings) Get(ctx context.Context, id string) (domain.Listing, bool, error) {
	var d listingDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Listing{}, false, nil
	}
	if err != nil {
		return domain.Listing{}, false, fmt.Errorf("read listing %s: %w", id, err)
	}
	return domain.Listing{
		ID: d.ID, OrgID: d.OrgID, Published: d.Published, Deleted: d.Deleted, Timezone: d.Timezone,
		MinNights: d.MinNights, Version: d.Version,
	}, true, nil
}

func (r *Listings) Apply(ctx context.Context, l domain.Listing) error {
	return applyNewer(ctx, r.coll, l.ID, l.Version, bson.D{
		{Key: "orgId", Value: l.OrgID},
		{Key: "published", Value: l.Published},
		{Key: "deleted", Value: l.Deleted},
		{Key: "timezone", Value: l.Timezone},
		{Key: "minNights", Value: l.MinNights},
	})
}

// Reservations is the projection of reservations: the facts that decide
// which days each occupies, as last applied.
type Reservations struct{ coll *mongo.Collection }

// NewReservations returns the reservation projection in db.
func NewReservations(db *mongo.Database) *Reservations {
	return &Reservations{coll: db.Collection("reservations")}
}

type reservationDoc struct {
	ID         string `bson:"_id"`
	OrgID      string `bson:"orgId"`
	PropertyID string `bson:"propertyId"`
	Status     string `bson:"status"`
	CheckIn    string `bson:"checkIn"`
	CheckOut   string `bson:"checkOut"`
	Deleted    bool   `bson:"deleted"`
	Version    int64  `bson:"version"`
}

var reservationStatusNames = map[domain.ReservationStatus]string{
	domain.StatusInquiry:   "inquiry",
	domain.StatusReserved:  "reserved",
	domain.StatusConfirmed: "confirmed",
	domain.StatusCancelled: "cancelled",
}

func reservationStatus(s string) domain.ReservationStatus {
	for k, v := range reservationStatusNames {
		if v == s {
			return k
		}
	}
	return domain.StatusUnknown
}

func (r *Reservations) Get(ctx context.Context, id string) (domain.Reservation, bool, error) {
	var d reservationDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Reservation{}, false, nil
	}
	if err != nil {
		return domain.Reservation{}, false, fmt.Errorf("read reservation %s: %w", id, err)
	}
	in, _ := domain.ParseDate(d.CheckIn)
	out, _ := domain.ParseDate(d.CheckOut)
	return domain.Reservation{
		ID: d.ID, OrgID: d.OrgID, PropertyID: d.PropertyID, Status: reservationStatus(d.Status),
		CheckIn: in, CheckOut: out, Deleted: d.Deleted, Version: d.Version,
	}, true, nil
}

func (r *Reservations) Apply(ctx context.Context, res domain.Reservation) error {
	return applyNewer(ctx, r.coll, res.ID, res.Version, bson.D{
		{Key: "orgId", Value: res.OrgID},
		{Key: "propertyId", Value: res.PropertyID},
		{Key: "status", Value: reservationStatusNames[res.Status]},
		{Key: "checkIn", Value: res.CheckIn.String()},
		{Key: "checkOut", Value: res.CheckOut.String()},
		{Key: "deleted", Value: res.Deleted},
	})
}
