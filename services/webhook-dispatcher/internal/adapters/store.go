// Package adapters connects the webhook dispatcher to MongoDB, Kafka and
// the receivers' HTTP servers.
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
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Store holds the dispatcher's collections: endpoints, pending deliveries,
// delivery records and the org projection.
type Store struct {
	endpoints *mongo.Collection
	pending   *mongo.Collection
	claims    *mongo.Collection
	records   *mongo.Collection
	orgs      *mongo.Collection
}

// NewStore returns the store and makes sure its indexes exist. Every
// uniqueness the dispatcher relies on is the _id of one collection.
func NewStore(ctx context.Context, db *mongo.Database) (*Store, error) {
	s := &Store{
		endpoints: db.Collection("endpoints"),
		pending:   db.Collection("pending"),
		claims:    db.Collection("claims"),
		records:   db.Collection("deliveries"),
		orgs:      db.Collection("orgs"),
	}
	if err := extmongo.EnsureIndexes(ctx, s.endpoints, mongo.IndexModel{
		Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "createdAt", Value: 1}},
		Options: options.Index().SetName("org_created"),
	}); err != nil {
		return nil, fmt.Errorf("endpoint indexes: %w", err)
	}
	if err := extmongo.EnsureIndexes(ctx, s.pending, mongo.IndexModel{
		Keys:    bson.D{{Key: "recordedAt", Value: 1}},
		Options: options.Index().SetName("recorded"),
	}); err != nil {
		return nil, fmt.Errorf("pending indexes: %w", err)
	}
	if err := extmongo.EnsureIndexes(ctx, s.records, mongo.IndexModel{
		Keys:    bson.D{{Key: "endpointId", Value: 1}, {Key: "attemptedAt", Value: -1}},
		Options: options.Index().SetName("endpoint_attempted"),
	}); err != nil {
		return nil, fmt.Errorf("delivery indexes: %w", err)
	}
	return s, nil
}

// Endpoints returns the endpoint repository.
func (s *Store) Endpoints() *Endpoints { return &Endpoints{s.endpoints} }

// Pending returns the pending-delivery repository.
func (s *Store) Pending() *Pending { return &Pending{s.pending} }

// Records returns the delivery-record repository.
func (s *Store) Records() *Records { return &Records{claims: s.claims, coll: s.records} }

// Orgs returns the org projection.
func (s *Store) Orgs() *Orgs { return &Orgs{s.orgs} }

type endpointDoc struct {
	ID        string    `bson:"_id"`
	OrgID     string    `bson:"orgId"`
	URL       string    `bson:"url"`
	Secret    string    `bson:"secret"`
	CreatedAt time.Time `bson:"createdAt"`
	// Seq orders endpoints registered within one millisecond (createdAt's
	// precision in the store) as they were registered.
	Seq int64 `bson:"seq"`
}

func (d endpointDoc) domain() domain.Endpoint {
	return domain.Endpoint{ID: d.ID, OrgID: d.OrgID, URL: d.URL, Secret: d.Secret, CreatedAt: d.CreatedAt.UTC()}
}

// Endpoints keeps registered endpoints.
type Endpoints struct{ coll *mongo.Collection }

func (r *Endpoints) Insert(ctx context.Context, ep domain.Endpoint) error {
	_, err := r.coll.InsertOne(ctx, endpointDoc{ID: ep.ID, OrgID: ep.OrgID, URL: ep.URL, Secret: ep.Secret, CreatedAt: ep.CreatedAt, Seq: time.Now().UnixNano()})
	return err
}

func (r *Endpoints) ListByOrg(ctx context.Context, orgID string) ([]domain.Endpoint, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "orgId", Value: orgID}},
		options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "seq", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", orgID, err)
	}
	var docs []endpointDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", orgID, err)
	}
	out := make([]domain.Endpoint, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

func (r *Endpoints) Get(ctx context.Context, id string) (domain.Endpoint, error) {
	var d endpointDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Endpoint{}, apperr.NotFoundf("No webhook %s.", id)
	}
	if err != nil {
		return domain.Endpoint{}, fmt.Errorf("read webhook %s: %w", id, err)
	}
	return d.domain(), nil
}

func (r *Endpoints) Delete(ctx context.Context, orgID, id string) error {
	res, err := r.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "orgId", Value: orgID}})
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if res.DeletedCount == 0 {
		return apperr.NotFoundf("No webhook %s in organisation %s.", id, orgID)
	}
	return nil
}

// deliveryDoc is the stored form of both a pending delivery and a record.
type deliveryDoc struct {
	RecordID    string     `bson:"_id"`
	DeliveryID  string     `bson:"deliveryId"`
	EndpointID  string     `bson:"endpointId"`
	OrgID       string     `bson:"orgId"`
	Event       string     `bson:"event"`
	Body        []byte     `bson:"body"`
	CreatedAt   time.Time  `bson:"createdAt"`
	RecordedAt  time.Time  `bson:"recordedAt"`
	Redelivery  bool       `bson:"redelivery,omitempty"`
	Status      string     `bson:"status"`
	AttemptedAt *time.Time `bson:"attemptedAt,omitempty"`
	DurationMs  int64      `bson:"durationMs,omitempty"`
	StatusCode  int        `bson:"statusCode,omitempty"`
	Reason      string     `bson:"reason,omitempty"`
	Error       string     `bson:"error,omitempty"`
}

func toDoc(d domain.Delivery) deliveryDoc {
	return deliveryDoc{
		RecordID: d.RecordID, DeliveryID: d.DeliveryID, EndpointID: d.EndpointID, OrgID: d.OrgID,
		Event: d.Event, Body: d.Body, CreatedAt: d.CreatedAt, RecordedAt: d.RecordedAt,
		Redelivery: d.Redelivery, Status: string(d.Status), AttemptedAt: d.AttemptedAt,
		DurationMs: d.Duration.Milliseconds(), StatusCode: d.StatusCode, Reason: string(d.Reason), Error: d.Error,
	}
}

func (d deliveryDoc) domain() domain.Delivery {
	out := domain.Delivery{
		RecordID: d.RecordID, DeliveryID: d.DeliveryID, EndpointID: d.EndpointID, OrgID: d.OrgID,
		Event: d.Event, Body: d.Body, CreatedAt: d.CreatedAt.UTC(), RecordedAt: d.RecordedAt.UTC(),
		Redelivery: d.Redelivery, Status: domain.Status(d.Status),
		Duration: time.Duration(d.DurationMs) * time.Millisecond, StatusCode: d.StatusCode,
		Reason: domain.Reason(d.Reason), Error: d.Error,
	}
	if d.AttemptedAt != nil {
		t := d.AttemptedAt.UTC()
		out.AttemptedAt = &t
	}
	return out
}

// Pending keeps the deliveries that are owed an attempt. It stays small:
// a delivery leaves it as soon as its attempt is recorded.
type Pending struct{ coll *mongo.Collection }

func (r *Pending) Add(ctx context.Context, d domain.Delivery) (bool, error) {
	d.Status = domain.Pending
	_, err := r.coll.InsertOne(ctx, toDoc(d))
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

func (r *Pending) Older(ctx context.Context, t time.Time, limit int) ([]domain.Delivery, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "recordedAt", Value: bson.D{{Key: "$lte", Value: t}}}},
		options.Find().SetSort(bson.D{{Key: "recordedAt", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("scan pending deliveries: %w", err)
	}
	var docs []deliveryDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("scan pending deliveries: %w", err)
	}
	out := make([]domain.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

func (r *Pending) Remove(ctx context.Context, recordIDs ...string) error {
	var err error
	switch len(recordIDs) {
	case 0:
	case 1:
		_, err = r.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: recordIDs[0]}})
	default:
		// The pending collection stays small, so one $in over it is cheap.
		_, err = r.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: recordIDs}}}})
	}
	return err
}

// Records keeps, per delivery record, a claim written just before the
// request goes out and the finished record written after it. Both are
// inserts keyed by the record id: the embedded store finds a document by _id
// directly, but evaluates any other filter (and every update) far more
// slowly, and the unique _id is the guarantee that one record is attempted
// once.
type Records struct {
	claims *mongo.Collection
	coll   *mongo.Collection
}

type claimDoc struct {
	RecordID    string    `bson:"_id"`
	EndpointID  string    `bson:"endpointId"`
	AttemptedAt time.Time `bson:"attemptedAt"`
}

func (r *Records) Claim(ctx context.Context, d domain.Delivery, at time.Time) (bool, error) {
	_, err := r.claims.InsertOne(ctx, claimDoc{RecordID: d.RecordID, EndpointID: d.EndpointID, AttemptedAt: at})
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim delivery %s: %w", d.RecordID, err)
	}
	return true, nil
}

func (r *Records) Finish(ctx context.Context, d domain.Delivery, at time.Time, o domain.Outcome) error {
	d.Status = domain.Failed
	if o.Delivered {
		d.Status = domain.Delivered
	}
	d.AttemptedAt = &at
	d.Duration, d.StatusCode, d.Reason, d.Error = o.Duration, o.StatusCode, o.Reason, o.Error
	_, err := r.coll.InsertOne(ctx, toDoc(d))
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("record outcome of %s: %w", d.RecordID, err)
	}
	return nil
}

func (r *Records) Get(ctx context.Context, recordID string) (domain.Delivery, error) {
	var d deliveryDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: recordID}}).Decode(&d)
	if err == nil {
		return d.domain(), nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Delivery{}, fmt.Errorf("read delivery %s: %w", recordID, err)
	}
	var c claimDoc
	err = r.claims.FindOne(ctx, bson.D{{Key: "_id", Value: recordID}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Delivery{}, apperr.NotFoundf("No delivery %s.", recordID)
	}
	if err != nil {
		return domain.Delivery{}, fmt.Errorf("read delivery claim %s: %w", recordID, err)
	}
	at := c.AttemptedAt.UTC()
	return domain.Delivery{RecordID: c.RecordID, EndpointID: c.EndpointID, Status: domain.Attempting, AttemptedAt: &at}, nil
}

func (r *Records) Interrupt(ctx context.Context, d domain.Delivery, at time.Time) (bool, error) {
	d.Status = domain.Failed
	d.AttemptedAt = &at
	d.Reason = domain.ReasonInterrupted
	d.Error = "interrupted: the dispatcher stopped during the attempt; whether the receiver got it is unknown, and it is not sent again"
	d.Duration, d.StatusCode = 0, 0
	_, err := r.coll.InsertOne(ctx, toDoc(d))
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark %s interrupted: %w", d.RecordID, err)
	}
	return true, nil
}

func (r *Records) ListByEndpoint(ctx context.Context, endpointID string, limit int) ([]domain.Delivery, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "endpointId", Value: endpointID}},
		options.Find().SetSort(bson.D{{Key: "attemptedAt", Value: -1}, {Key: "_id", Value: -1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", endpointID, err)
	}
	var docs []deliveryDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", endpointID, err)
	}
	out := make([]domain.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

// Orgs is the projection of the organisations that exist, built from org
// events.
type Orgs struct{ coll *mongo.Collection }

func (r *Orgs) Apply(ctx context.Context, orgID string, version int64) error {
	// Insert when unknown; otherwise raise the version only forwards.
	_, err := r.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: orgID}, {Key: "version", Value: version}})
	if err == nil {
		return nil
	}
	if !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("project org %s: %w", orgID, err)
	}
	_, err = r.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: orgID}, {Key: "version", Value: bson.D{{Key: "$lt", Value: version}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: version}}}})
	if err != nil {
		return fmt.Errorf("project org %s: %w", orgID, err)
	}
	return nil
}

func (r *Orgs) Exists(ctx context.Context, orgID string) (bool, error) {
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: orgID}}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
