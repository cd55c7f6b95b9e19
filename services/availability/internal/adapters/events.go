package adapters

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/outbox"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/availability/internal/domain"
)

// CalendarEvents returns the EventFunc that encodes calendar events for
// topic: the envelope, the calendar's blocks and the changed days, keyed by
// the property id.
func CalendarEvents(topic string) EventFunc {
	return func(ctx context.Context, c domain.Calendar, days domain.Span, at time.Time) (outbox.Event, error) {
		id := outbox.NewID()
		cal := &eventsv1.Calendar{PropertyId: c.PropertyID, Blocks: make([]*eventsv1.CalendarBlock, 0, len(c.Blocks))}
		for _, b := range c.Blocks {
			cal.Blocks = append(cal.Blocks, &eventsv1.CalendarBlock{
				Id: b.ID, Start: b.Start.String(), End: b.End.String(), Reason: b.Reason,
				CreatedAt: timestamppb.New(b.CreatedAt),
			})
		}
		value, err := proto.Marshal(&eventsv1.CalendarEvent{
			Envelope: &eventsv1.Envelope{
				EventId:          id,
				Type:             CalendarUpdated,
				OrgId:            c.OrgID,
				AggregateId:      c.PropertyID,
				AggregateVersion: c.Version,
				OccurredAt:       timestamppb.New(at.UTC()),
			},
			Calendar:    cal,
			ChangedFrom: days.First.String(),
			ChangedTo:   days.Last.String(),
		})
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for property %s: %w", CalendarUpdated, c.PropertyID, err)
		}
		return outbox.NewEvent(ctx, id, topic, c.PropertyID, value), nil
	}
}
