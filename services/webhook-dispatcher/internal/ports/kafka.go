package ports

import (
	"context"
	"log/slog"

	"github.com/segmentio/kafka-go"

	"quarters.dev/services/webhook-dispatcher/internal/adapters"
	"quarters.dev/services/webhook-dispatcher/internal/app"
)

// Consumer handles the messages of every domain topic.
type Consumer struct {
	svc *app.Service
	// kinds maps a full topic name to its aggregate kind.
	kinds map[string]string
	log   *slog.Logger
	// Malformed is called for a message that cannot be decoded.
	Malformed func(topic string)
}

// NewConsumer returns the handler; topic maps each kind to its topic name.
func NewConsumer(svc *app.Service, topic func(kind string) string, log *slog.Logger) *Consumer {
	kinds := map[string]string{}
	for _, k := range adapters.Kinds {
		kinds[topic(k)] = k
	}
	return &Consumer{svc: svc, kinds: kinds, log: log}
}

// Topics lists the consumed topics.
func (c *Consumer) Topics() []string {
	out := make([]string, 0, len(c.kinds))
	for _, k := range adapters.Kinds {
		for t, kk := range c.kinds {
			if kk == k {
				out = append(out, t)
			}
		}
	}
	return out
}

// Handle stores what msg owes: the pending deliveries of its webhook event,
// or the org it announces. It returns nil only when that is stored. A
// message that cannot be decoded is logged and skipped, so one bad message
// does not stop every delivery behind it.
func (c *Consumer) Handle(ctx context.Context, msg kafka.Message) error {
	dec, err := adapters.Decode(c.kinds[msg.Topic], msg.Value)
	if err != nil {
		c.log.Error("skip undecodable event", "topic", msg.Topic, "partition", msg.Partition, "offset", msg.Offset, "error", err)
		if c.Malformed != nil {
			c.Malformed(msg.Topic)
		}
		return nil
	}
	switch {
	case dec.OrgID != "":
		return c.svc.ApplyOrg(ctx, dec.OrgID, dec.OrgVersion)
	case dec.Event != nil:
		return c.svc.Handle(ctx, *dec.Event)
	}
	return nil
}
