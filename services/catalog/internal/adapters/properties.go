// Package adapters keeps the catalog's documents in MongoDB, encodes its
// listing events and reads the events it consumes from Kafka.
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
	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
)

// PropertyCollection is the collection of properties (the outbox relay
// drains it).
func PropertyCollection(db *mongo.Database) *mongo.Collection { return db.Collection("properties") }

// Properties keeps one document per property: the draft, the published
// snapshot, the version and the pending listing events.
type Properties struct {
	coll   *mongo.Collection
	events EventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
}

// NewProperties returns the repository and makes sure its indexes exist;
// notify wakes the outbox relay after a write with events.
func NewProperties(ctx context.Context, db *mongo.Database, events EventFunc, notify func(id any)) (*Properties, error) {
	coll := PropertyCollection(db)
	err := extmongo.EnsureIndexes(ctx, coll, mongo.IndexModel{
		Keys:    bson.D{{Key: "orgId", Value: 1}},
		Options: options.Index().SetName("org"),
	})
	if err != nil {
		return nil, fmt.Errorf("property indexes: %w", err)
	}
	if notify == nil {
		notify = func(any) {}
	}
	return &Properties{coll: coll, events: events, notify: notify}, nil
}

type propertyDoc struct {
	ID           string          `bson:"_id"`
	OrgID        string          `bson:"orgId"`
	Version      int64           `bson:"version"`
	Draft        draftDoc        `bson:"draft"`
	Listing      *listingDoc     `bson:"listing"`
	PublishedAt  *time.Time      `bson:"publishedAt"`
	Images       []imageDoc      `bson:"images"`
	ImageSources []draftImageDoc `bson:"imageSources"`
	Deleted      bool            `bson:"deleted"`
	CreatedAt    time.Time       `bson:"createdAt"`
	UpdatedAt    time.Time       `bson:"updatedAt"`
}

type storedProperty struct {
	Doc            propertyDoc `bson:",inline"`
	outbox.Pending `bson:",inline"`
}

type draftDoc struct {
	Nickname     string                    `bson:"nickname"`
	Slug         string                    `bson:"slug"`
	Active       bool                      `bson:"active"`
	IsListed     bool                      `bson:"isListed"`
	PropertyType string                    `bson:"propertyType"`
	RoomType     string                    `bson:"roomType"`
	Address      addressDoc                `bson:"address"`
	Accommodates int                       `bson:"accommodates"`
	Rooms        []roomDoc                 `bson:"rooms"`
	SquareMeter  *int                      `bson:"squareMeter"`
	Timezone     string                    `bson:"timezone"`
	Pricing      pricingDoc                `bson:"pricing"`
	Terms        termsDoc                  `bson:"terms"`
	Amenities    []string                  `bson:"amenities"`
	Description  descriptionDoc            `bson:"description"`
	Translations map[string]descriptionDoc `bson:"translations"`
	Images       []draftImageDoc           `bson:"images"`
	OwnerName    *string                   `bson:"ownerName"`
}

type draftImageDoc struct {
	ID        string  `bson:"id"`
	IsPrimary bool    `bson:"isPrimary"`
	Caption   *string `bson:"caption"`
	SortOrder int     `bson:"sortOrder"`
	Width     int     `bson:"width"`
	Height    int     `bson:"height"`
	Bytes     int64   `bson:"bytes"`
	URL       string  `bson:"url"`
}

func propertyDocOf(p domain.Property) propertyDoc {
	d := p.Draft
	doc := propertyDoc{
		ID: p.ID, OrgID: p.OrgID, Version: p.Version, PublishedAt: p.PublishedAt, Deleted: p.Deleted,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		Draft: draftDoc{
			Nickname: d.Nickname, Slug: d.Slug, Active: d.Active, IsListed: d.IsListed,
			PropertyType: d.PropertyType, RoomType: d.RoomType, Address: addressDoc(d.Address),
			Accommodates: d.Accommodates, SquareMeter: d.SquareMeter, Timezone: d.Timezone,
			Pricing: pricingDoc(d.Pricing), Terms: termsDoc(d.Terms), Amenities: d.Amenities,
			Description: descriptionDoc(d.Description), OwnerName: d.OwnerName,
		},
	}
	for _, r := range d.Rooms {
		room := roomDoc{Kind: string(r.Kind), Name: r.Name}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, bedDoc(b))
		}
		doc.Draft.Rooms = append(doc.Draft.Rooms, room)
	}
	if len(d.Translations) > 0 {
		doc.Draft.Translations = make(map[string]descriptionDoc, len(d.Translations))
		for k, v := range d.Translations {
			doc.Draft.Translations[k] = descriptionDoc(v)
		}
	}
	for _, im := range d.Images {
		doc.Draft.Images = append(doc.Draft.Images, draftImageDoc(im))
	}
	if p.Listing != nil {
		doc.Listing = docOf(*p.Listing)
	}
	for _, im := range p.Images {
		doc.Images = append(doc.Images, imageDoc(im))
	}
	for _, im := range p.ImageSources {
		doc.ImageSources = append(doc.ImageSources, draftImageDoc(im))
	}
	return doc
}

func (doc *propertyDoc) domain() domain.Property {
	d := doc.Draft
	p := domain.Property{
		ID: doc.ID, OrgID: doc.OrgID, Version: doc.Version, Deleted: doc.Deleted,
		CreatedAt: doc.CreatedAt.UTC(), UpdatedAt: doc.UpdatedAt.UTC(),
		Draft: domain.Draft{
			Nickname: d.Nickname, Slug: d.Slug, Active: d.Active, IsListed: d.IsListed,
			PropertyType: d.PropertyType, RoomType: d.RoomType, Address: domain.Address(d.Address),
			Accommodates: d.Accommodates, SquareMeter: d.SquareMeter, Timezone: d.Timezone,
			Pricing: domain.ListingPricing(d.Pricing), Terms: domain.Terms(d.Terms), Amenities: d.Amenities,
			Description: domain.Description(d.Description), OwnerName: d.OwnerName,
		},
	}
	if doc.PublishedAt != nil {
		t := doc.PublishedAt.UTC()
		p.PublishedAt = &t
	}
	for _, r := range d.Rooms {
		room := domain.Room{Kind: domain.RoomKind(r.Kind), Name: r.Name}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, domain.Bed(b))
		}
		p.Draft.Rooms = append(p.Draft.Rooms, room)
	}
	if len(d.Translations) > 0 {
		p.Draft.Translations = make(map[string]domain.Description, len(d.Translations))
		for k, v := range d.Translations {
			p.Draft.Translations[k] = domain.Description(v)
		}
	}
	for _, im := range d.Images {
		p.Draft.Images = append(p.Draft.Images, domain.DraftImage(im))
	}
	if doc.Listing != nil {
		l := doc.Listing.domain()
		p.Listing = &l
	}
	for _, im := range doc.Images {
		p.Images = append(p.Images, domain.Image(im))
	}
	for _, im := range doc.ImageSources {
		p.ImageSources = append(p.ImageSources, domain.DraftImage(im))
	}
	return p
}

// Create inserts a new property.
func (r *Properties) Create(ctx context.Context, p domain.Property, eventType string) error {
	doc := storedProperty{Doc: propertyDocOf(p)}
	ev, err := r.events(ctx, p, eventType)
	if err != nil {
		return err
	}
	doc.Add(ev)
	if _, err := r.coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("insert property %s: %w", p.ID, err)
	}
	r.notify(p.ID)
	return nil
}

func (r *Properties) load(ctx context.Context, orgID, id string) (domain.Property, error) {
	var doc propertyDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}},
		options.FindOne().SetProjection(bson.D{{Key: outbox.FieldEvents, Value: 0}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && (doc.OrgID != orgID || doc.Deleted)) {
		return domain.Property{}, apperr.NotFoundf("No property %s.", id)
	}
	if err != nil {
		return domain.Property{}, fmt.Errorf("read property %s: %w", id, err)
	}
	return doc.domain(), nil
}

// Get returns a property of the org.
func (r *Properties) Get(ctx context.Context, orgID, id string) (domain.Property, error) {
	return r.load(ctx, orgID, id)
}

// maxAttempts bounds the retries of a version-guarded update under
// contention; each failed attempt means another writer made progress.
const maxAttempts = 20

// Update changes a property under a compare-and-set on its version; the
// state and the event the change produced are stored by one update.
func (r *Properties) Update(ctx context.Context, orgID, id string, change func(*domain.Property) (app.Change, error)) (domain.Property, error) {
	for range maxAttempts {
		p, err := r.load(ctx, orgID, id)
		if err != nil {
			return domain.Property{}, err
		}
		prev := p.Version
		ch, err := change(&p)
		if err != nil {
			return domain.Property{}, err
		}
		if ch.Skip {
			return p, nil
		}
		p.Version = prev + 1
		raw, err := bson.Marshal(propertyDocOf(p))
		if err != nil {
			return domain.Property{}, fmt.Errorf("encode property %s: %w", id, err)
		}
		var set bson.D
		if err := bson.Unmarshal(raw, &set); err != nil {
			return domain.Property{}, fmt.Errorf("encode property %s: %w", id, err)
		}
		update := bson.D{{Key: "$set", Value: set[1:]}} // everything but _id
		evs := make([]outbox.Event, 0, len(ch.Events))
		for _, typ := range ch.Events {
			ev, err := r.events(ctx, p, typ)
			if err != nil {
				return domain.Property{}, err
			}
			evs = append(evs, ev)
		}
		if update, err = outbox.Append(update, evs...); err != nil {
			return domain.Property{}, err
		}
		res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "version", Value: prev}}, update)
		if err != nil {
			return domain.Property{}, fmt.Errorf("update property %s: %w", id, err)
		}
		if res.MatchedCount == 1 {
			if len(evs) > 0 {
				r.notify(id)
			}
			return p, nil
		}
	}
	return domain.Property{}, apperr.Conflictf("Property %s is being changed concurrently; retry.", id)
}

// States returns the version and published snapshot of every property,
// deleted ones included, so the view knows which events are stale.
func (r *Properties) States(ctx context.Context) ([]domain.ListingState, error) {
	cur, err := r.coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{
		{Key: "_id", Value: 1}, {Key: "orgId", Value: 1}, {Key: "version", Value: 1},
		{Key: "listing", Value: 1}, {Key: "deleted", Value: 1},
	}))
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	defer cur.Close(ctx)
	var out []domain.ListingState
	for cur.Next(ctx) {
		var doc struct {
			ID      string      `bson:"_id"`
			OrgID   string      `bson:"orgId"`
			Version int64       `bson:"version"`
			Listing *listingDoc `bson:"listing"`
			Deleted bool        `bson:"deleted"`
		}
		if err := cur.Decode(&doc); err != nil {
			return nil, fmt.Errorf("read properties: %w", err)
		}
		st := domain.ListingState{ID: doc.ID, OrgID: doc.OrgID, Version: doc.Version}
		if doc.Listing != nil && !doc.Deleted {
			l := doc.Listing.domain()
			st.Listing = &l
		}
		out = append(out, st)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	return out, nil
}
