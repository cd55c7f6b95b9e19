package adapters

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
)

// Orgs is the catalog's projection of the organisations, built from the
// auth service's org events: the catalog only needs to know which exist.
type Orgs struct{ coll *mongo.Collection }

// NewOrgs returns the projection.
func NewOrgs(db *mongo.Database) *Orgs { return &Orgs{coll: db.Collection("orgs")} }

// Known reports whether the org exists.
func (r *Orgs) Known(ctx context.Context, orgID string) (bool, error) {
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: orgID}},
		options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read org %s: %w", orgID, err)
	}
	return true, nil
}

// ApplyOrgEvent stores the org an event carries unless the projection holds
// the same or a newer version, so redeliveries and reordering are harmless.
func (r *Orgs) ApplyOrgEvent(ctx context.Context, value []byte) error {
	var ev eventsv1.OrgEvent
	if err := proto.Unmarshal(value, &ev); err != nil {
		// A message that is not an org event can never be applied;
		// retrying it would stop the projection for good.
		return nil
	}
	id := ev.GetEnvelope().GetAggregateId()
	if id == "" {
		id = ev.GetOrg().GetId()
	}
	if id == "" {
		return nil
	}
	version := ev.GetEnvelope().GetAggregateVersion()
	_, err := r.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "version", Value: bson.D{{Key: "$lt", Value: version}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: version}, {Key: "name", Value: ev.GetOrg().GetName()}}}},
		options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		return nil // the projection already holds a newer or equal version
	}
	if err != nil {
		return fmt.Errorf("store org %s: %w", id, err)
	}
	return nil
}
