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
	"quarters.dev/services/auth/internal/domain"
)

type credentialDoc struct {
	ClientID   string     `bson:"_id"`
	OrgID      string     `bson:"orgId"`
	Name       string     `bson:"name"`
	SecretHash string     `bson:"secretHash"`
	CreatedAt  time.Time  `bson:"createdAt"`
	RevokedAt  *time.Time `bson:"revokedAt"`
}

func (d credentialDoc) domain() domain.Credential {
	c := domain.Credential{
		ClientID: d.ClientID, OrgID: d.OrgID, Name: d.Name, SecretHash: d.SecretHash,
		CreatedAt: d.CreatedAt.UTC(),
	}
	if d.RevokedAt != nil {
		t := d.RevokedAt.UTC()
		c.RevokedAt = &t
	}
	return c
}

// Credentials keeps credential sets in MongoDB: the record from which Redis is
// synchronised.
type Credentials struct{ coll *mongo.Collection }

// NewCredentials returns the repository and makes sure its indexes exist.
func NewCredentials(ctx context.Context, db *mongo.Database) (*Credentials, error) {
	coll := db.Collection("credentials")
	err := extmongo.EnsureIndexes(ctx, coll, mongo.IndexModel{
		Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "createdAt", Value: 1}},
		Options: options.Index().SetName("org_created"),
	})
	if err != nil {
		return nil, fmt.Errorf("credential indexes: %w", err)
	}
	return &Credentials{coll: coll}, nil
}

func (r *Credentials) Insert(ctx context.Context, c domain.Credential) error {
	_, err := r.coll.InsertOne(ctx, credentialDoc{
		ClientID: c.ClientID, OrgID: c.OrgID, Name: c.Name, SecretHash: c.SecretHash, CreatedAt: c.CreatedAt,
	})
	return err
}

func (r *Credentials) Delete(ctx context.Context, clientID string) error {
	_, err := r.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: clientID}})
	return err
}

func (r *Credentials) Get(ctx context.Context, clientID string) (domain.Credential, error) {
	var d credentialDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: clientID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Credential{}, apperr.NotFoundf("No credential set %s.", clientID)
	}
	if err != nil {
		return domain.Credential{}, fmt.Errorf("read credential set %s: %w", clientID, err)
	}
	return d.domain(), nil
}

func (r *Credentials) List(ctx context.Context, orgID string) ([]domain.Credential, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "orgId", Value: orgID}},
		options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list credential sets of %s: %w", orgID, err)
	}
	var docs []credentialDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list credential sets of %s: %w", orgID, err)
	}
	out := make([]domain.Credential, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

func (r *Credentials) Revoke(ctx context.Context, orgID, clientID string, at time.Time) (domain.Credential, error) {
	// Stamp only the first revocation; a repeated one changes nothing.
	_, err := r.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: clientID}, {Key: "orgId", Value: orgID}, {Key: "revokedAt", Value: nil}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "revokedAt", Value: at}}}})
	if err != nil {
		return domain.Credential{}, fmt.Errorf("revoke credential set %s: %w", clientID, err)
	}
	c, err := r.Get(ctx, clientID)
	if err != nil || c.OrgID != orgID {
		return domain.Credential{}, apperr.NotFoundf("No credential set %s in organisation %s.", clientID, orgID)
	}
	return c, nil
}

func (r *Credentials) ForEach(ctx context.Context, fn func(domain.Credential) error) error {
	cur, err := r.coll.Find(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("scan credential sets: %w", err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var d credentialDoc
		if err := cur.Decode(&d); err != nil {
			return fmt.Errorf("decode credential set: %w", err)
		}
		if err := fn(d.domain()); err != nil {
			return err
		}
	}
	return cur.Err()
}
