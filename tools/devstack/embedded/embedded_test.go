package embedded

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
)

func TestMongoPoolUpdatesAreAtomic(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, _, coll := startOn(ctx, t, t.TempDir())
	// Every service gets this URI: a pool of PoolSize connections, which
	// the increments below use at once.
	if cs, err := connstring.ParseAndValidate(m.URI); err != nil || !cs.MaxPoolSizeSet || cs.MaxPoolSize != PoolSize {
		t.Fatalf("URI %s: want maxPoolSize=%d (%v)", m.URI, PoolSize, err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "n": 0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			if _, err := coll.UpdateOne(ctx, bson.M{"_id": "a"}, bson.M{"$inc": bson.M{"n": 1}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var doc struct{ N int }
	if err := coll.FindOne(ctx, bson.M{"_id": "a"}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.N != 30 {
		t.Fatalf("n = %d after 30 concurrent increments, want 30", doc.N)
	}
}

func TestKafkaServesKafkaGo(t *testing.T) {
	t.Parallel()
	k, err := StartKafka("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kafka.Dial("tcp", k.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "t", NumPartitions: 4, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(k.Brokers...), Topic: "t",
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Balancer: &kafka.Hash{}}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Brokers, Topic: "t", GroupID: "g", StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	msg, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Value) != "v" {
		t.Fatalf("read %q, want v", msg.Value)
	}
	if err := r.CommitMessages(ctx, msg); err != nil {
		t.Fatal(err)
	}
}
