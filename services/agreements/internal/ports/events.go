package ports

import (
	"context"
	"log/slog"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/domain"
)

// Projector stores the states the consumer hands it, newer versions only.
type Projector interface {
	ApplyOrg(ctx context.Context, o app.Org) error
	ApplyReservation(ctx context.Context, r app.Reservation) error
}

// Topics names the topics the consumer reads.
type Topics struct{ Orgs, Reservations string }

// EventHandler applies org and reservation events to the projections. It
// returns only after the state is stored, so the consumer commits the offset
// after the effect. A message that cannot be decoded is logged and skipped:
// retrying it would stop the partition for good.
func EventHandler(t Topics, p Projector, log *slog.Logger) func(ctx context.Context, msg kafka.Message) error {
	return func(ctx context.Context, msg kafka.Message) error {
		switch msg.Topic {
		case t.Orgs:
			var ev eventsv1.OrgEvent
			if err := proto.Unmarshal(msg.Value, &ev); err != nil || ev.GetOrg() == nil || ev.GetEnvelope() == nil {
				log.Error("skip undecodable org event", "partition", msg.Partition, "offset", msg.Offset, "error", err)
				return nil
			}
			return p.ApplyOrg(ctx, app.Org{
				ID:       ev.GetOrg().GetId(),
				Provider: provider(ev.GetOrg().GetContractProvider()),
				Version:  ev.GetEnvelope().GetAggregateVersion(),
			})
		case t.Reservations:
			var ev eventsv1.ReservationEvent
			if err := proto.Unmarshal(msg.Value, &ev); err != nil || ev.GetReservation() == nil || ev.GetEnvelope() == nil {
				log.Error("skip undecodable reservation event", "partition", msg.Partition, "offset", msg.Offset, "error", err)
				return nil
			}
			r := ev.GetReservation()
			orgID := r.GetOrgId()
			if orgID == "" {
				orgID = ev.GetEnvelope().GetOrgId()
			}
			return p.ApplyReservation(ctx, app.Reservation{
				ID:         r.GetId(),
				OrgID:      orgID,
				PropertyID: r.GetPropertyId(),
				Deleted:    ev.GetEnvelope().GetType() == "reservation.deleted",
				Version:    ev.GetEnvelope().GetAggregateVersion(),
			})
		}
		return nil
	}
}

func provider(p eventsv1.ContractProvider) domain.Provider {
	if p == eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL {
		return domain.ProviderExternal
	}
	return domain.ProviderQuarters
}
