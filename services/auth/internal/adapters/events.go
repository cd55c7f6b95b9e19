package adapters

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/outbox"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/auth/internal/domain"
)

// OrgEvents returns the EventFunc that encodes org events for topic: the
// envelope plus the org's full current state, keyed by the org id.
func OrgEvents(topic string) EventFunc {
	return func(ctx context.Context, o domain.Org, eventType string) (outbox.Event, error) {
		id := outbox.NewID()
		value, err := proto.Marshal(&eventsv1.OrgEvent{
			Envelope: &eventsv1.Envelope{
				EventId:          id,
				Type:             eventType,
				OrgId:            o.ID,
				AggregateId:      o.ID,
				AggregateVersion: o.Version,
				OccurredAt:       timestamppb.New(o.UpdatedAt),
			},
			Org: &eventsv1.Org{
				Id:                o.ID,
				Name:              o.Name,
				ContractProvider:  providerOf(o.ContractProvider),
				InquiryDailyLimit: int32(o.InquiryDailyLimit),
				CreatedAt:         timestamppb.New(o.CreatedAt),
				UpdatedAt:         timestamppb.New(o.UpdatedAt),
			},
		})
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for org %s: %w", eventType, o.ID, err)
		}
		return outbox.NewEvent(ctx, id, topic, o.ID, value), nil
	}
}

func providerOf(p domain.ContractProvider) eventsv1.ContractProvider {
	switch p {
	case domain.ProviderExternal:
		return eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL
	case domain.ProviderQuarters:
		return eventsv1.ContractProvider_CONTRACT_PROVIDER_QUARTERS
	default:
		return eventsv1.ContractProvider_CONTRACT_PROVIDER_UNSPECIFIED
	}
}
