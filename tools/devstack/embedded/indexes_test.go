package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	_ "modernc.org/sqlite"
)

// The embedded store builds only unique indexes in SQLite, since no query
// there uses another (third_party/ferretdb,
// internal/backends/sqlite/metadata/quarters_indexes.go), so that an update
// rewrites fewer index entries. What clients see stays MongoDB's:
// listIndexes reports every index as created, unique indexes refuse
// duplicates over all their keys, and finds answer the same. A non-unique
// index an earlier version built is dropped when the store starts.
func TestMongoBuildsOnlyUniqueIndexes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()

	_, stop, coll := startOn(ctx, t, dir)
	_, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "org", Value: 1}, {Key: "checkIn", Value: 1}}, Options: options.Index().SetName("a")},
		{Keys: bson.D{{Key: "org", Value: 1}, {Key: "status", Value: -1}}, Options: options.Index().SetName("b")},
		{Keys: bson.D{{Key: "ext", Value: 1}, {Key: "org", Value: 1}}, Options: options.Index().SetName("u").SetUnique(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range specs {
		listed = append(listed, fmt.Sprintf("%s %s unique=%v", s.Name, s.KeysDocument, s.Unique != nil && *s.Unique))
	}
	want := []string{
		`_id_ {"_id": {"$numberInt":"1"}} unique=false`,
		`a {"org": {"$numberInt":"1"},"checkIn": {"$numberInt":"1"}} unique=false`,
		`b {"org": {"$numberInt":"1"},"status": {"$numberInt":"-1"}} unique=false`,
		`u {"ext": {"$numberInt":"1"},"org": {"$numberInt":"1"}} unique=true`,
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("listIndexes:\n got %q\nwant %q", listed, want)
	}

	// The unique index holds over both its keys.
	if _, err := coll.InsertMany(ctx, []any{
		bson.M{"_id": 1, "org": "o", "ext": "e", "status": "reserved"},
		bson.M{"_id": 2, "org": "p", "ext": "e", "status": "reserved"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 3, "org": "o", "ext": "e"}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate (ext, org): %v, want a duplicate key error", err)
	}

	table := tableOf(ctx, t, dir, "c")
	built := []string{table + "__id_", table + "_u"}
	if got := sqliteIndexes(ctx, t, dir, table); !slices.Equal(got, built) {
		t.Fatalf("SQLite indexes %q, want %q", got, built)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "org", Value: "o"}, {Key: "status", Value: "reserved"}}); err != nil || n != 1 {
		t.Fatalf("count by org and status: %d, %v", n, err)
	}

	// Dropping indexes works whether or not they were built.
	if err := coll.Indexes().DropOne(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := coll.Indexes().DropOne(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := sqliteIndexes(ctx, t, dir, table); !slices.Equal(got, []string{table + "__id_"}) {
		t.Fatalf("after dropping a and u: %q", got)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 3, "org": "o", "ext": "e"}); err != nil {
		t.Fatalf("insert once u is dropped: %v", err)
	}

	// A non-unique index built by an earlier version is dropped at start.
	stop()
	db := openSQLite(t, dir)
	q := fmt.Sprintf(`CREATE INDEX %q ON %q (_ferretdb_sjson->"org", _ferretdb_sjson->"status" DESC)`, table+"_b", table)
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, _, coll = startOn(ctx, t, dir)
	if got := sqliteIndexes(ctx, t, dir, table); !slices.Equal(got, []string{table + "__id_"}) {
		t.Fatalf("after a restart on a built non-unique index: %q", got)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "org", Value: "o"}}); err != nil || n != 2 {
		t.Fatalf("count by org after the restart: %d, %v", n, err)
	}
	specs, err = coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].Name != "b" {
		t.Fatalf("indexes after the restart: %v, %v", specs, err)
	}
}

// startOn starts the store on dir and returns it, a function that
// disconnects and stops it (also run at cleanup), and a collection reached
// through the store's URI.
func startOn(ctx context.Context, t *testing.T, dir string) (*Mongo, func(), *mongo.Collection) {
	t.Helper()
	m, err := StartMongo(ctx, dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(m.URI))
	if err != nil {
		m.Stop()
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cl.Disconnect(context.Background())
			m.Stop()
		})
	}
	t.Cleanup(stop)
	return m, stop, cl.Database("t").Collection("c")
}

func openSQLite(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "t.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// tableOf is the SQLite table of a collection of database t.
func tableOf(ctx context.Context, t *testing.T, dir, coll string) string {
	t.Helper()
	db := openSQLite(t, dir)
	defer db.Close()
	var table string
	if err := db.QueryRowContext(ctx, `SELECT table_name FROM _ferretdb_collections WHERE name = ?`, coll).Scan(&table); err != nil {
		t.Fatal(err)
	}
	return table
}

// sqliteIndexes lists the SQLite indexes of a table, sorted.
func sqliteIndexes(ctx context.Context, t *testing.T, dir, table string) []string {
	t.Helper()
	db := openSQLite(t, dir)
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}
