package domain

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The webhook events of the public API.
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

// Event is a webhook event of one organisation, mapped from a domain event.
// SourceID is the domain event's id: with the endpoint id it determines the
// delivery id, so a domain event read twice yields the same deliveries.
type Event struct {
	SourceID   string
	OrgID      string
	Name       string
	OccurredAt time.Time
	Data       any
}

// The data payloads: each points at the record, never carries it.

// ListingData is the data of listing.updated and listing.deleted.
type ListingData struct {
	ListingID string `json:"listingId"`
}

// CalendarData is the data of calendar.updated: the days from From to To,
// both inclusive, whose status may have changed.
type CalendarData struct {
	PropertyID string `json:"propertyId"`
	From       string `json:"from"`
	To         string `json:"to"`
}

// ReservationData is the data of reservation.created and reservation.deleted.
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

// AgreementRequestedData is the data of agreement.requested.
type AgreementRequestedData struct {
	ReservationID string `json:"reservationId"`
	PropertyID    string `json:"propertyId"`
}

// PingData is the data of ping.
type PingData struct {
	WebhookID string `json:"webhookId"`
}

// deliveryNamespace scopes the name-based delivery ids.
var deliveryNamespace = uuid.MustParse("5b0a7d1e-3c1f-4f43-9a8e-2f6d0c9e7b11")

// DeliveryID is the id of the delivery of the domain event sourceID to
// endpointID: a UUID derived from both (version 5), the same every time.
func DeliveryID(sourceID, endpointID string) string {
	return uuid.NewSHA1(deliveryNamespace, []byte(sourceID+"\x00"+endpointID)).String()
}

// body is the delivery envelope, fields in the documented order.
type body struct {
	ID        string `json:"id"`
	Event     string `json:"event"`
	CreatedAt string `json:"createdAt"`
	Data      any    `json:"data"`
}

// TimeFormat writes instants as ISO 8601 UTC with milliseconds and Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Body renders the delivery body of e for deliveryID. createdAt is when the
// domain event happened, so the body is the same however often it is built.
func (e Event) Body(deliveryID string) ([]byte, error) {
	b, err := json.Marshal(body{ID: deliveryID, Event: e.Name, CreatedAt: e.OccurredAt.UTC().Format(TimeFormat), Data: e.Data})
	if err != nil {
		return nil, fmt.Errorf("render %s delivery body: %w", e.Name, err)
	}
	return b, nil
}
