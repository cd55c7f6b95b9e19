package adapters

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/outbox"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/bookings/internal/domain"
)

func ts(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func i32(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// StatusProto maps a status to its event enum.
func StatusProto(s domain.Status) eventsv1.ReservationStatus {
	switch s {
	case domain.StatusInquiry:
		return eventsv1.ReservationStatus_RESERVATION_STATUS_INQUIRY
	case domain.StatusReserved:
		return eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED
	case domain.StatusConfirmed:
		return eventsv1.ReservationStatus_RESERVATION_STATUS_CONFIRMED
	case domain.StatusCancelled:
		return eventsv1.ReservationStatus_RESERVATION_STATUS_CANCELLED
	}
	return eventsv1.ReservationStatus_RESERVATION_STATUS_UNSPECIFIED
}

func basisProto(b domain.RateBasis) eventsv1.RateBasis {
	switch b {
	case domain.BasisMonthly:
		return eventsv1.RateBasis_RATE_BASIS_MONTHLY
	case domain.BasisNightly:
		return eventsv1.RateBasis_RATE_BASIS_NIGHTLY
	}
	return eventsv1.RateBasis_RATE_BASIS_UNSPECIFIED
}

func contactProto(c *domain.Contact) *eventsv1.Contact {
	if c == nil {
		return nil
	}
	return &eventsv1.Contact{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
}

// ReservationProto is a booking's full state as events carry it.
func ReservationProto(r domain.Reservation) *eventsv1.Reservation {
	p := r.Pricing
	var minStay *int32
	if p.MinStayMonths != nil {
		n := int32(*p.MinStayMonths)
		minStay = &n
	}
	return &eventsv1.Reservation{
		Id: r.ID, OrgId: r.OrgID, Status: StatusProto(r.Status), PropertyId: r.PropertyID,
		Guest: &eventsv1.Guest{Id: r.Guest.ID, FirstName: orEmpty(r.Guest.FirstName), LastName: orEmpty(r.Guest.LastName),
			Name: r.Guest.Name(), Email: orEmpty(r.Guest.Email), Phone: orEmpty(r.Guest.Phone), Company: r.Guest.Company},
		CheckIn: r.CheckIn.String(), CheckOut: r.CheckOut.String(), Nights: int32(r.Nights()),
		Adults: i32(r.Adults), Children: i32(r.Children), Infants: i32(r.Infants), Pets: r.Pets,
		Pricing: &eventsv1.ReservationPricing{Currency: "EUR", RentCents: p.RentCents, UtilitiesCents: p.UtilitiesCents,
			FurnitureCents: p.FurnitureCents, MonthlyCents: p.MonthlyCents(), DepositCents: p.DepositCents,
			MinStayMonths: minStay, RateBasis: basisProto(p.Basis)},
		RequiresContract: r.RequiresContract, InvoicePaid: r.InvoicePaid, Notes: r.Notes,
		OnContract: contactProto(r.OnContract), Staying: contactProto(r.Staying), InquiryId: r.InquiryID,
		InquiredAt: ts(r.InquiredAt), ReservedAt: ts(r.ReservedAt), ConfirmedAt: ts(r.ConfirmedAt), CancelledAt: ts(r.CancelledAt),
		CreatedAt: timestamppb.New(r.CreatedAt), UpdatedAt: timestamppb.New(r.UpdatedAt),
	}
}

// ReservationEvents encodes booking events for topic. A deletion carries
// the version after the deletion, so consumers order it after every change.
func ReservationEvents(topic string) ReservationEventFunc {
	return func(ctx context.Context, r domain.Reservation, eventType string, prev domain.Status) (outbox.Event, error) {
		id := outbox.NewID()
		version := r.Version
		if eventType == ReservationDeleted {
			version++
		}
		ev := &eventsv1.ReservationEvent{
			Envelope: &eventsv1.Envelope{EventId: id, Type: eventType, OrgId: r.OrgID, AggregateId: r.ID,
				AggregateVersion: version, OccurredAt: timestamppb.New(r.UpdatedAt)},
			Reservation: ReservationProto(r),
		}
		if eventType == ReservationUpdated {
			ev.PreviousStatus = StatusProto(prev)
		}
		value, err := proto.Marshal(ev)
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for reservation %s: %w", eventType, r.ID, err)
		}
		return outbox.NewEvent(ctx, id, topic, r.ID, value), nil
	}
}

func intOr0(v *int) int32 {
	if v == nil {
		return 0
	}
	return int32(*v)
}

// InquiryEvents encodes inquiry events for topic.
func InquiryEvents(topic string) InquiryEventFunc {
	return func(ctx context.Context, q domain.Inquiry, eventType string) (outbox.Event, error) {
		id := outbox.NewID()
		var meta *structpb.Struct
		if len(q.Metadata) > 0 {
			meta = &structpb.Struct{}
			if err := protojson.Unmarshal(q.Metadata, meta); err != nil {
				meta = nil
			}
		}
		updated := q.CreatedAt
		if q.ConvertedAt != nil {
			updated = *q.ConvertedAt
		}
		inq := &eventsv1.Inquiry{
			Id: q.ID, OrgId: q.OrgID, PropertyId: q.PropertyID, FirstName: orEmpty(q.FirstName), LastName: q.LastName,
			Email: q.Email, Phone: orEmpty(q.Phone), Adults: intOr0(q.Adults), Children: intOr0(q.Children),
			Infants: intOr0(q.Infants), Pets: q.Pets != nil && *q.Pets, Message: orEmpty(q.Message),
			Locale: orEmpty(q.Locale), Source: q.Source, Metadata: meta, SendConfirmation: q.WantsConfirmation(),
			Form: orEmpty(q.Form), ConvertedReservationId: q.ReservationID,
			CreatedAt: timestamppb.New(q.CreatedAt), UpdatedAt: timestamppb.New(updated),
		}
		if q.CheckIn != nil {
			inq.CheckIn = q.CheckIn.String()
		}
		if q.CheckOut != nil {
			inq.CheckOut = q.CheckOut.String()
		}
		value, err := proto.Marshal(&eventsv1.InquiryEvent{
			Envelope: &eventsv1.Envelope{EventId: id, Type: eventType, OrgId: q.OrgID, AggregateId: q.ID,
				AggregateVersion: q.Version, OccurredAt: timestamppb.New(updated)},
			Inquiry: inq,
		})
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for inquiry %s: %w", eventType, q.ID, err)
		}
		return outbox.NewEvent(ctx, id, topic, q.ID, value), nil
	}
}
