package adapters

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Topic kinds the dispatcher consumes.
const (
	KindListings     = "listings"
	KindCalendars    = "calendars"
	KindReservations = "reservations"
	KindAgreements   = "agreements"
	KindOrgs         = "orgs"
)

// Kinds lists every kind the dispatcher consumes.
var Kinds = []string{KindListings, KindCalendars, KindReservations, KindAgreements, KindOrgs}

// Decoded is what one Kafka message means to the dispatcher: a webhook event,
// an org that exists, or nothing.
type Decoded struct {
	Event *domain.Event
	// OrgID and OrgVersion are set for org events.
	OrgID      string
	OrgVersion int64
}

// Decode maps a domain event of the given kind to a webhook event. Domain
// events that no webhook reflects decode to an empty Decoded.
func Decode(kind string, value []byte) (Decoded, error) {
	switch kind {
	case KindListings:
		var m eventsv1.ListingEvent
		if err := proto.Unmarshal(value, &m); err != nil {
			return Decoded{}, fmt.Errorf("decode listing event: %w", err)
		}
		env := m.GetEnvelope()
		switch env.GetType() {
		case domain.ListingUpdated, domain.ListingDeleted:
			return event(env, env.GetType(), domain.ListingData{ListingID: orElse(m.GetListing().GetId(), env.GetAggregateId())})
		}
	case KindCalendars:
		var m eventsv1.CalendarEvent
		if err := proto.Unmarshal(value, &m); err != nil {
			return Decoded{}, fmt.Errorf("decode calendar event: %w", err)
		}
		env := m.GetEnvelope()
		if env.GetType() == domain.CalendarUpdated {
			return event(env, domain.CalendarUpdated, domain.CalendarData{
				PropertyID: orElse(m.GetCalendar().GetPropertyId(), env.GetAggregateId()),
				From:       m.GetChangedFrom(),
				To:         m.GetChangedTo(),
			})
		}
	case KindReservations:
		var m eventsv1.ReservationEvent
		if err := proto.Unmarshal(value, &m); err != nil {
			return Decoded{}, fmt.Errorf("decode reservation event: %w", err)
		}
		env, r := m.GetEnvelope(), m.GetReservation()
		id := orElse(r.GetId(), env.GetAggregateId())
		switch env.GetType() {
		case domain.ReservationCreated, domain.ReservationDeleted:
			return event(env, env.GetType(), domain.ReservationData{ReservationID: id, PropertyID: r.GetPropertyId(), Status: Status(r.GetStatus())})
		case domain.ReservationUpdated:
			return event(env, domain.ReservationUpdated, domain.ReservationUpdatedData{
				ReservationID: id, PropertyID: r.GetPropertyId(), Status: Status(r.GetStatus()), PreviousStatus: Status(m.GetPreviousStatus()),
			})
		}
	case KindAgreements:
		var m eventsv1.AgreementEvent
		if err := proto.Unmarshal(value, &m); err != nil {
			return Decoded{}, fmt.Errorf("decode agreement event: %w", err)
		}
		env := m.GetEnvelope()
		if env.GetType() == domain.AgreementRequested {
			cr := m.GetContractRequest()
			return event(env, domain.AgreementRequested, domain.AgreementRequestedData{
				ReservationID: orElse(cr.GetReservationId(), env.GetAggregateId()),
				PropertyID:    cr.GetPropertyId(),
			})
		}
	case KindOrgs:
		var m eventsv1.OrgEvent
		if err := proto.Unmarshal(value, &m); err != nil {
			return Decoded{}, fmt.Errorf("decode org event: %w", err)
		}
		env := m.GetEnvelope()
		id := orElse(m.GetOrg().GetId(), env.GetAggregateId())
		if id != "" {
			return Decoded{OrgID: id, OrgVersion: env.GetAggregateVersion()}, nil
		}
	}
	return Decoded{}, nil
}

func event(env *eventsv1.Envelope, name string, data any) (Decoded, error) {
	if env.GetEventId() == "" || env.GetOrgId() == "" {
		return Decoded{}, fmt.Errorf("%s event without an event id or org id", name)
	}
	return Decoded{Event: &domain.Event{
		SourceID:   env.GetEventId(),
		OrgID:      env.GetOrgId(),
		Name:       name,
		OccurredAt: env.GetOccurredAt().AsTime().UTC(),
		Data:       data,
	}}, nil
}

// Status is the public name of a reservation status ("" when unset).
func Status(s eventsv1.ReservationStatus) string {
	if s == eventsv1.ReservationStatus_RESERVATION_STATUS_UNSPECIFIED {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "RESERVATION_STATUS_"))
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
