// Package adapters keeps the agreements service's documents in MongoDB:
// agreement histories (one document per reservation, with its outbox), the
// projections of orgs and reservations, and archived PDFs in GridFS.
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
	"quarters.dev/services/agreements/internal/domain"
)

// Agreement event types.
const (
	AgreementUpdated   = "agreement.updated"
	AgreementRequested = "agreement.requested"
)

// HistoryCollection holds one document per reservation with every agreement
// version (the outbox relay drains it).
func HistoryCollection(db *mongo.Database) *mongo.Collection { return db.Collection("agreements") }

// EventFunc encodes one event of a history: the version at index (or none
// when index < 0) with whether it is current, or a contract request.
type EventFunc func(ctx context.Context, h *domain.History, eventType string, revision int64, index int, req *domain.ContractRequest) (outbox.Event, error)

// Histories stores agreement histories. A change rewrites the document's
// versions and appends its events in one update guarded by the document's
// version, so concurrent reports serialise without transactions.
type Histories struct {
	coll   *mongo.Collection
	events EventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
}

// NewHistories returns the repository over HistoryCollection; notify wakes
// the outbox relay after a write.
func NewHistories(db *mongo.Database, events EventFunc, notify func(id any)) *Histories {
	return &Histories{coll: HistoryCollection(db), events: events, notify: notify}
}

type historyDoc struct {
	ID                  string         `bson:"_id"`
	OrgID               string         `bson:"orgId"`
	Versions            []agreementDoc `bson:"versions"`
	ContractRequestedAt *time.Time     `bson:"contractRequestedAt"`
	Version             int64          `bson:"version"`
	outbox.Pending      `bson:",inline"`
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

type documentDoc struct {
	FileID      string    `bson:"fileId"`
	SHA256      string    `bson:"sha256"`
	Bytes       int64     `bson:"bytes"`
	ContentType string    `bson:"contentType"`
	UploadedAt  time.Time `bson:"uploadedAt"`
}

type signerDoc struct {
	Role          string     `bson:"role"`
	Name          string     `bson:"name"`
	Email         string     `bson:"email"`
	Status        string     `bson:"status"`
	SigningURL    *string    `bson:"signingUrl"`
	SigningToken  string     `bson:"signingToken,omitempty"`
	ViewedAt      *time.Time `bson:"viewedAt"`
	CompletedAt   *time.Time `bson:"completedAt"`
	DeclinedAt    *time.Time `bson:"declinedAt"`
	DeclineReason *string    `bson:"declineReason"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (d historyDoc) domain() domain.History {
	h := domain.History{ReservationID: d.ID, OrgID: d.OrgID, Revision: d.Version, ContractRequestedAt: utc(d.ContractRequestedAt)}
	h.Versions = make([]domain.Agreement, 0, len(d.Versions))
	for _, a := range d.Versions {
		x := domain.Agreement{
			ID: a.ID, Version: a.Version, Provider: domain.Provider(a.Provider), ExternalID: a.ExternalID,
			Status: domain.Status(a.Status), TemplateName: a.TemplateName,
			SentAt: utc(a.SentAt), CompletedAt: utc(a.CompletedAt), DeclinedAt: utc(a.DeclinedAt), VoidedAt: utc(a.VoidedAt),
			Error: a.Error, DocumentURL: a.DocumentURL,
			Signers:   make([]domain.Signer, 0, len(a.Signers)),
			CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
		}
		if a.Document != nil {
			x.Document = &domain.Document{
				FileID: a.Document.FileID, SHA256: a.Document.SHA256, Bytes: a.Document.Bytes,
				ContentType: a.Document.ContentType, UploadedAt: a.Document.UploadedAt.UTC(),
			}
		}
		for _, s := range a.Signers {
			x.Signers = append(x.Signers, domain.Signer{
				Role: s.Role, Name: s.Name, Email: s.Email, Status: s.Status, SigningURL: s.SigningURL,
				SigningToken: s.SigningToken, ViewedAt: utc(s.ViewedAt), CompletedAt: utc(s.CompletedAt),
				DeclinedAt: utc(s.DeclinedAt), DeclineReason: s.DeclineReason,
			})
		}
		h.Versions = append(h.Versions, x)
	}
	return h
}

func versionsDoc(vs []domain.Agreement) []agreementDoc {
	out := make([]agreementDoc, 0, len(vs))
	for _, a := range vs {
		d := agreementDoc{
			ID: a.ID, Version: a.Version, Provider: string(a.Provider), ExternalID: a.ExternalID,
			Status: string(a.Status), TemplateName: a.TemplateName,
			SentAt: a.SentAt, CompletedAt: a.CompletedAt, DeclinedAt: a.DeclinedAt, VoidedAt: a.VoidedAt,
			Error: a.Error, DocumentURL: a.DocumentURL, Signers: make([]signerDoc, 0, len(a.Signers)),
			CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		}
		if a.Document != nil {
			d.Document = &documentDoc{
				FileID: a.Document.FileID, SHA256: a.Document.SHA256, Bytes: a.Document.Bytes,
				ContentType: a.Document.ContentType, UploadedAt: a.Document.UploadedAt,
			}
		}
		for _, s := range a.Signers {
			d.Signers = append(d.Signers, signerDoc{
				Role: s.Role, Name: s.Name, Email: s.Email, Status: s.Status, SigningURL: s.SigningURL,
				SigningToken: s.SigningToken, ViewedAt: s.ViewedAt, CompletedAt: s.CompletedAt,
				DeclinedAt: s.DeclinedAt, DeclineReason: s.DeclineReason,
			})
		}
		out = append(out, d)
	}
	return out
}

// Get returns the reservation's history, empty when it has none.
func (r *Histories) Get(ctx context.Context, reservationID string) (domain.History, error) {
	h, _, err := r.load(ctx, reservationID)
	return h, err
}

func (r *Histories) load(ctx context.Context, reservationID string) (domain.History, bool, error) {
	var d historyDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: reservationID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return domain.History{ReservationID: reservationID}, false, nil
	}
	if err != nil {
		return domain.History{}, false, fmt.Errorf("read agreements of reservation %s: %w", reservationID, err)
	}
	return d.domain(), true, nil
}

// maxAttempts bounds the retries of a version-guarded update under
// contention; each failed attempt means another writer made progress.
const maxAttempts = 30

// Update implements app.Histories.
func (r *Histories) Update(ctx context.Context, reservationID, orgID string, change func(*domain.History) (domain.Effect, error)) (domain.History, error) {
	for range maxAttempts {
		h, exists, err := r.load(ctx, reservationID)
		if err != nil {
			return domain.History{}, err
		}
		prev := h.Revision
		eff, err := change(&h)
		if err != nil || eff.None() {
			return h, err
		}
		h.OrgID = orgID
		events, err := r.encode(ctx, &h, eff)
		if err != nil {
			return domain.History{}, err
		}
		stored, err := r.store(ctx, &h, exists, prev, events)
		if err != nil {
			return domain.History{}, err
		}
		if stored {
			r.notify(h.ReservationID)
			return h, nil
		}
	}
	return domain.History{}, apperr.Conflictf("The agreement of reservation %s is being changed concurrently; retry.", reservationID)
}

// encode makes one event per changed version, then the contract request,
// each with the next revision.
func (r *Histories) encode(ctx context.Context, h *domain.History, eff domain.Effect) ([]outbox.Event, error) {
	var events []outbox.Event
	for _, i := range eff.Changed {
		h.Revision++
		ev, err := r.events(ctx, h, AgreementUpdated, h.Revision, i, nil)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	if eff.Requested != nil {
		h.Revision++
		ev, err := r.events(ctx, h, AgreementRequested, h.Revision, len(h.Versions)-1, eff.Requested)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func (r *Histories) store(ctx context.Context, h *domain.History, exists bool, prev int64, events []outbox.Event) (bool, error) {
	if !exists {
		doc := historyDoc{ID: h.ReservationID, OrgID: h.OrgID, Versions: versionsDoc(h.Versions),
			ContractRequestedAt: h.ContractRequestedAt, Version: h.Revision}
		doc.Add(events...)
		_, err := r.coll.InsertOne(ctx, doc)
		if mongo.IsDuplicateKeyError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("insert agreements of reservation %s: %w", h.ReservationID, err)
		}
		return true, nil
	}
	set := bson.D{
		{Key: "orgId", Value: h.OrgID},
		{Key: "versions", Value: versionsDoc(h.Versions)},
		{Key: "contractRequestedAt", Value: h.ContractRequestedAt},
		{Key: "version", Value: h.Revision},
	}
	update, err := outbox.Append(bson.D{{Key: "$set", Value: set}}, events...)
	if err != nil {
		return false, err
	}
	res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: h.ReservationID}, {Key: "version", Value: prev}}, update)
	if err != nil {
		return false, fmt.Errorf("update agreements of reservation %s: %w", h.ReservationID, err)
	}
	return res.MatchedCount == 1, nil
}
