package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/services/bookings/internal/domain"
)

// Projections keeps what bookings know of other services' aggregates, each
// document with the version of the event it was built from. A write
// applies only an event newer than the stored one, so redeliveries and
// reordering change nothing.
type Projections struct {
	orgs       *mongo.Collection
	properties *mongo.Collection
	agreements *mongo.Collection
}

// NewProjections returns the repository.
func NewProjections(db *mongo.Database) *Projections {
	return &Projections{
		orgs:       db.Collection("orgs"),
		properties: db.Collection("properties"),
		agreements: db.Collection("agreements"),
	}
}

// putNewer replaces the document _id=id with doc when its version is older
// than version (or it does not exist). applied is false for a stale event.
func putNewer(ctx context.Context, coll *mongo.Collection, id string, version int64, doc any) (bool, error) {
	res, err := coll.ReplaceOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "version", Value: bson.D{{Key: "$lt", Value: version}}}},
		doc, options.Replace().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		// The document exists with this version or a newer one.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store %s %s: %w", coll.Name(), id, err)
	}
	return res.MatchedCount == 1 || res.UpsertedCount == 1, nil
}

type orgDoc struct {
	ID                string `bson:"_id"`
	Name              string `bson:"name"`
	ContractProvider  string `bson:"contractProvider"`
	InquiryDailyLimit int    `bson:"inquiryDailyLimit"`
	Version           int64  `bson:"version"`
}

// PutOrg stores an org's settings from an org event.
func (p *Projections) PutOrg(ctx context.Context, o domain.Org) (bool, error) {
	return putNewer(ctx, p.orgs, o.ID, o.Version, orgDoc{
		ID: o.ID, Name: o.Name, ContractProvider: o.ContractProvider, InquiryDailyLimit: o.InquiryDailyLimit, Version: o.Version,
	})
}

// Org returns an org's settings.
func (p *Projections) Org(ctx context.Context, id string) (domain.Org, bool, error) {
	var d orgDoc
	err := p.orgs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Org{}, false, nil
	}
	if err != nil {
		return domain.Org{}, false, fmt.Errorf("read org %s: %w", id, err)
	}
	return domain.Org{ID: d.ID, Name: d.Name, ContractProvider: d.ContractProvider, InquiryDailyLimit: d.InquiryDailyLimit, Version: d.Version}, true, nil
}

type identityDoc struct {
	Nickname   string  `bson:"nickname"`
	Slug       string  `bson:"slug"`
	Street     *string `bson:"street"`
	PostalCode *string `bson:"postalCode"`
	City       string  `bson:"city"`
	Country    string  `bson:"country"`
	OwnerName  *string `bson:"ownerName"`
	Timezone   string  `bson:"timezone"`
}

type listingPricingDoc struct {
	MonthlyRateCents *int64 `bson:"monthlyRateCents"`
	NightlyRateCents *int64 `bson:"nightlyRateCents"`
	DepositCents     *int64 `bson:"depositCents"`
	UtilitiesCents   *int64 `bson:"utilitiesCents"`
	FurnitureCents   *int64 `bson:"furnitureCents"`
	Basis            string `bson:"rateBasis"`
}

type propertyDoc struct {
	ID        string            `bson:"_id"`
	OrgID     string            `bson:"orgId"`
	Published bool              `bson:"published"`
	Identity  *identityDoc      `bson:"identity"`
	Pricing   listingPricingDoc `bson:"pricing"`
	Version   int64             `bson:"version"`
}

func (d *propertyDoc) domain() domain.Property {
	p := domain.Property{ID: d.ID, OrgID: d.OrgID, Published: d.Published, Version: d.Version,
		Pricing: domain.ListingPricing{
			MonthlyRateCents: d.Pricing.MonthlyRateCents, NightlyRateCents: d.Pricing.NightlyRateCents,
			DepositCents: d.Pricing.DepositCents, UtilitiesCents: d.Pricing.UtilitiesCents,
			FurnitureCents: d.Pricing.FurnitureCents, Basis: domain.RateBasis(d.Pricing.Basis),
		}}
	if i := d.Identity; i != nil {
		p.Identity = &domain.PropertyIdentity{ID: d.ID, Nickname: i.Nickname, Slug: i.Slug, Street: i.Street,
			PostalCode: i.PostalCode, City: i.City, Country: i.Country, OwnerName: i.OwnerName, Timezone: i.Timezone}
	}
	return p
}

// PutProperty stores a published snapshot's identity and prices.
func (p *Projections) PutProperty(ctx context.Context, prop domain.Property) (bool, error) {
	d := propertyDoc{ID: prop.ID, OrgID: prop.OrgID, Published: prop.Published, Version: prop.Version,
		Pricing: listingPricingDoc{
			MonthlyRateCents: prop.Pricing.MonthlyRateCents, NightlyRateCents: prop.Pricing.NightlyRateCents,
			DepositCents: prop.Pricing.DepositCents, UtilitiesCents: prop.Pricing.UtilitiesCents,
			FurnitureCents: prop.Pricing.FurnitureCents, Basis: string(prop.Pricing.Basis),
		}}
	if i := prop.Identity; i != nil {
		d.Identity = &identityDoc{Nickname: i.Nickname, Slug: i.Slug, Street: i.Street, PostalCode: i.PostalCode,
			City: i.City, Country: i.Country, OwnerName: i.OwnerName, Timezone: i.Timezone}
	}
	return putNewer(ctx, p.properties, prop.ID, prop.Version, d)
}

// UnpublishProperty records that a property left the website, keeping the
// identity of its last published snapshot for its bookings.
func (p *Projections) UnpublishProperty(ctx context.Context, id, orgID string, version int64) (bool, error) {
	cur, found, err := p.Property(ctx, id)
	if err != nil {
		return false, err
	}
	if !found {
		cur = domain.Property{ID: id, OrgID: orgID}
	}
	if found && cur.Version >= version {
		return false, nil
	}
	cur.Published, cur.Version = false, version
	return p.PutProperty(ctx, cur)
}

// Property returns what is known of a property.
func (p *Projections) Property(ctx context.Context, id string) (domain.Property, bool, error) {
	var d propertyDoc
	err := p.properties.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Property{}, false, nil
	}
	if err != nil {
		return domain.Property{}, false, fmt.Errorf("read property %s: %w", id, err)
	}
	return d.domain(), true, nil
}

// Properties returns what is known of several properties.
func (p *Projections) Properties(ctx context.Context, ids []string) (map[string]domain.Property, error) {
	out := make(map[string]domain.Property, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var filter bson.D
	if len(ids) == 1 {
		filter = bson.D{{Key: "_id", Value: ids[0]}}
	} else {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	}
	cur, err := p.properties.Find(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	var docs []propertyDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	for i := range docs {
		out[docs[i].ID] = docs[i].domain()
	}
	return out, nil
}

type signerDoc struct {
	Role          string     `bson:"role"`
	Name          *string    `bson:"name"`
	Email         *string    `bson:"email"`
	Status        string     `bson:"status"`
	SigningURL    *string    `bson:"signingUrl"`
	ViewedAt      *time.Time `bson:"viewedAt"`
	CompletedAt   *time.Time `bson:"completedAt"`
	DeclinedAt    *time.Time `bson:"declinedAt"`
	DeclineReason *string    `bson:"declineReason"`
}

type documentDoc struct {
	SHA256     string     `bson:"sha256"`
	Bytes      int64      `bson:"bytes"`
	ArchivedAt *time.Time `bson:"archivedAt"`
}

type agreementDoc struct {
	ID           string       `bson:"id"`
	Version      int          `bson:"version"`
	Provider     string       `bson:"provider"`
	ExternalID   *string      `bson:"externalId"`
	Status       string       `bson:"status"`
	TemplateName *string      `bson:"templateName"`
	SentAt       *time.Time   `bson:"sentAt"`
	CompletedAt  *time.Time   `bson:"completedAt"`
	DeclinedAt   *time.Time   `bson:"declinedAt"`
	VoidedAt     *time.Time   `bson:"voidedAt"`
	Error        *string      `bson:"error"`
	DocumentURL  *string      `bson:"documentUrl"`
	Document     *documentDoc `bson:"document"`
	Signers      []signerDoc  `bson:"signers"`
	CreatedAt    time.Time    `bson:"createdAt"`
	UpdatedAt    time.Time    `bson:"updatedAt"`
}

type currentAgreementDoc struct {
	ID        string        `bson:"_id"` // the reservation id
	OrgID     string        `bson:"orgId"`
	Agreement *agreementDoc `bson:"agreement"`
	Version   int64         `bson:"version"`
	// ChangedAt is when what the booking shows of its agreement last
	// changed.
	ChangedAt time.Time `bson:"changedAt,omitempty"`
}

// PutAgreement stores the current agreement of a booking (nil: none) from
// an agreement event of the given aggregate version.
func (p *Projections) PutAgreement(ctx context.Context, reservationID, orgID string, version int64, a *domain.Agreement, changedAt time.Time) (bool, error) {
	d := currentAgreementDoc{ID: reservationID, OrgID: orgID, Version: version, ChangedAt: changedAt}
	if a != nil {
		ad := &agreementDoc{ID: a.ID, Version: a.Version, Provider: a.Provider, ExternalID: a.ExternalID, Status: a.Status,
			TemplateName: a.TemplateName, SentAt: a.SentAt, CompletedAt: a.CompletedAt, DeclinedAt: a.DeclinedAt,
			VoidedAt: a.VoidedAt, Error: a.Error, DocumentURL: a.DocumentURL, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
			Signers: make([]signerDoc, 0, len(a.Signers))}
		if doc := a.Document; doc != nil {
			ad.Document = &documentDoc{SHA256: doc.SHA256, Bytes: doc.Bytes, ArchivedAt: doc.ArchivedAt}
		}
		for _, s := range a.Signers {
			ad.Signers = append(ad.Signers, signerDoc(s))
		}
		d.Agreement = ad
	}
	return putNewer(ctx, p.agreements, reservationID, version, d)
}

func (d *agreementDoc) domain() domain.Agreement {
	a := domain.Agreement{ID: d.ID, Version: d.Version, Provider: d.Provider, ExternalID: d.ExternalID, Status: d.Status,
		TemplateName: d.TemplateName, SentAt: utc(d.SentAt), CompletedAt: utc(d.CompletedAt), DeclinedAt: utc(d.DeclinedAt),
		VoidedAt: utc(d.VoidedAt), Error: d.Error, DocumentURL: d.DocumentURL, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
		Signers: make([]domain.Signer, 0, len(d.Signers))}
	if doc := d.Document; doc != nil {
		a.Document = &domain.AgreementDocument{SHA256: doc.SHA256, Bytes: doc.Bytes, ArchivedAt: utc(doc.ArchivedAt)}
	}
	for _, s := range d.Signers {
		s.ViewedAt, s.CompletedAt, s.DeclinedAt = utc(s.ViewedAt), utc(s.CompletedAt), utc(s.DeclinedAt)
		a.Signers = append(a.Signers, domain.Signer(s))
	}
	return a
}

// AgreementChange returns the stored current agreement of a booking and when
// what the booking shows of it last changed.
func (p *Projections) AgreementChange(ctx context.Context, reservationID string) (*domain.Agreement, time.Time, error) {
	var d currentAgreementDoc
	err := p.agreements.FindOne(ctx, bson.D{{Key: "_id", Value: reservationID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read agreement of %s: %w", reservationID, err)
	}
	var a *domain.Agreement
	if d.Agreement != nil {
		v := d.Agreement.domain()
		a = &v
	}
	return a, d.ChangedAt.UTC(), nil
}

// Agreements returns the current agreements of several bookings.
func (p *Projections) Agreements(ctx context.Context, reservationIDs []string) (map[string]domain.Agreement, error) {
	out := map[string]domain.Agreement{}
	if len(reservationIDs) == 0 {
		return out, nil
	}
	var filter bson.D
	if len(reservationIDs) == 1 {
		filter = bson.D{{Key: "_id", Value: reservationIDs[0]}}
	} else {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: reservationIDs}}}}
	}
	cur, err := p.agreements.Find(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("read agreements: %w", err)
	}
	var docs []currentAgreementDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read agreements: %w", err)
	}
	for _, d := range docs {
		if d.Agreement != nil {
			out[d.ID] = d.Agreement.domain()
		}
	}
	return out, nil
}
