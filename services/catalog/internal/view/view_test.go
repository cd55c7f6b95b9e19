package view

import (
	"encoding/json"
	"testing"

	"quarters.dev/services/catalog/internal/domain"
)

func render(l domain.Listing) ([]byte, error) { return json.Marshal(l.Nickname + "#" + l.ID) }

func published(id, org, nickname string, version int64) domain.ListingState {
	return domain.ListingState{ID: id, OrgID: org, Version: version,
		Listing: &domain.Listing{ID: id, OrgID: org, Nickname: nickname}}
}

func gone(id, org string, version int64) domain.ListingState {
	return domain.ListingState{ID: id, OrgID: org, Version: version}
}

func TestViewKeepsEachOrgSortedAndRendered(t *testing.T) {
	t.Parallel()
	v := New(render)
	if got := string(v.List("o1")); got != `{"listings":[]}` {
		t.Fatalf("empty org: %s", got)
	}
	if _, err := v.Apply(published("b", "o1", "Beta", 1), published("a", "o1", "Alpha", 1), published("c", "o2", "Aaa", 1),
		published("d", "o1", "Beta", 1)); err != nil {
		t.Fatal(err)
	}
	if got := string(v.List("o1")); got != `{"listings":["Alpha#a","Beta#b","Beta#d"]}` {
		t.Fatalf("o1: %s", got)
	}
	if body, ok := v.Get("o1", "a"); !ok || string(body) != `{"listing":"Alpha#a"}` {
		t.Fatalf("get: %s %v", body, ok)
	}
	if _, ok := v.Get("o2", "a"); ok {
		t.Fatal("listing visible to another org")
	}
	v.Apply(published("a", "o1", "Zulu", 2))
	if got := string(v.List("o1")); got != `{"listings":["Beta#b","Beta#d","Zulu#a"]}` {
		t.Fatalf("after rename: %s", got)
	}
	v.Apply(gone("b", "o1", 2), gone("a", "o1", 3), gone("d", "o1", 2))
	if got := string(v.List("o1")); got != `{"listings":[]}` {
		t.Fatalf("after removals: %s", got)
	}
	if _, ok := v.Get("o1", "a"); ok {
		t.Fatal("removed listing still served")
	}
}

func TestViewAppliesOnlyNewerStates(t *testing.T) {
	t.Parallel()
	v := New(render)
	v.Apply(published("a", "o1", "Second", 2))
	// An older publish arriving late, or a redelivery, changes nothing.
	if n, _ := v.Apply(published("a", "o1", "First", 1), published("a", "o1", "Second again", 2)); n != 0 {
		t.Fatalf("applied %d stale states", n)
	}
	if got := string(v.List("o1")); got != `{"listings":["Second#a"]}` {
		t.Fatalf("stale state applied: %s", got)
	}
	// An unpublish is remembered, so the publish it replaced cannot return.
	v.Apply(gone("a", "o1", 3))
	v.Apply(published("a", "o1", "Second", 2))
	if _, ok := v.Get("o1", "a"); ok {
		t.Fatal("an older publish brought back an unpublished listing")
	}
	// Equal nicknames sort by id.
	v.Apply(published("a", "o1", "Same", 4), published("0", "o1", "Same", 1))
	if got := string(v.List("o1")); got != `{"listings":["Same#0","Same#a"]}` {
		t.Fatalf("after republish: %s", got)
	}
}
