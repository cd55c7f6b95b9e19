package adapters

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/domain"
)

// Projections keeps what the service knows of other services' aggregates,
// built from their events: each org's contract provider and each
// reservation's org and property. A state is applied only when its version
// is newer than the stored one, so redelivered and reordered events are
// harmless.
type Projections struct {
	orgs         *mongo.Collection
	reservations *mongo.Collection
}

// NewProjections returns the projections in db.
func NewProjections(db *mongo.Database) *Projections {
	return &Projections{orgs: db.Collection("orgs"), reservations: db.Collection("reservations")}
}

type orgDoc struct {
	ID       string `bson:"_id"`
	Provider string `bson:"provider"`
	Version  int64  `bson:"version"`
}

type reservationDoc struct {
	ID         string `bson:"_id"`
	OrgID      string `bson:"orgId"`
	PropertyID string `bson:"propertyId"`
	Deleted    bool   `bson:"deleted"`
	Version    int64  `bson:"version"`
}

// Orgs reads the org projection.
func (p *Projections) Orgs() OrgProjection { return OrgProjection{p} }

// Reservations reads the reservation projection.
func (p *Projections) Reservations() ReservationProjection { return ReservationProjection{p} }

// OrgProjection implements app.Orgs.
type OrgProjection struct{ p *Projections }

// Get implements app.Orgs.
func (o OrgProjection) Get(ctx context.Context, id string) (app.Org, bool, error) {
	var d orgDoc
	found, err := findOne(ctx, o.p.orgs, id, &d)
	return app.Org{ID: d.ID, Provider: domain.Provider(d.Provider), Version: d.Version}, found, err
}

// ReservationProjection implements app.Reservations.
type ReservationProjection struct{ p *Projections }

// Get implements app.Reservations.
func (r ReservationProjection) Get(ctx context.Context, id string) (app.Reservation, bool, error) {
	var d reservationDoc
	found, err := findOne(ctx, r.p.reservations, id, &d)
	return app.Reservation{ID: d.ID, OrgID: d.OrgID, PropertyID: d.PropertyID, Deleted: d.Deleted, Version: d.Version}, found, err
}

func findOne(ctx context.Context, coll *mongo.Collection, id string, dst any) (bool, error) {
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(dst)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %s: %w", coll.Name(), id, err)
	}
	return true, nil
}

// ApplyOrg stores an org's state unless a newer one is stored.
func (p *Projections) ApplyOrg(ctx context.Context, o app.Org) error {
	return applyNewer(ctx, p.orgs, o.ID, o.Version, orgDoc{ID: o.ID, Provider: string(o.Provider), Version: o.Version},
		bson.D{{Key: "provider", Value: string(o.Provider)}, {Key: "version", Value: o.Version}})
}

// ApplyReservation stores a reservation's state unless a newer one is
// stored. A deleted reservation stays as a tombstone, so that an older event
// arriving late cannot bring it back. A state that changes none of the facts
// kept here (a change of notes, guests, status…) writes nothing: the events
// of one reservation arrive in order, so the stored facts are already the
// newest.
func (p *Projections) ApplyReservation(ctx context.Context, r app.Reservation) error {
	var d reservationDoc
	found, err := findOne(ctx, p.reservations, r.ID, &d)
	if err != nil {
		return err
	}
	if found && (d.Version >= r.Version || d.OrgID == r.OrgID && d.PropertyID == r.PropertyID && d.Deleted == r.Deleted) {
		return nil
	}
	return applyNewer(ctx, p.reservations, r.ID, r.Version,
		reservationDoc{ID: r.ID, OrgID: r.OrgID, PropertyID: r.PropertyID, Deleted: r.Deleted, Version: r.Version},
		bson.D{{Key: "orgId", Value: r.OrgID}, {Key: "propertyId", Value: r.PropertyID},
			{Key: "deleted", Value: r.Deleted}, {Key: "version", Value: r.Version}})
}

// applyNewer updates the document when its version is older, or inserts it
// when there is none; a duplicate key on insert means a document with an
// equal or newer version is there already.
func applyNewer(ctx context.Context, coll *mongo.Collection, id string, version int64, doc any, set bson.D) error {
	res, err := coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "version", Value: bson.D{{Key: "$lt", Value: version}}}},
		bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return fmt.Errorf("update %s %s: %w", coll.Name(), id, err)
	}
	if res.MatchedCount == 1 {
		return nil
	}
	_, err = coll.InsertOne(ctx, doc)
	if err == nil || mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return fmt.Errorf("insert %s %s: %w", coll.Name(), id, err)
}
