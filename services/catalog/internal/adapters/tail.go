package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Tail reads every partition of a topic without a consumer group, from the
// end offsets found when it was made: every process that tails the topic
// sees every message published after that moment, which is what a
// per-process view needs (a consumer group would split the messages among
// the replicas). Nothing is committed; a restarted process loads its view
// from the store and tails from the new end.
type Tail struct {
	brokers []string
	topic   string
	start   map[int]int64
	log     *slog.Logger
}

// NewTail records the current end offset of every partition of topic. Make
// it before loading the state the messages update, so that nothing
// published in between is missed.
func NewTail(ctx context.Context, brokers []string, topic string, log *slog.Logger) (*Tail, error) {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("read metadata of %s: %w", topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, t := range meta.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("read metadata of %s: %w", topic, t.Error)
		}
		for _, p := range t.Partitions {
			reqs = append(reqs, kafka.LastOffsetOf(p.ID))
		}
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("read end offsets of %s: %w", topic, err)
	}
	start := map[int]int64{}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("read end offset of %s partition %d: %w", topic, po.Partition, po.Error)
		}
		start[po.Partition] = po.LastOffset
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tail{brokers: brokers, topic: topic, start: start, log: log.With("topic", topic)}, nil
}

// Run reads until ctx ends, handing each message to handle in partition
// order. A failing handle is retried with backoff: a message is never
// skipped.
func (t *Tail) Run(ctx context.Context, handle func(context.Context, kafka.Message) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(t.start))
	for p, off := range t.start {
		wg.Go(func() {
			if err := t.partition(ctx, p, off, handle); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

func (t *Tail) partition(ctx context.Context, p int, off int64, handle func(context.Context, kafka.Message) error) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     t.brokers,
		Topic:       t.topic,
		Partition:   p,
		MinBytes:    1,
		MaxBytes:    10 << 20,
		MaxWait:     500 * time.Millisecond,
		ErrorLogger: kafka.LoggerFunc(func(f string, a ...any) { t.log.Warn(fmt.Sprintf(f, a...)) }),
	})
	defer r.Close()
	if err := r.SetOffset(off); err != nil {
		return fmt.Errorf("tail %s partition %d at %d: %w", t.topic, p, off, err)
	}
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tail %s partition %d: %w", t.topic, p, err)
		}
		delay := 50 * time.Millisecond
		for {
			err := handle(ctx, msg)
			if err == nil {
				break
			}
			t.log.Error("apply message; will retry", "partition", p, "offset", msg.Offset, "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			delay = min(2*delay, 10*time.Second)
		}
	}
}
