// Package adapters keeps the auth service's documents in MongoDB.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/outbox"
	"quarters.dev/services/auth/internal/domain"
)

// Org event types.
const (
	OrgCreated = "org.created"
	OrgUpdated = "org.updated"
)

// Orgs keeps organisations. Each document carries its version and its
// pending events (the outbox), written together in one update.
type Orgs struct {
	coll   *mongo.Collection
	events EventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
}

// EventFunc turns an org state into its event.
type EventFunc func(ctx context.Context, o domain.Org, eventType string) (outbox.Event, error)

// OrgCollection is the collection of organisations (the outbox relay drains it).
func OrgCollection(db *mongo.Database) *mongo.Collection { return db.Collection("orgs") }

// NewOrgs returns the repository over OrgCollection; notify wakes the outbox
// relay after a write.
func NewOrgs(db *mongo.Database, events EventFunc, notify func(id any)) *Orgs {
	return &Orgs{coll: OrgCollection(db), events: events, notify: notify}
}

type orgDoc struct {
	ID                string    `bson:"_id"`
	Name              string    `bson:"name"`
	ContractProvider  string    `bson:"contractProvider"`
	InquiryDailyLimit int       `bson:"inquiryDailyLimit"`
	CreatedAt         time.Time `bson:"createdAt"`
	UpdatedAt         time.Time `bson:"updatedAt"`
	Version           int64     `bson:"version"`
	outbox.Pending    `bson:",inline"`
}

func (d orgDoc) domain() domain.Org {
	return domain.Org{
		ID: d.ID, Name: d.Name, ContractProvider: domain.ContractProvider(d.ContractProvider),
		InquiryDailyLimit: d.InquiryDailyLimit, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
		Version: d.Version,
	}
}

func (r *Orgs) Create(ctx context.Context, o domain.Org) error {
	ev, err := r.events(ctx, o, OrgCreated)
	if err != nil {
		return err
	}
	doc := orgDoc{
		ID: o.ID, Name: o.Name, ContractProvider: string(o.ContractProvider),
		InquiryDailyLimit: o.InquiryDailyLimit, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		Version: o.Version,
	}
	doc.Add(ev)
	if _, err := r.coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("insert org %s: %w", o.ID, err)
	}
	r.notify(o.ID)
	return nil
}

func (r *Orgs) Get(ctx context.Context, id string) (domain.Org, error) {
	var d orgDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Org{}, apperr.NotFoundf("No organisation %s.", id)
	}
	if err != nil {
		return domain.Org{}, fmt.Errorf("read org %s: %w", id, err)
	}
	return d.domain(), nil
}

// maxAttempts bounds the retries of a version-guarded update under
// contention; each failed attempt means another writer made progress.
const maxAttempts = 20

func (r *Orgs) Update(ctx context.Context, id string, change func(*domain.Org) (bool, error)) (domain.Org, error) {
	for range maxAttempts {
		o, err := r.Get(ctx, id)
		if err != nil {
			return domain.Org{}, err
		}
		prev := o.Version
		changed, err := change(&o)
		if err != nil || !changed {
			return o, err
		}
		o.Version = prev + 1
		ev, err := r.events(ctx, o, OrgUpdated)
		if err != nil {
			return domain.Org{}, err
		}
		set := bson.D{
			{Key: "name", Value: o.Name},
			{Key: "contractProvider", Value: string(o.ContractProvider)},
			{Key: "inquiryDailyLimit", Value: o.InquiryDailyLimit},
			{Key: "updatedAt", Value: o.UpdatedAt},
			{Key: "version", Value: o.Version},
		}
		update, err := outbox.Append(bson.D{{Key: "$set", Value: set}}, ev)
		if err != nil {
			return domain.Org{}, err
		}
		res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "version", Value: prev}}, update)
		if err != nil {
			return domain.Org{}, fmt.Errorf("update org %s: %w", id, err)
		}
		if res.MatchedCount == 1 {
			r.notify(id)
			return o, nil
		}
	}
	return domain.Org{}, apperr.Conflictf("Organisation %s is being changed concurrently; retry.", id)
}
