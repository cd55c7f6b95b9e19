// Package webhook receives the signed webhook deliveries of the Quarters
// public API.
//
// A delivery is a POST whose body is the JSON envelope
// `{id, event, createdAt, data}` and whose headers carry the event name
// (x-legacy-event), the delivery id (x-legacy-delivery) and the signature
// (x-legacy-signature): `sha256=` followed by the lowercase hex HMAC-SHA256 of
// the raw body bytes under the endpoint's signing secret.
//
// [Verify] checks a signature in constant time over the body exactly as
// received. [Handler] is a complete receiver: it limits the body size,
// verifies the signature, decodes the envelope into an [Event] with typed
// data, skips deliveries it has already handled (by delivery id, through a
// pluggable [Store]) and answers the way the dispatcher expects: any 2xx
// counts as received, and there is exactly one attempt per delivery, so a
// receiver must answer within ten seconds and recover a missed change with an
// `updatedSince` read of the API.
//
// The data of a delivery points at the record; it is not the record. Fetch
// the record through the API (package quarters.dev/pkg/client) when its
// content matters.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The events the API sends.
const (
	ListingUpdated     = "listing.updated"
	ListingDeleted     = "listing.deleted"
	CalendarUpdated    = "calendar.updated"
	ReservationCreated = "reservation.created"
	ReservationUpdated = "reservation.updated"
	ReservationDeleted = "reservation.deleted"
	AgreementRequested = "agreement.requested"
	Ping               = "ping"
)

// DefaultHeaderPrefix is the middle segment of the delivery header names
// (x-legacy-event, x-legacy-delivery, x-legacy-signature), the service's
// former product name. It will change only with notice; [WithHeaderPrefix]
// sets another.
const DefaultHeaderPrefix = "legacy"

// Errors of [Verify].
var (
	// ErrNoSecret is returned when the signing secret is empty: a
	// configuration mistake, never a bad delivery.
	ErrNoSecret = errors.New("webhook: no signing secret configured")
	// ErrNoSignature is returned when the signature header is empty.
	ErrNoSignature = errors.New("webhook: missing signature")
	// ErrBadSignature is returned when the signature header is malformed or
	// does not match the body.
	ErrBadSignature = errors.New("webhook: signature does not match the body")
)

// Sign returns the signature header value of body under secret, as the API
// computes it. Receivers call [Verify]; Sign serves tests that post deliveries
// to a receiver.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks signatureHeader (the x-legacy-signature value) against the
// HMAC-SHA256 of rawBody under secret. rawBody must be the body exactly as
// received, before any JSON parsing. The comparison runs in constant time. It
// returns nil when the signature matches, otherwise [ErrNoSecret],
// [ErrNoSignature] or [ErrBadSignature].
func Verify(secret string, rawBody []byte, signatureHeader string) error {
	if secret == "" {
		return ErrNoSecret
	}
	sig := strings.TrimSpace(signatureHeader)
	if sig == "" {
		return ErrNoSignature
	}
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || len(hexSum) != 2*sha256.Size {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(rawBody)
	if !hmac.Equal(m.Sum(nil), got) {
		return ErrBadSignature
	}
	return nil
}

// Event is one decoded delivery. It encodes to JSON as the delivery body
// (the envelope with its data).
type Event struct {
	// ID is the delivery id, equal to the x-legacy-delivery header. It is
	// the same when the same change is delivered again.
	ID string `json:"id"`
	// Name is the event name, one of the constants of this package (or a
	// newer one this version does not know).
	Name string `json:"event"`
	// CreatedAt is when the change happened.
	CreatedAt time.Time `json:"createdAt"`
	// Data is the typed payload: [ListingData], [CalendarData],
	// [ReservationData], [ReservationUpdatedData], [AgreementRequestedData],
	// [PingData], or [UnknownData] for an event this version does not know.
	Data Data `json:"data"`
	// Raw is the delivery body as received.
	Raw json.RawMessage `json:"-"`
}

// Data is the payload of an [Event]; switch on its dynamic type.
type Data interface{ isData() }

// ListingData is the data of listing.updated and listing.deleted.
type ListingData struct {
	ListingID string `json:"listingId"`
}

// CalendarData is the data of calendar.updated: the days from From to To
// (YYYY-MM-DD, both inclusive) of PropertyID whose availability may have
// changed.
type CalendarData struct {
	PropertyID string `json:"propertyId"`
	From       string `json:"from"`
	To         string `json:"to"`
}

// ReservationData is the data of reservation.created and
// reservation.deleted.
type ReservationData struct {
	ReservationID string `json:"reservationId"`
	PropertyID    string `json:"propertyId"`
	Status        string `json:"status"`
}

// ReservationUpdatedData is the data of reservation.updated.
type ReservationUpdatedData struct {
	ReservationID  string `json:"reservationId"`
	PropertyID     string `json:"propertyId"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previousStatus"`
}

// AgreementRequestedData is the data of agreement.requested: staff asked for
// a tenancy agreement on the reservation while the organisation's contract
// provider is external.
type AgreementRequestedData struct {
	ReservationID string `json:"reservationId"`
	PropertyID    string `json:"propertyId"`
}

// PingData is the data of ping, sent by the dashboard's test button.
type PingData struct {
	WebhookID string `json:"webhookId"`
}

// UnknownData is the data of an event this version of the package does not
// know; Raw is the data object as sent.
type UnknownData struct {
	Raw json.RawMessage
}

// MarshalJSON encodes the data as it was sent.
func (u UnknownData) MarshalJSON() ([]byte, error) {
	if len(u.Raw) == 0 {
		return []byte("null"), nil
	}
	return u.Raw, nil
}

func (ListingData) isData()            {}
func (CalendarData) isData()           {}
func (ReservationData) isData()        {}
func (ReservationUpdatedData) isData() {}
func (AgreementRequestedData) isData() {}
func (PingData) isData()               {}
func (UnknownData) isData()            {}

// Parse decodes a delivery body into an Event. It does not verify the
// signature: call [Verify] on the same bytes first.
func Parse(rawBody []byte) (Event, error) {
	var env struct {
		ID        string          `json:"id"`
		Event     string          `json:"event"`
		CreatedAt time.Time       `json:"createdAt"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rawBody, &env); err != nil {
		return Event{}, fmt.Errorf("webhook: decode delivery: %w", err)
	}
	if env.ID == "" || env.Event == "" {
		return Event{}, errors.New("webhook: decode delivery: id and event are required")
	}
	ev := Event{ID: env.ID, Name: env.Event, CreatedAt: env.CreatedAt, Raw: json.RawMessage(rawBody)}
	var err error
	switch env.Event {
	case ListingUpdated, ListingDeleted:
		ev.Data, err = decodeData[ListingData](env.Data)
	case CalendarUpdated:
		ev.Data, err = decodeData[CalendarData](env.Data)
	case ReservationCreated, ReservationDeleted:
		ev.Data, err = decodeData[ReservationData](env.Data)
	case ReservationUpdated:
		ev.Data, err = decodeData[ReservationUpdatedData](env.Data)
	case AgreementRequested:
		ev.Data, err = decodeData[AgreementRequestedData](env.Data)
	case Ping:
		ev.Data, err = decodeData[PingData](env.Data)
	default:
		ev.Data = UnknownData{Raw: env.Data}
	}
	if err != nil {
		return Event{}, fmt.Errorf("webhook: decode %s data: %w", env.Event, err)
	}
	return ev, nil
}

func decodeData[T Data](raw json.RawMessage) (Data, error) {
	var d T
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("data is missing")
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return d, nil
}
