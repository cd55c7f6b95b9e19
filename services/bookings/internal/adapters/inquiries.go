package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/outbox"
	"quarters.dev/services/bookings/internal/domain"
)

// Inquiry event types.
const (
	InquiryCreated   = "inquiry.created"
	InquiryConverted = "inquiry.converted"
)

// Inquiries keeps inquiries, one document each with its pending events and,
// until it is sent, its confirmation email: the document is the email's
// queue, written in the same insert as the inquiry, so a stored inquiry
// never loses its email to a restart.
type Inquiries struct {
	coll   *mongo.Collection
	events InquiryEventFunc
	notify func(id any) // wakes the outbox relay for a document written with events
}

// InquiryEventFunc encodes an inquiry's event.
type InquiryEventFunc func(ctx context.Context, q domain.Inquiry, eventType string) (outbox.Event, error)

// InquiryCollection is the collection of inquiries (the relay drains it).
func InquiryCollection(db *mongo.Database) *mongo.Collection { return db.Collection("inquiries") }

// NewInquiries returns the repository and makes sure its indexes exist.
func NewInquiries(ctx context.Context, db *mongo.Database, events InquiryEventFunc, notify func(id any)) (*Inquiries, error) {
	coll := InquiryCollection(db)
	err := extmongo.EnsureIndexes(ctx, coll,
		mongo.IndexModel{
			Keys:    bson.D{{Key: "orgId", Value: 1}, {Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("org_newest"),
		},
		mongo.IndexModel{
			Keys:    bson.D{{Key: "mailPending", Value: 1}, {Key: "mailNextAt", Value: 1}},
			Options: options.Index().SetName("mail_due"),
		},
	)
	if err != nil {
		return nil, fmt.Errorf("inquiry indexes: %w", err)
	}
	return &Inquiries{coll: coll, events: events, notify: notify}, nil
}

type mailDoc struct {
	To      string `bson:"to"`
	ToName  string `bson:"toName"`
	Locale  string `bson:"locale"`
	Subject string `bson:"subject"`
	Body    string `bson:"body"`
}

type inquiryDoc struct {
	ID               string     `bson:"_id"`
	OrgID            string     `bson:"orgId"`
	PropertyID       string     `bson:"propertyId"`
	FirstName        *string    `bson:"firstName"`
	LastName         string     `bson:"lastName"`
	Email            string     `bson:"email"`
	Phone            *string    `bson:"phone"`
	CheckIn          *string    `bson:"checkIn"`
	CheckOut         *string    `bson:"checkOut"`
	Adults           *int       `bson:"adults"`
	Children         *int       `bson:"children"`
	Infants          *int       `bson:"infants"`
	Pets             *bool      `bson:"pets"`
	GuestCount       *int       `bson:"guestCount"`
	Message          *string    `bson:"message"`
	Locale           *string    `bson:"locale"`
	Source           string     `bson:"source"`
	Metadata         *string    `bson:"metadataJson"`
	SendConfirmation *bool      `bson:"sendConfirmation"`
	Form             *string    `bson:"form"`
	ReservationID    *string    `bson:"reservationId"`
	ConvertedAt      *time.Time `bson:"convertedAt"`
	CreatedAt        time.Time  `bson:"createdAt"`
	Version          int64      `bson:"version"`

	Mail           *mailDoc   `bson:"mail"`
	MailPending    bool       `bson:"mailPending"`
	MailNextAt     time.Time  `bson:"mailNextAt"`
	MailLeaseUntil time.Time  `bson:"mailLeaseUntil"`
	MailAttempts   int        `bson:"mailAttempts"`
	MailSentAt     *time.Time `bson:"mailSentAt"`
	MailError      *string    `bson:"mailError"`

	outbox.Pending `bson:",inline"`
}

func strOf(d *domain.Date) *string {
	if d == nil {
		return nil
	}
	s := d.String()
	return &s
}

func dateOf(s *string) *domain.Date {
	if s == nil {
		return nil
	}
	d := domain.MustDate(*s)
	return &d
}

func inquiryDocOf(q domain.Inquiry) inquiryDoc {
	d := inquiryDoc{
		ID: q.ID, OrgID: q.OrgID, PropertyID: q.PropertyID, FirstName: q.FirstName, LastName: q.LastName,
		Email: q.Email, Phone: q.Phone, CheckIn: strOf(q.CheckIn), CheckOut: strOf(q.CheckOut),
		Adults: q.Adults, Children: q.Children, Infants: q.Infants, Pets: q.Pets, GuestCount: q.GuestCount,
		Message: q.Message, Locale: q.Locale, Source: q.Source, SendConfirmation: q.SendConfirmation,
		Form: q.Form, ReservationID: q.ReservationID, ConvertedAt: q.ConvertedAt, CreatedAt: q.CreatedAt,
		Version: q.Version,
	}
	if len(q.Metadata) > 0 {
		s := string(q.Metadata)
		d.Metadata = &s
	}
	return d
}

func (d *inquiryDoc) domain() domain.Inquiry {
	q := domain.Inquiry{
		ID: d.ID, OrgID: d.OrgID, PropertyID: d.PropertyID, FirstName: d.FirstName, LastName: d.LastName,
		Email: d.Email, Phone: d.Phone, CheckIn: dateOf(d.CheckIn), CheckOut: dateOf(d.CheckOut),
		Adults: d.Adults, Children: d.Children, Infants: d.Infants, Pets: d.Pets, GuestCount: d.GuestCount,
		Message: d.Message, Locale: d.Locale, Source: d.Source, SendConfirmation: d.SendConfirmation,
		Form: d.Form, ReservationID: d.ReservationID, ConvertedAt: utc(d.ConvertedAt), CreatedAt: d.CreatedAt.UTC(),
		Version: d.Version,
	}
	if d.Metadata != nil {
		q.Metadata = json.RawMessage(*d.Metadata)
	}
	return q
}

// Insert stores a new inquiry with inquiry.created and, when email is not
// nil, its confirmation email waiting to be sent.
func (r *Inquiries) Insert(ctx context.Context, q domain.Inquiry, email *domain.Confirmation) error {
	ev, err := r.events(ctx, q, InquiryCreated)
	if err != nil {
		return err
	}
	d := inquiryDocOf(q)
	if email != nil {
		d.Mail = &mailDoc{To: email.To, ToName: email.ToName, Locale: email.Locale, Subject: email.Subject, Body: email.Body}
		d.MailPending = true
		d.MailNextAt = q.CreatedAt
	}
	d.Add(ev)
	if _, err := r.coll.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("insert inquiry %s: %w", q.ID, err)
	}
	r.notify(q.ID)
	return nil
}

var noOutbox = options.FindOne().SetProjection(bson.D{{Key: outbox.FieldEvents, Value: 0}, {Key: "mail", Value: 0}})

// Get returns an inquiry of orgID.
func (r *Inquiries) Get(ctx context.Context, orgID, id string) (domain.Inquiry, error) {
	var d inquiryDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, noOutbox).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && d.OrgID != orgID) {
		return domain.Inquiry{}, apperr.NotFoundf("No inquiry %s.", id)
	}
	if err != nil {
		return domain.Inquiry{}, fmt.Errorf("read inquiry %s: %w", id, err)
	}
	return d.domain(), nil
}

// List returns an org's inquiries, newest first.
func (r *Inquiries) List(ctx context.Context, orgID string) ([]domain.Inquiry, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "orgId", Value: orgID}}, options.Find().
		SetSort(bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}).
		SetProjection(bson.D{{Key: outbox.FieldEvents, Value: 0}, {Key: "mail", Value: 0}}))
	if err != nil {
		return nil, fmt.Errorf("list inquiries: %w", err)
	}
	var docs []inquiryDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list inquiries: %w", err)
	}
	out := make([]domain.Inquiry, len(docs))
	for i := range docs {
		out[i] = docs[i].domain()
	}
	return out, nil
}

// MarkConverted records the booking an inquiry became.
func (r *Inquiries) MarkConverted(ctx context.Context, q domain.Inquiry, reservationID string, at time.Time) (bool, error) {
	for range 20 {
		cur, err := r.Get(ctx, q.OrgID, q.ID)
		if err != nil {
			return false, err
		}
		if cur.ReservationID != nil {
			return false, nil
		}
		prev := cur.Version
		cur.ReservationID, cur.ConvertedAt, cur.Version = &reservationID, &at, prev+1
		ev, err := r.events(ctx, cur, InquiryConverted)
		if err != nil {
			return false, err
		}
		update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
			{Key: "reservationId", Value: reservationID},
			{Key: "convertedAt", Value: at},
			{Key: "version", Value: cur.Version},
		}}}, ev)
		if err != nil {
			return false, err
		}
		res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: q.ID}, {Key: "version", Value: prev}}, update)
		if err != nil {
			return false, fmt.Errorf("mark inquiry %s converted: %w", q.ID, err)
		}
		if res.MatchedCount == 1 {
			r.notify(q.ID)
			return true, nil
		}
	}
	return false, apperr.Conflictf("Inquiry %s is being changed concurrently; retry.", q.ID)
}

// DueMail returns up to limit emails whose time has come.
func (r *Inquiries) DueMail(ctx context.Context, now time.Time, limit int) ([]domain.MailJob, error) {
	cur, err := r.coll.Find(ctx,
		bson.D{{Key: "mailPending", Value: true}, {Key: "mailNextAt", Value: bson.D{{Key: "$lte", Value: now}}}},
		options.Find().SetSort(bson.D{{Key: "mailNextAt", Value: 1}}).SetLimit(int64(limit)).
			SetProjection(bson.D{{Key: "orgId", Value: 1}, {Key: "mail", Value: 1}, {Key: "mailAttempts", Value: 1}, {Key: "mailLeaseUntil", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read due mail: %w", err)
	}
	var docs []inquiryDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read due mail: %w", err)
	}
	out := make([]domain.MailJob, 0, len(docs))
	for _, d := range docs {
		if d.Mail == nil || d.MailLeaseUntil.After(now) {
			continue
		}
		out = append(out, domain.MailJob{InquiryID: d.ID, OrgID: d.OrgID, Attempts: d.MailAttempts, Email: domain.Confirmation{
			OrgID: d.OrgID, InquiryID: d.ID, To: d.Mail.To, ToName: d.Mail.ToName, Locale: d.Mail.Locale,
			Subject: d.Mail.Subject, Body: d.Mail.Body,
		}})
	}
	return out, nil
}

// ClaimMail leases a due email to this process until now+lease, so that
// another replica does not send it at the same time. False means someone
// else holds it or it was sent.
func (r *Inquiries) ClaimMail(ctx context.Context, id string, now time.Time, lease time.Duration) (bool, error) {
	res, err := r.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "mailPending", Value: true}, {Key: "mailLeaseUntil", Value: bson.D{{Key: "$lte", Value: now}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "mailLeaseUntil", Value: now.Add(lease)}}}})
	if err != nil {
		return false, fmt.Errorf("claim mail of inquiry %s: %w", id, err)
	}
	return res.MatchedCount == 1, nil
}

// MailSent records a sent email.
func (r *Inquiries) MailSent(ctx context.Context, id string, at time.Time) error {
	_, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "mailPending", Value: false}, {Key: "mailSentAt", Value: at}, {Key: "mailError", Value: nil}}},
			{Key: "$inc", Value: bson.D{{Key: "mailAttempts", Value: 1}}}})
	if err != nil {
		return fmt.Errorf("record mail of inquiry %s sent: %w", id, err)
	}
	return nil
}

// MailFailed records a failed attempt: retried at next, or given up.
func (r *Inquiries) MailFailed(ctx context.Context, id string, next time.Time, giveUp bool, reason string) error {
	_, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "mailPending", Value: !giveUp}, {Key: "mailNextAt", Value: next},
			{Key: "mailLeaseUntil", Value: time.Time{}}, {Key: "mailError", Value: reason},
		}}, {Key: "$inc", Value: bson.D{{Key: "mailAttempts", Value: 1}}}})
	if err != nil {
		return fmt.Errorf("record mail of inquiry %s failed: %w", id, err)
	}
	return nil
}
