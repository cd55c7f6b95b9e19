package adapters

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/outbox"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/agreements/internal/domain"
)

// AgreementEvents returns the EventFunc that encodes agreement events for
// topic, keyed by the reservation id: the envelope, the full state of one
// version and whether it is current.
func AgreementEvents(topic string) EventFunc {
	return func(ctx context.Context, h *domain.History, eventType string, revision int64, index int, req *domain.ContractRequest) (outbox.Event, error) {
		id := outbox.NewID()
		ev := &eventsv1.AgreementEvent{
			Envelope: &eventsv1.Envelope{
				EventId:          id,
				Type:             eventType,
				OrgId:            h.OrgID,
				AggregateId:      h.ReservationID,
				AggregateVersion: revision,
			},
		}
		occurred := time.Now().UTC()
		if index >= 0 && index < len(h.Versions) {
			a := h.Versions[index]
			ev.Agreement = AgreementProto(h, a)
			ev.Current = h.IsCurrent(index)
			occurred = a.UpdatedAt
		}
		if req != nil {
			ev.ContractRequest = &eventsv1.ContractRequest{
				ReservationId: req.ReservationID,
				PropertyId:    req.PropertyID,
				RequestedAt:   timestamppb.New(req.RequestedAt),
			}
			occurred = req.RequestedAt
		}
		ev.Envelope.OccurredAt = timestamppb.New(occurred)
		value, err := proto.Marshal(ev)
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for reservation %s: %w", eventType, h.ReservationID, err)
		}
		return outbox.NewEvent(ctx, id, topic, h.ReservationID, value), nil
	}
}

func ts(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// AgreementProto is the event form of one version. Signing links of quarters
// agreements stay inside the service.
func AgreementProto(h *domain.History, a domain.Agreement) *eventsv1.Agreement {
	p := &eventsv1.Agreement{
		Id:            a.ID,
		OrgId:         h.OrgID,
		ReservationId: h.ReservationID,
		Version:       int32(a.Version),
		Provider:      providerProto(a.Provider),
		ExternalId:    a.ExternalID,
		Status:        statusProto(a.Status),
		TemplateName:  a.TemplateName,
		SentAt:        ts(a.SentAt),
		CompletedAt:   ts(a.CompletedAt),
		DeclinedAt:    ts(a.DeclinedAt),
		VoidedAt:      ts(a.VoidedAt),
		Error:         a.Error,
		DocumentUrl:   a.DocumentURL,
		CreatedAt:     timestamppb.New(a.CreatedAt),
		UpdatedAt:     timestamppb.New(a.UpdatedAt),
	}
	if d := a.Document; d != nil {
		p.Document = &eventsv1.AgreementDocument{
			Sha256: d.SHA256, SizeBytes: d.Bytes, ArchivedAt: timestamppb.New(d.UploadedAt), ContentType: d.ContentType,
		}
	}
	for _, s := range a.Signers {
		sp := &eventsv1.Signer{
			Role: s.Role, Name: s.Name, Email: s.Email, Status: s.Status,
			ViewedAt: ts(s.ViewedAt), CompletedAt: ts(s.CompletedAt), DeclinedAt: ts(s.DeclinedAt),
			DeclineReason: s.DeclineReason,
		}
		if a.Provider == domain.ProviderExternal {
			sp.SigningUrl = s.SigningURL
		}
		p.Signers = append(p.Signers, sp)
	}
	return p
}

func providerProto(p domain.Provider) eventsv1.AgreementProvider {
	switch p {
	case domain.ProviderQuarters:
		return eventsv1.AgreementProvider_AGREEMENT_PROVIDER_QUARTERS
	case domain.ProviderExternal:
		return eventsv1.AgreementProvider_AGREEMENT_PROVIDER_EXTERNAL
	}
	return eventsv1.AgreementProvider_AGREEMENT_PROVIDER_UNSPECIFIED
}

func statusProto(s domain.Status) eventsv1.AgreementStatus {
	switch s {
	case domain.StatusSent:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT
	case domain.StatusCompleted:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED
	case domain.StatusDeclined:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_DECLINED
	case domain.StatusFailed:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_FAILED
	case domain.StatusSuperseded:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_SUPERSEDED
	case domain.StatusVoided:
		return eventsv1.AgreementStatus_AGREEMENT_STATUS_VOIDED
	}
	return eventsv1.AgreementStatus_AGREEMENT_STATUS_UNSPECIFIED
}
