package view

import (
	"context"
	"encoding/json"
	"testing"

	"quarters.dev/services/catalog/internal/domain"
)

func render(ls []domain.Listing) ([]byte, error) {
	names := []string{}
	for _, l := range ls {
		names = append(names, l.Nickname)
	}
	return json.Marshal(names)
}

type source []domain.Listing

func (s source) All(context.Context) ([]domain.Listing, error) { return s, nil }

func TestViewKeepsEachOrgSortedAndRendered(t *testing.T) {
	t.Parallel()
	v, err := New(render)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(v.List("o1")); got != "[]" {
		t.Fatalf("empty org: %s", got)
	}
	_ = v.Put(domain.Listing{ID: "b", OrgID: "o1", Nickname: "Beta"})
	_ = v.Put(domain.Listing{ID: "a", OrgID: "o1", Nickname: "Alpha"})
	_ = v.Put(domain.Listing{ID: "c", OrgID: "o2", Nickname: "Aaa"})
	if got := string(v.List("o1")); got != `["Alpha","Beta"]` {
		t.Fatalf("o1: %s", got)
	}
	_ = v.Put(domain.Listing{ID: "a", OrgID: "o1", Nickname: "Zulu"})
	if got := string(v.List("o1")); got != `["Beta","Zulu"]` {
		t.Fatalf("after rename: %s", got)
	}
	if _, ok := v.Get("o2", "a"); ok {
		t.Fatal("listing visible to another org")
	}
	_ = v.Delete("o1", "b")
	_ = v.Delete("o1", "a")
	if got := string(v.List("o1")); got != "[]" {
		t.Fatalf("after deletes: %s", got)
	}
}

func TestReloadReplacesButNeverOverwritesANewerWrite(t *testing.T) {
	t.Parallel()
	v, _ := New(render)
	_ = v.Put(domain.Listing{ID: "gone", OrgID: "o1", Nickname: "Gone"})
	ok, err := v.Reload(context.Background(), source{{ID: "x", OrgID: "o1", Nickname: "X"}})
	if err != nil || !ok {
		t.Fatalf("reload: %v %v", ok, err)
	}
	if got := string(v.List("o1")); got != `["X"]` {
		t.Fatalf("after reload: %s", got)
	}
	racing := sourceFunc(func() []domain.Listing {
		_ = v.Put(domain.Listing{ID: "y", OrgID: "o1", Nickname: "Y"})
		return nil
	})
	if ok, _ := v.Reload(context.Background(), racing); ok {
		t.Fatal("a reload that overlapped a write was applied")
	}
	if got := string(v.List("o1")); got != `["X","Y"]` {
		t.Fatalf("write lost to a reload: %s", got)
	}
}

type sourceFunc func() []domain.Listing

func (f sourceFunc) All(context.Context) ([]domain.Listing, error) { return f(), nil }
