package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.opentelemetry.io/otel/propagation"
)

// Field names the outbox uses inside an aggregate's document.
const (
	// FieldEvents holds the pending events, oldest first.
	FieldEvents = "outbox"
	// FieldPending counts the entries of FieldEvents. The relay finds work
	// with a filter on it (a plain field comparison, which every supported
	// store evaluates and MongoDB can index).
	FieldPending = "outboxPending"
	// FieldSeq counts every event ever added to the document. It only grows,
	// so the relay's compare-and-set on it fails whenever events were added
	// after the relay read the document.
	FieldSeq = "outboxSeq"
)

// HeaderEventID is the Kafka header carrying Event.ID. A relay may publish an
// event more than once; consumers drop what they have already seen by it (the
// event's envelope carries the same id).
const HeaderEventID = "event-id"

// Event is a message waiting in its aggregate's document to be published.
type Event struct {
	// ID identifies the event across redeliveries; it is also the envelope's
	// event id.
	ID    string `bson:"id"`
	Topic string `bson:"topic"`
	// Key is the Kafka message key: the aggregate id, so that one aggregate's
	// events stay in order on one partition.
	Key   string `bson:"key"`
	Value []byte `bson:"value"`
	// Headers are copied to the Kafka message; NewEvent puts the W3C trace
	// context of the request that caused the event here.
	Headers   map[string]string `bson:"headers,omitempty"`
	CreatedAt time.Time         `bson:"createdAt"`
}

// NewEvent returns an event for topic and key carrying value, stamped with the
// current time and the trace context of ctx. id is usually NewID(), generated
// before value so that the envelope inside value carries the same id.
func NewEvent(ctx context.Context, id, topic, key string, value []byte) Event {
	headers := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, headers)
	if len(headers) == 0 {
		headers = nil
	}
	return Event{
		ID:        id,
		Topic:     topic,
		Key:       key,
		Value:     value,
		Headers:   headers,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// NewID returns a new random event id: a UUID version 7, whose leading
// timestamp keeps ids roughly in creation order.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Pending is the outbox part of an aggregate's storage model. Embed it inline
// in the model (`bson:",inline"`) so that reading the document keeps the events
// still waiting, and call Add before inserting or replacing the document.
type Pending struct {
	Outbox        []Event `bson:"outbox,omitempty"`
	OutboxPending int     `bson:"outboxPending"`
	OutboxSeq     int64   `bson:"outboxSeq"`
}

// Add appends events to the pending ones. A replacement built from a document
// read earlier may bring back events the relay has published meanwhile; they
// are then published again, which consumers tolerate.
func (p *Pending) Add(events ...Event) {
	p.Outbox = append(p.Outbox, events...)
	p.OutboxPending = len(p.Outbox)
	p.OutboxSeq += int64(len(events))
}

// Append returns update with events added to the document's outbox: the
// events are pushed after the pending ones and the counters incremented, in
// the same update document, so the state change and its events are stored by
// one atomic single-document write. update is a MongoDB update document
// (operators such as $set); Append merges into its $push and $inc if present.
// It refuses an update that already writes the outbox fields.
func Append(update bson.D, events ...Event) (bson.D, error) {
	if len(events) == 0 {
		return update, nil
	}
	for _, e := range events {
		if err := e.validate(); err != nil {
			return nil, err
		}
	}
	entries := make(bson.A, len(events))
	for i, e := range events {
		entries[i] = e
	}
	n := int64(len(events))
	out := make(bson.D, 0, len(update)+2)
	var pushed, incremented bool
	for _, op := range update {
		if !isOperator(op.Key) {
			return nil, fmt.Errorf("add events to update: %q is not an update operator (replacements use Pending)", op.Key)
		}
		fields, err := operatorFields(op)
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			if f.Key == FieldEvents || f.Key == FieldPending || f.Key == FieldSeq {
				return nil, fmt.Errorf("add events to update: %s already writes %s", op.Key, f.Key)
			}
		}
		switch op.Key {
		case "$push":
			fields = append(fields, bson.E{Key: FieldEvents, Value: bson.D{{Key: "$each", Value: entries}}})
			pushed = true
		case "$inc":
			fields = append(fields, bson.E{Key: FieldPending, Value: n}, bson.E{Key: FieldSeq, Value: n})
			incremented = true
		}
		out = append(out, bson.E{Key: op.Key, Value: fields})
	}
	if !pushed {
		out = append(out, bson.E{Key: "$push", Value: bson.D{{Key: FieldEvents, Value: bson.D{{Key: "$each", Value: entries}}}}})
	}
	if !incremented {
		out = append(out, bson.E{Key: "$inc", Value: bson.D{{Key: FieldPending, Value: n}, {Key: FieldSeq, Value: n}}})
	}
	return out, nil
}

func (e Event) validate() error {
	switch {
	case e.ID == "":
		return errors.New("outbox event without id")
	case e.Topic == "":
		return fmt.Errorf("outbox event %s without topic", e.ID)
	}
	return nil
}

func isOperator(key string) bool { return len(key) > 1 && key[0] == '$' }

// operatorFields returns a copy of an operator's field list.
func operatorFields(op bson.E) (bson.D, error) {
	switch v := op.Value.(type) {
	case bson.D:
		return append(bson.D(nil), v...), nil
	case bson.M:
		d := make(bson.D, 0, len(v))
		for k, val := range v {
			d = append(d, bson.E{Key: k, Value: val})
		}
		return d, nil
	default:
		return nil, fmt.Errorf("add events to update: %s takes a document, got %T", op.Key, op.Value)
	}
}
