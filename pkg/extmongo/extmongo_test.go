package extmongo

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"quarters.dev/pkg/testenv"
)

func TestConnectCheckAndIndexes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	// The shared store is reached through a proxy that this test can cut.
	u, err := url.Parse(testenv.MongoURI(t))
	if err != nil {
		t.Fatal(err)
	}
	store := testenv.NewProxy(t, u.Host)
	u.Host = store.Addr
	name := testenv.Database(t)

	client, db, err := Connect(ctx, u.String(), name)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer client.Disconnect(context.Background())
	if db.Name() != name {
		t.Fatalf("database %q, want %s", db.Name(), name)
	}
	check := Check(db)
	if err := check(ctx); err != nil {
		t.Fatalf("check on a running store: %v", err)
	}

	coll := db.Collection("things")
	unique := mongo.IndexModel{Keys: bson.D{{Key: "slug", Value: 1}}, Options: options.Index().SetName("slug_unique").SetUnique(true)}
	plain := mongo.IndexModel{Keys: bson.D{{Key: "org", Value: 1}, {Key: "createdAt", Value: -1}}, Options: options.Index().SetName("org_created")}
	for range 2 { // the second call finds the indexes in place
		if err := EnsureIndexes(ctx, coll, unique, plain); err != nil {
			t.Fatalf("ensure indexes: %v", err)
		}
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "slug", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "slug", Value: "a"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert of the same slug: %v, want a duplicate key error", err)
	}

	store.Cut()
	checkCtx, checkCancel := context.WithTimeout(ctx, 2*time.Second)
	defer checkCancel()
	if err := check(checkCtx); err == nil {
		t.Fatal("check passed with the store stopped")
	}
}

func TestEnsureIndexesRefusesWhatTheEmbeddedStoreCannotDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		model mongo.IndexModel
		want  string
	}{
		{"ttl", mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}, "TTL"},
		{"partial", mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}})}, "partial"},
		{"no keys", mongo.IndexModel{}, "no keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The collection is never reached: the model is refused first.
			coll := (&mongo.Client{}).Database("d").Collection("c")
			err := EnsureIndexes(context.Background(), coll, tt.model)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestConnectFailureNamesHostsNotCredentials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, err = Connect(ctx, "mongodb://quarters:hunter2secret@"+addr+"/admin?maxPoolSize=1", "db")
	if err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "hunter2secret") || strings.Contains(msg, "quarters:") {
		t.Fatalf("error leaks credentials: %s", msg)
	}
	if !strings.Contains(msg, "ping MongoDB at mongodb://"+addr) {
		t.Fatalf("error %q does not name what failed", msg)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(msg, "server selection") {
		t.Logf("error: %v", err)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"mongodb://u:p@h1:27017,h2:27017/db?replicaSet=rs0", "mongodb://h1:27017,h2:27017"},
		{"mongodb+srv://user:p%40ss@cluster.example.net/?retryWrites=true", "mongodb+srv://cluster.example.net"},
		{"mongodb://127.0.0.1:27017/?maxPoolSize=1", "mongodb://127.0.0.1:27017"},
		{"localhost:27017", "(malformed URI)"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
