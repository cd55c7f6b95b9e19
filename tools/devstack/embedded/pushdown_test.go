package embedded

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The embedded store pushes equality conditions down to SQLite
// (tools/devstack/third_party/ferretdb, internal/backends/sqlite/quarters_pushdown.go).
// A pushed-down condition may only narrow what the store reads, never what
// a query answers: these cases hold documents of every shape a field can
// take (array, number, nested document, missing, escaped and non-ASCII
// strings) and check each answer against MongoDB's semantics.
func TestMongoPushdownKeepsMongoSemantics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	coll := startTestCollection(ctx, t)

	oid := bson.NewObjectID()
	docs := []any{
		bson.M{"_id": "a", "org": "o1", "status": "reserved", "version": 1},
		bson.M{"_id": "b", "org": "o1", "status": "confirmed", "version": 2},
		bson.M{"_id": "c", "org": "o2", "status": "reserved", "version": 1},
		bson.M{"_id": "d", "org": bson.A{"o1", "o3"}, "status": "inquiry"},
		bson.M{"_id": "e", "org": 1, "status": bson.M{"x": "reserved"}},
		bson.M{"_id": "f", "status": "reserved"},
		bson.M{"_id": "g", "org": `q"<&>\ü 🏠`, "status": "cancelled"},
		bson.M{"_id": oid, "org": "o1", "status": "reserved"},
		bson.M{"_id": "i", "org": "O1", "status": "RESERVED"},
		bson.M{"_id": "j", "org": "o1 ", "status": ""},
		bson.M{"_id": "k", "version": "5"},
		bson.M{"_id": "l", "version": true},
		bson.M{"_id": "m", "version": bson.A{0, 3}},
		bson.M{"_id": "n", "version": 2.5},
		bson.M{"_id": "p", "version": -1},
		bson.M{"_id": "q", "version": int64(1) << 40},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		filter bson.D
		want   []string
	}{
		{"id alone", bson.D{{Key: "_id", Value: "a"}}, []string{"a"}},
		{"id and version match", bson.D{{Key: "_id", Value: "a"}, {Key: "version", Value: 1}}, []string{"a"}},
		{"id and stale version", bson.D{{Key: "_id", Value: "a"}, {Key: "version", Value: 2}}, nil},
		{"id and other field", bson.D{{Key: "org", Value: "o1"}, {Key: "_id", Value: "b"}}, []string{"b"}},
		{"id in", bson.D{{Key: "_id", Value: bson.M{"$in": bson.A{"a", "c", "zz"}}}}, []string{"a", "c"}},
		{"id eq", bson.D{{Key: "_id", Value: bson.M{"$eq": "c"}}}, []string{"c"}},
		{"object id and field", bson.D{{Key: "_id", Value: oid}, {Key: "org", Value: "o1"}}, []string{oid.Hex()}},
		{"string field matches arrays containing it", bson.D{{Key: "org", Value: "o1"}},
			[]string{"a", "b", "d", oid.Hex()}},
		{"string field is case and space exact", bson.D{{Key: "org", Value: "O1"}}, []string{"i"}},
		{"escaped and non-ASCII string", bson.D{{Key: "org", Value: `q"<&>\ü 🏠`}}, []string{"g"}},
		{"empty string", bson.D{{Key: "status", Value: ""}}, []string{"j"}},
		{"in over strings", bson.D{{Key: "org", Value: "o1"}, {Key: "status", Value: bson.M{"$in": bson.A{"reserved", "inquiry"}}}},
			[]string{"a", "d", oid.Hex()}},
		{"eq operator", bson.D{{Key: "status", Value: bson.M{"$eq": "confirmed"}}}, []string{"b"}},
		{"number is not pushed as a string", bson.D{{Key: "org", Value: 1}}, []string{"e"}},
		{"no match", bson.D{{Key: "org", Value: "nobody"}}, nil},
		{"dotted path", bson.D{{Key: "status.x", Value: "reserved"}}, []string{"e"}},
		{"in with null matches missing", bson.D{{Key: "org", Value: bson.M{"$in": bson.A{"o2", nil}}}}, []string{"c", "f", "k", "l", "m", "n", "p", "q"}},
		{"in empty", bson.D{{Key: "org", Value: bson.M{"$in": bson.A{}}}}, nil},
		{"operators beside", bson.D{{Key: "org", Value: "o1"}, {Key: "version", Value: bson.M{"$gte": 2}}}, []string{"b"}},
		{"gt a number", bson.D{{Key: "version", Value: bson.M{"$gt": 1}}}, []string{"b", "m", "n", "q"}},
		{"gte a number", bson.D{{Key: "version", Value: bson.M{"$gte": 1}}}, []string{"a", "b", "c", "m", "n", "q"}},
		{"gt a double", bson.D{{Key: "version", Value: bson.M{"$gt": 2.4}}}, []string{"m", "n", "q"}},
		{"gt a negative", bson.D{{Key: "version", Value: bson.M{"$gt": -5}}}, []string{"a", "b", "c", "m", "n", "p", "q"}},
		{"gt a string", bson.D{{Key: "version", Value: bson.M{"$gt": "4"}}}, []string{"k"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(ctx, t, coll, tc.filter); !slices.Equal(got, sorted(tc.want)) {
				t.Fatalf("find %v = %v, want %v", tc.filter, got, sorted(tc.want))
			}
			n, err := coll.CountDocuments(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if int(n) != len(tc.want) {
				t.Fatalf("count %v = %d, want %d", tc.filter, n, len(tc.want))
			}
		})
	}
}

// A compare-and-set update (filter {_id, version}) and a delete by _id and
// another condition touch exactly the document they name, and the store
// answers them without reading the collection: explain reports the filter
// as pushed down.
func TestMongoPushdownServesCompareAndSet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	coll := startTestCollection(ctx, t)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": id, "version": 1, "org": "o"}); err != nil {
			t.Fatal(err)
		}
	}

	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "version", Value: 1}}, bson.M{"$set": bson.M{"version": 2}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Fatalf("compare-and-set on the current version: %+v, %v", res, err)
	}
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "version", Value: 1}}, bson.M{"$set": bson.M{"version": 3}})
	if err != nil || res.MatchedCount != 0 {
		t.Fatalf("compare-and-set on a stale version matched: %+v, %v", res, err)
	}
	del, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "org", Value: "o"}})
	if err != nil || del.DeletedCount != 1 {
		t.Fatalf("delete by _id and org: %+v, %v", del, err)
	}
	if got := ids(ctx, t, coll, bson.D{{Key: "org", Value: "o"}}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after the writes: %v", got)
	}

	for _, filter := range []bson.D{
		{{Key: "_id", Value: "b"}, {Key: "version", Value: 2}},
		{{Key: "org", Value: "o"}, {Key: "version", Value: bson.M{"$gt": 0}}},
		{{Key: "outboxPending", Value: bson.M{"$gt": 0}}},
	} {
		var out bson.M
		err := coll.Database().RunCommand(ctx, bson.D{
			{Key: "explain", Value: bson.D{{Key: "find", Value: coll.Name()}, {Key: "filter", Value: filter}}},
		}).Decode(&out)
		if err != nil {
			t.Fatal(err)
		}
		if out["filterPushdown"] != true {
			t.Fatalf("explain %v: filterPushdown = %v, want true (is tools/devstack/third_party/ferretdb in use?)", filter, out["filterPushdown"])
		}
		plan := fmt.Sprint(out["queryPlanner"])
		if filter[0].Key == "_id" && !strings.Contains(plan, "USING INDEX") {
			t.Fatalf("explain %v: SQLite plan %s does not use the _id index", filter, plan)
		}
	}
}

func startTestCollection(ctx context.Context, t *testing.T) *mongo.Collection {
	t.Helper()
	_, _, coll := startOn(ctx, t, t.TempDir())
	return coll
}

func ids(ctx context.Context, t *testing.T, coll *mongo.Collection, filter bson.D) []string {
	t.Helper()
	cur, err := coll.Find(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range docs {
		switch id := d["_id"].(type) {
		case string:
			out = append(out, id)
		case bson.ObjectID:
			out = append(out, id.Hex())
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// One update command with more statements than the store's SQLite pool has
// connections (100) completes: each statement releases what it read before
// the next one runs.
func TestMongoBulkUpdateOfManyDocuments(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := startTestCollection(ctx, t)
	const n = 250
	docs := make([]any, n)
	models := make([]mongo.WriteModel, n)
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		docs[i] = bson.M{"_id": id, "version": 1}
		models[i] = mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: id}, {Key: "version", Value: 1}}).
			SetUpdate(bson.M{"$set": bson.M{"version": 2}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	res, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil {
		t.Fatal(err)
	}
	if res.MatchedCount != n || res.ModifiedCount != n {
		t.Fatalf("bulk write of %d compare-and-set updates: matched %d, modified %d", n, res.MatchedCount, res.ModifiedCount)
	}
	left, err := coll.CountDocuments(ctx, bson.M{"version": 1})
	if err != nil || left != 0 {
		t.Fatalf("%d documents still at version 1 (%v)", left, err)
	}
}

// A compare-and-set on a version admits exactly one of its contenders,
// however many connections they come through: the store's updates are
// atomic whichever connection sends them (TestMongoPoolUpdatesAreAtomic
// shows increments lose nothing).
func TestMongoCompareAndSetIsAtomicAcrossConnections(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := StartMongo(ctx, t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	uri := "mongodb://" + m.Addr + "/?maxPoolSize=16"
	cl, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(ctx)
	coll := cl.Database("t").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "version": 0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for round := range 5 {
		var winners atomic.Int32
		for range 20 {
			wg.Go(func() {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "version", Value: round}},
					bson.M{"$set": bson.M{"version": round + 1}})
				if err != nil {
					t.Error(err)
					return
				}
				winners.Add(int32(res.ModifiedCount))
			})
		}
		wg.Wait()
		if winners.Load() != 1 {
			t.Fatalf("round %d: %d of 20 compare-and-sets won, want 1", round, winners.Load())
		}
	}
}
