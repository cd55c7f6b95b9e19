package service_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/extredis"
	"quarters.dev/pkg/testenv"
	"quarters.dev/services/catalog/internal/adapters"
	"quarters.dev/services/catalog/internal/domain"
	"quarters.dev/services/catalog/internal/service"
)

func TestListingsAreScopedToTheCallersOrgAndSortedByNickname(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := &service.Config{ViewReload: 100 * time.Millisecond}
	cfg.Mongo.URI = testenv.MongoURI(t)
	cfg.Redis.URL = testenv.RedisURL(t)

	// Two orgs' snapshots, written the way publishing stores them.
	_, db, err := extmongo.Connect(ctx, cfg.Mongo.URI, cfg.Mongo.DatabaseFor("catalog"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := adapters.NewListings(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	published := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, l := range []domain.Listing{
		{ID: "l-b", OrgID: "org-1", Nickname: "Beta", Timezone: "Europe/Berlin", PublishedAt: published,
			Address: domain.Address{City: "Berlin", Country: "DE"}},
		{ID: "l-a", OrgID: "org-1", Nickname: "Alpha", Timezone: "Europe/Berlin", PublishedAt: published,
			Address: domain.Address{City: "Berlin", Country: "DE"},
			Images:  []domain.Image{{ID: "i2", SortOrder: 2}, {ID: "i1", SortOrder: 1, IsPrimary: true}}},
		{ID: "l-x", OrgID: "org-2", Nickname: "Aardvark", Timezone: "Europe/Paris", PublishedAt: published},
	} {
		if err := repo.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}

	rt := &bootstrap.Runtime{Name: "catalog", Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	app, err := service.Build(cfg)(ctx, rt) // loads the view from the record
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range app.Closers {
		defer c(context.Background())
	}

	rdb, err := extredis.Connect(ctx, cfg.Redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	store := authn.NewStore(rdb)
	id := authn.NewClientID()
	secret, hash := authn.NewSecret()
	if err := store.PutCredential(ctx, id, "org-1", hash); err != nil {
		t.Fatal(err)
	}
	p, _ := store.VerifySecret(ctx, id, secret)
	token, _ := store.Mint(ctx, p)

	get := func(path, auth string) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		app.API.ServeHTTP(w, req)
		var body map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		return w, body
	}

	w, body := get("/api/v1/listings", "Bearer "+token)
	if w.Code != http.StatusOK {
		t.Fatalf("list: %d %s", w.Code, w.Body.String())
	}
	list := body["listings"].([]any)
	if len(list) != 2 {
		t.Fatalf("got %d listings, want org-1's 2: %s", len(list), w.Body.String())
	}
	first := list[0].(map[string]any)
	if first["nickname"] != "Alpha" || list[1].(map[string]any)["nickname"] != "Beta" {
		t.Fatalf("not sorted by nickname: %s", w.Body.String())
	}
	if first["publishedAt"] != "2026-03-01T10:00:00Z" || first["pricing"].(map[string]any)["currency"] != "EUR" {
		t.Fatalf("snapshot fields: %v", first)
	}
	if imgs := first["images"].([]any); imgs[0].(map[string]any)["id"] != "i1" {
		t.Fatalf("images not sorted by sortOrder: %v", imgs)
	}
	if _, ok := first["orgId"]; ok {
		t.Fatal("internal orgId leaked into the listing")
	}

	if w, _ := get("/api/v1/listings/l-a", "Bearer "+token); w.Code != 200 {
		t.Fatalf("get own listing: %d", w.Code)
	}
	if w, body := get("/api/v1/listings/l-x", "Bearer "+token); w.Code != 404 || body["error"] != "not_found" {
		t.Fatalf("another org's listing: %d %v", w.Code, body)
	}
	if w, _ := get("/api/v1/listings", ""); w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("no credentials: %d %v", w.Code, w.Header())
	}
	if w, body := get("/api/v1/listings/l-a/photos", "Bearer "+token); w.Code != 404 || body["error"] != "not_found" {
		t.Fatalf("unknown path: %d %v", w.Code, body)
	}

	// A snapshot stored after start shows once the view reloads.
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, w := range app.Workers {
		go w(workCtx)
	}
	if err := repo.Put(ctx, domain.Listing{ID: "l-c", OrgID: "org-1", Nickname: "Gamma", PublishedAt: published}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get("/api/v1/listings", "Bearer "+token)
		if len(body["listings"].([]any)) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reloaded view never showed the new snapshot")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
