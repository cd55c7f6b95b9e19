package adapters

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
)

func orgEvent(t *testing.T, id, name string, version int64) []byte {
	t.Helper()
	b, err := proto.Marshal(&eventsv1.OrgEvent{
		Envelope: &eventsv1.Envelope{EventId: name, Type: "org.updated", OrgId: id, AggregateId: id, AggregateVersion: version},
		Org:      &eventsv1.Org{Id: id, Name: name},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOrgProjectionAppliesOnlyNewerVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orgs := NewOrgs(testenv.Mongo(t))
	if ok, err := orgs.Known(ctx, "org_1"); err != nil || ok {
		t.Fatalf("unknown org: %v %v", ok, err)
	}
	for _, ev := range [][]byte{
		orgEvent(t, "org_1", "Second", 2),
		orgEvent(t, "org_1", "First", 1),  // late
		orgEvent(t, "org_1", "Second", 2), // redelivered
		[]byte("not an org event"),
	} {
		if err := orgs.ApplyOrgEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := orgs.Known(ctx, "org_1"); err != nil || !ok {
		t.Fatalf("known org: %v %v", ok, err)
	}
	var doc struct {
		Name    string `bson:"name"`
		Version int64  `bson:"version"`
	}
	if err := orgs.coll.FindOne(ctx, map[string]any{"_id": "org_1"}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "Second" || doc.Version != 2 {
		t.Fatalf("projection holds %+v", doc)
	}
	if err := orgs.ApplyOrgEvent(ctx, orgEvent(t, "org_1", "Third", 3)); err != nil {
		t.Fatal(err)
	}
	_ = orgs.coll.FindOne(ctx, map[string]any{"_id": "org_1"}).Decode(&doc)
	if doc.Name != "Third" || doc.Version != 3 {
		t.Fatalf("newer version not applied: %+v", doc)
	}
}
