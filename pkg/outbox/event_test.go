package outbox

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.opentelemetry.io/otel/trace"
)

func TestAppend(t *testing.T) {
	t.Parallel()
	ev := Event{ID: "e1", Topic: "quarters.orgs", Key: "org-1", Value: []byte("v")}
	each := bson.D{{Key: "$each", Value: bson.A{ev}}}
	counters := bson.D{{Key: FieldPending, Value: int64(1)}, {Key: FieldSeq, Value: int64(1)}}
	tests := []struct {
		name    string
		update  bson.D
		want    bson.D
		wantErr string
	}{
		{
			name:   "set only",
			update: bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "n"}}}},
			want: bson.D{
				{Key: "$set", Value: bson.D{{Key: "name", Value: "n"}}},
				{Key: "$push", Value: bson.D{{Key: FieldEvents, Value: each}}},
				{Key: "$inc", Value: counters},
			},
		},
		{
			name: "merges into existing $inc and $push",
			update: bson.D{
				{Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}},
				{Key: "$push", Value: bson.D{{Key: "history", Value: "renamed"}}},
			},
			want: bson.D{
				{Key: "$inc", Value: append(bson.D{{Key: "version", Value: 1}}, counters...)},
				{Key: "$push", Value: bson.D{{Key: "history", Value: "renamed"}, {Key: FieldEvents, Value: each}}},
			},
		},
		{
			name:    "refuses an update that writes the outbox",
			update:  bson.D{{Key: "$set", Value: bson.D{{Key: FieldEvents, Value: bson.A{}}}}},
			wantErr: "already writes outbox",
		},
		{
			name:    "refuses a replacement document",
			update:  bson.D{{Key: "name", Value: "n"}},
			wantErr: "not an update operator",
		},
		{
			name:    "refuses an operator without a document",
			update:  bson.D{{Key: "$set", Value: 3}},
			wantErr: "takes a document",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Append(tt.update, ev)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotBytes, err := bson.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			wantBytes, err := bson.Marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotBytes, wantBytes) {
				t.Fatalf("update\n got %v\nwant %v", bson.Raw(gotBytes), bson.Raw(wantBytes))
			}
		})
	}
}

func TestAppendRefusesIncompleteEvents(t *testing.T) {
	t.Parallel()
	if _, err := Append(bson.D{}, Event{Topic: "t"}); err == nil {
		t.Fatal("event without id accepted")
	}
	if _, err := Append(bson.D{}, Event{ID: "e"}); err == nil {
		t.Fatal("event without topic accepted")
	}
	if got, err := Append(bson.D{{Key: "$set", Value: bson.D{}}}); err != nil || len(got) != 1 {
		t.Fatalf("no events: %v, %v; want the update unchanged", got, err)
	}
}

func TestPendingAdd(t *testing.T) {
	t.Parallel()
	var p Pending
	p.Add(Event{ID: "a"}, Event{ID: "b"})
	p.Outbox = p.Outbox[1:] // the relay published "a"
	p.OutboxPending = 1
	p.Add(Event{ID: "c"})
	if p.OutboxPending != 2 || p.OutboxSeq != 3 || p.Outbox[0].ID != "b" || p.Outbox[1].ID != "c" {
		t.Fatalf("pending %+v, want [b c], pending 2, seq 3", p)
	}
}

func TestNewIDIsUUIDv7(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !re.MatchString(id) {
			t.Fatalf("%q is not a UUID version 7", id)
		}
		if seen[id] {
			t.Fatalf("%q generated twice", id)
		}
		seen[id] = true
	}
}

func TestNewEventCarriesTraceContext(t *testing.T) {
	t.Parallel()
	traceID := trace.TraceID{1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 1, 2, 3}
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, TraceFlags: trace.FlagsSampled}))
	ev := NewEvent(ctx, "e1", "quarters.orgs", "org-1", []byte("v"))
	if tp := ev.Headers["traceparent"]; !strings.Contains(tp, traceID.String()) {
		t.Fatalf("traceparent %q, want trace %s", tp, traceID)
	}
	if ev.CreatedAt.IsZero() || ev.ID != "e1" || ev.Topic != "quarters.orgs" || ev.Key != "org-1" {
		t.Fatalf("event %+v", ev)
	}
	if plain := NewEvent(context.Background(), "e2", "t", "k", nil); plain.Headers != nil {
		t.Fatalf("headers without a trace: %v", plain.Headers)
	}
}
