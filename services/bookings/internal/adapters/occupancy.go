package adapters

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/bookings/internal/domain"
)

// Occupancy keeps one document per property listing the stays of its
// reserved and confirmed bookings. Every change is a compare-and-set on the
// document's version (or the insert of a new one, which the unique _id
// admits once), so two overlapping stays can never both be written, however
// many requests race.
type Occupancy struct{ coll *mongo.Collection }

// NewOccupancy returns the repository.
func NewOccupancy(db *mongo.Database) *Occupancy {
	return &Occupancy{coll: db.Collection("occupancy")}
}

type holdDoc struct {
	ReservationID string `bson:"reservationId"`
	CheckIn       string `bson:"checkIn"`
	CheckOut      string `bson:"checkOut"`
}

type occupancyDoc struct {
	ID      string    `bson:"_id"`
	OrgID   string    `bson:"orgId"`
	Holds   []holdDoc `bson:"holds"`
	Version int64     `bson:"version"`
}

// maxOccupancyAttempts bounds the retries under contention; every failed
// attempt means another writer changed the property's stays meanwhile.
const maxOccupancyAttempts = 100

func (o *Occupancy) load(ctx context.Context, propertyID string) (occupancyDoc, bool, error) {
	var d occupancyDoc
	err := o.coll.FindOne(ctx, bson.D{{Key: "_id", Value: propertyID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return occupancyDoc{ID: propertyID}, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("read occupancy of %s: %w", propertyID, err)
	}
	return d, true, nil
}

// store writes holds under the version read; false means someone else
// wrote first.
func (o *Occupancy) store(ctx context.Context, d occupancyDoc, exists bool, holds []holdDoc) (bool, error) {
	if holds == nil {
		holds = []holdDoc{}
	}
	if !exists {
		d.Holds, d.Version = holds, 1
		_, err := o.coll.InsertOne(ctx, d)
		if mongo.IsDuplicateKeyError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write occupancy of %s: %w", d.ID, err)
		}
		return true, nil
	}
	res, err := o.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: d.ID}, {Key: "version", Value: d.Version}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "holds", Value: holds}, {Key: "version", Value: d.Version + 1}}}})
	if err != nil {
		return false, fmt.Errorf("write occupancy of %s: %w", d.ID, err)
	}
	return res.MatchedCount == 1, nil
}

// Hold records a booking's stay, replacing its previous one.
func (o *Occupancy) Hold(ctx context.Context, orgID, propertyID, reservationID string, in, out domain.Date) error {
	for range maxOccupancyAttempts {
		d, exists, err := o.load(ctx, propertyID)
		if err != nil {
			return err
		}
		if !exists {
			d.OrgID = orgID
		}
		holds := make([]holdDoc, 0, len(d.Holds)+1)
		unchanged := false
		for _, h := range d.Holds {
			if h.ReservationID == reservationID {
				unchanged = h.CheckIn == in.String() && h.CheckOut == out.String()
				continue
			}
			if domain.Overlaps(in, out, domain.MustDate(h.CheckIn), domain.MustDate(h.CheckOut)) {
				return apperr.Conflictf("The stay %s to %s overlaps reservation %s (%s to %s) of property %s.",
					in, out, h.ReservationID, h.CheckIn, h.CheckOut, propertyID)
			}
			holds = append(holds, h)
		}
		if unchanged {
			return nil
		}
		holds = append(holds, holdDoc{ReservationID: reservationID, CheckIn: in.String(), CheckOut: out.String()})
		ok, err := o.store(ctx, d, exists, holds)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return apperr.Conflictf("Property %s is being booked concurrently; retry.", propertyID)
}

// Release drops a booking's stay.
func (o *Occupancy) Release(ctx context.Context, propertyID, reservationID string) error {
	for range maxOccupancyAttempts {
		d, exists, err := o.load(ctx, propertyID)
		if err != nil || !exists {
			return err
		}
		holds := make([]holdDoc, 0, len(d.Holds))
		for _, h := range d.Holds {
			if h.ReservationID != reservationID {
				holds = append(holds, h)
			}
		}
		if len(holds) == len(d.Holds) {
			return nil
		}
		ok, err := o.store(ctx, d, true, holds)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return apperr.Conflictf("Property %s is being booked concurrently; retry.", propertyID)
}
