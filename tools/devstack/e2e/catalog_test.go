package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

// propertyDraft is a whole PropertyDraft as an operator writes it.
func propertyDraft(nickname, imageHost string) string {
	d := map[string]any{
		"nickname": nickname, "active": true, "isListed": true,
		"propertyType": "Apartment", "roomType": "Entire home/apt",
		"address": map[string]any{"street": "Oudezijds Voorburgwal 99", "postalCode": "1012 EM", "city": "Amsterdam",
			"country": "NL", "area": "Centrum", "latitude": 52.372, "longitude": 4.898},
		"accommodates": 3, "squareMeter": 64, "timezone": "Europe/Amsterdam",
		"rooms": []any{
			map[string]any{"kind": "bedroom", "name": "Main", "beds": []any{map[string]any{"type": "queen", "count": 1}}},
			map[string]any{"kind": "living_room", "name": "", "beds": []any{map[string]any{"type": "sofa_bed", "count": 1}}},
			map[string]any{"kind": "full_bathroom", "name": ""},
			map[string]any{"kind": "half_bathroom", "name": ""},
		},
		"pricing":     map[string]any{"monthlyRateCents": 240000, "depositCents": 0, "utilitiesCents": nil, "furnitureCents": 7500, "rateBasis": "monthly"},
		"terms":       map[string]any{"minNights": 30, "maxNights": nil},
		"amenities":   []string{"wifi", "washer"},
		"description": map[string]any{"title": "Canal view", "summary": "<p>Bright and quiet.</p>"},
		"translations": map[string]any{"nl": map[string]any{"title": "Uitzicht op de gracht"},
			"de": map[string]any{"title": "Blick auf die Gracht", "summary": nil}},
		"images": []any{
			map[string]any{"isPrimary": false, "caption": "Kitchen", "sortOrder": 3, "width": 1600, "height": 1200, "bytes": 220000, "url": "https://" + imageHost + "/c.jpg"},
			map[string]any{"isPrimary": true, "caption": nil, "sortOrder": 1, "width": 2400, "height": 1600, "bytes": 510000, "url": "https://" + imageHost + "/a.jpg"},
			map[string]any{"isPrimary": false, "caption": "Bedroom", "sortOrder": 2, "width": 1600, "height": 1200, "bytes": 230000, "url": "https://" + imageHost + "/b.jpg"},
		},
		"ownerName": "Voorburgwal Vastgoed B.V.",
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// createProperty creates a property, waiting while the catalog has not yet
// heard of an org created a moment ago.
func createProperty(t *testing.T, orgID, draft string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := admin(t, "POST", "/orgs/"+orgID+"/properties", draft)
		if a.status == 201 {
			return obj(a.body["property"])["id"].(string)
		}
		if a.status != 404 || time.Now().After(deadline) {
			t.Fatalf("create property: %d %s", a.status, a.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func publish(t *testing.T, orgID, id string) map[string]any {
	t.Helper()
	a := admin(t, "POST", "/orgs/"+orgID+"/properties/"+id+"/publish", "")
	if a.status != 200 {
		t.Fatalf("publish %s: %d %s", id, a.status, a.raw)
	}
	return obj(a.body["listing"])
}

func getListing(t *testing.T, c *client.Client, id string) (map[string]any, error) {
	t.Helper()
	var out struct {
		Listing map[string]any `json:"listing"`
	}
	err := c.Get(context.Background(), "/listings/"+id, &out)
	return out.Listing, err
}

func isNotFound(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == 404 && e.Code == "not_found"
}

func renditions(l map[string]any) []string {
	var out []string
	for _, im := range l["images"].([]any) {
		m := obj(im)
		for _, k := range []string{"thumbnail", "regular", "large", "original"} {
			out = append(out, m[k].(string))
		}
	}
	return out
}

func TestCatalogPublishingEndToEnd(t *testing.T) {
	orgID, creds := newOrg(t, "Catalog Operator", 1)
	otherOrg, otherCreds := newOrg(t, "Another Operator", 1)
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret)
	other := client.New(st.BaseURL, otherCreds[0].id, otherCreds[0].secret)
	ctx := context.Background()

	id := createProperty(t, orgID, propertyDraft("Canal House", "img.example"))
	if _, err := getListing(t, c, id); !isNotFound(err) {
		t.Fatalf("a never-published property: %v", err)
	}

	// Publish: the answer is the snapshot GET /listings/{id} then serves.
	snap := publish(t, orgID, id)
	got, err := getListing(t, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got, snap) {
		t.Fatalf("GET shows\n%v\nnot the published snapshot\n%v", got, snap)
	}
	if got["bedrooms"] != 1.0 || got["beds"] != 2.0 || got["bathrooms"] != 1.5 || got["accommodates"] != 3.0 {
		t.Fatalf("derived counts: %v %v %v", got["bedrooms"], got["beds"], got["bathrooms"])
	}
	pricing := obj(got["pricing"])
	if pricing["currency"] != "EUR" || pricing["depositCents"] != 0.0 || pricing["utilitiesCents"] != nil ||
		pricing["monthlyRateCents"] != 240000.0 || pricing["rateBasis"] != "monthly" {
		t.Fatalf("pricing: %v", pricing)
	}
	if obj(obj(got["translations"])["de"])["title"] != "Blick auf die Gracht" || obj(got["terms"])["minNights"] != 30.0 {
		t.Fatalf("translations or terms: %v %v", got["translations"], got["terms"])
	}
	imgs := got["images"].([]any)
	for i, want := range []float64{1, 2, 3} {
		if obj(imgs[i])["sortOrder"] != want {
			t.Fatalf("images not sorted by sortOrder: %v", imgs)
		}
	}
	if obj(imgs[0])["isPrimary"] != true || obj(imgs[0])["id"] == "" {
		t.Fatalf("primary image: %v", imgs[0])
	}
	if _, leaked := got["ownerName"]; leaked {
		t.Fatal("ownerName is on the public listing")
	}

	// Edit without publishing: nothing changes in the API.
	if a := admin(t, "PUT", "/orgs/"+orgID+"/properties/"+id, propertyDraft("Canal House, renovated", "img.example")); a.status != 200 {
		t.Fatalf("replace draft: %d %s", a.status, a.raw)
	}
	if got, _ := getListing(t, c, id); !sameJSON(got, snap) {
		t.Fatalf("an unpublished edit shows: %v", got["nickname"])
	}

	// Republish without touching the images: the change shows, the
	// renditions stay, publishedAt moves.
	again := publish(t, orgID, id)
	if got, _ := getListing(t, c, id); got["nickname"] != "Canal House, renovated" || !sameJSON(got, again) {
		t.Fatalf("republished listing: %v", got["nickname"])
	}
	if strings.Join(renditions(again), " ") != strings.Join(renditions(snap), " ") {
		t.Fatalf("unchanged images got new renditions:\n%v\n%v", renditions(snap), renditions(again))
	}
	if !later(again["publishedAt"], snap["publishedAt"]) {
		t.Fatalf("publishedAt did not move: %v then %v", snap["publishedAt"], again["publishedAt"])
	}

	// Republish with other images: every rendition URI is new.
	if a := admin(t, "PUT", "/orgs/"+orgID+"/properties/"+id, propertyDraft("Canal House, renovated", "cdn.example")); a.status != 200 {
		t.Fatalf("replace draft: %d %s", a.status, a.raw)
	}
	third := publish(t, orgID, id)
	old := map[string]bool{}
	for _, u := range renditions(again) {
		old[u] = true
	}
	for _, u := range renditions(third) {
		if old[u] || !strings.HasPrefix(u, "http") {
			t.Fatalf("rendition %s after the images changed", u)
		}
	}

	// Sort order: by nickname, ties broken by id.
	var ids []string
	for _, nick := range []string{"Bravo", "Alpha", "Charlie", "Alpha"} {
		pid := createProperty(t, orgID, propertyDraft(nick, "img.example"))
		publish(t, orgID, pid)
		ids = append(ids, pid)
	}
	ls, err := c.Listings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range ls {
		order = append(order, l.Nickname)
	}
	if strings.Join(order, "|") != "Alpha|Alpha|Bravo|Canal House, renovated|Charlie" {
		t.Fatalf("list order: %v", order)
	}
	if ls[0].ID > ls[1].ID {
		t.Fatalf("equal nicknames not ordered by id: %s, %s", ls[0].ID, ls[1].ID)
	}

	// Another org sees none of it.
	if _, err := getListing(t, other, id); !isNotFound(err) {
		t.Fatalf("another org's listing: %v", err)
	}
	if ls, err := other.Listings(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("another org's list: %v %v", ls, err)
	}
	if a := admin(t, "GET", "/orgs/"+otherOrg+"/properties/"+id, ""); a.status != 404 {
		t.Fatalf("property through another org: %d %s", a.status, a.raw)
	}

	// Unpublish: 404 like an unknown id, and gone from the list; publishing
	// again brings it back. Delete: gone for good.
	if a := admin(t, "POST", "/orgs/"+orgID+"/properties/"+id+"/unpublish", ""); a.status != 204 {
		t.Fatalf("unpublish: %d %s", a.status, a.raw)
	}
	if _, err := getListing(t, c, id); !isNotFound(err) {
		t.Fatalf("unpublished listing: %v", err)
	}
	if _, err := getListing(t, c, "prop_unknown"); !isNotFound(err) {
		t.Fatalf("unknown listing: %v", err)
	}
	if ls, _ := c.Listings(ctx); len(ls) != 4 {
		t.Fatalf("list after unpublish: %d listings", len(ls))
	}
	publish(t, orgID, id)
	if _, err := getListing(t, c, id); err != nil {
		t.Fatalf("published again: %v", err)
	}
	if a := admin(t, "DELETE", "/orgs/"+orgID+"/properties/"+ids[0], ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	if _, err := getListing(t, c, ids[0]); !isNotFound(err) {
		t.Fatalf("deleted listing: %v", err)
	}
	if a := admin(t, "GET", "/orgs/"+orgID+"/properties/"+ids[0], ""); a.status != 404 {
		t.Fatalf("deleted property: %d %s", a.status, a.raw)
	}
}

func TestCatalogRefusalsAndUnknownPaths(t *testing.T) {
	orgID, creds := newOrg(t, "Catalog Refusals", 1)
	token, err := client.New(st.BaseURL, creds[0].id, creds[0].secret).FetchToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := createProperty(t, orgID, propertyDraft("Refusals", "img.example"))

	cases := []struct{ name, body, field string }{
		{"unknown field", strings.Replace(propertyDraft("X", "img.example"), `"active"`, `"colour":"red","active"`, 1), "colour"},
		{"bad bed type", strings.Replace(propertyDraft("X", "img.example"), `"sofa_bed"`, `"hammock"`, 1), "rooms[1].beds[0].type"},
		{"bad timezone", strings.Replace(propertyDraft("X", "img.example"), `"Europe/Amsterdam"`, `"Europe/Atlantis"`, 1), "timezone"},
	}
	for _, tc := range cases {
		a := admin(t, "PUT", "/orgs/"+orgID+"/properties/"+id, tc.body)
		if a.status != 400 || a.body["error"] != "invalid_request" || !strings.Contains(a.body["message"].(string), tc.field) {
			t.Errorf("%s: %d %s", tc.name, a.status, a.raw)
		}
	}
	noPrimary := strings.Replace(propertyDraft("No Primary", "img.example"), `"isPrimary":true`, `"isPrimary":false`, 1)
	if a := admin(t, "PUT", "/orgs/"+orgID+"/properties/"+id, noPrimary); a.status != 200 {
		t.Fatalf("a draft without a primary image: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+orgID+"/properties/"+id+"/publish", ""); a.status != 400 || !strings.Contains(a.body["message"].(string), "images") {
		t.Fatalf("publish without a primary image: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/org_unknown/properties", propertyDraft("X", "img.example")); a.status != 404 || a.body["error"] != "not_found" {
		t.Fatalf("unknown org: %d %s", a.status, a.raw)
	}

	bearer := []string{"Authorization", "Bearer " + token.AccessToken}
	for _, c := range []struct{ method, url string }{
		{"GET", st.BaseURL + "/listings/" + id + "/photos"},
		{"POST", st.BaseURL + "/listings"},
		{"DELETE", st.BaseURL + "/listings/" + id},
	} {
		a := call(t, c.method, c.url, "", "", bearer...)
		if a.status != 404 || a.body["error"] != "not_found" || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s", c.method, c.url, a.status, a.raw)
		}
	}
	a := admin(t, "PATCH", "/orgs/"+orgID+"/properties/"+id, `{}`)
	if a.status != 404 || a.body["error"] != "not_found" {
		t.Errorf("PATCH property: %d %s", a.status, a.raw)
	}
}

func TestDemoListingsAreSeeded(t *testing.T) {
	if st.Demo == nil {
		t.Fatal("no demo org")
	}
	c := client.New(st.BaseURL, st.Demo.ClientID, st.Demo.ClientSecret)
	ls, err := c.Listings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	raw, _ := json.Marshal(st.Demo.Data["listings"])
	_ = json.Unmarshal(raw, &ids)
	if len(ls) < 5 || len(ls) != len(ids) {
		t.Fatalf("%d demo listings, %d recorded", len(ls), len(ids))
	}
	cities := map[string]bool{}
	for _, l := range ls {
		var full struct {
			Address struct{ City string } `json:"address"`
			Images  []any                 `json:"images"`
			Rooms   []any                 `json:"rooms"`
		}
		_ = json.Unmarshal(l.Raw, &full)
		cities[full.Address.City] = true
		if len(full.Images) == 0 || len(full.Rooms) == 0 {
			t.Errorf("demo listing %s has no images or rooms", l.Nickname)
		}
	}
	for _, city := range []string{"Amsterdam", "Berlin", "Lisboa"} {
		if !cities[city] {
			t.Errorf("no demo listing in %s: %v", city, cities)
		}
	}
	draft, _ := st.Demo.Data["draft"].(string)
	if draft == "" {
		t.Fatal("no demo draft recorded")
	}
	if _, err := getListing(t, c, draft); !isNotFound(err) {
		t.Fatalf("the demo draft is public: %v", err)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func later(a, b any) bool {
	ta, err1 := time.Parse(time.RFC3339Nano, a.(string))
	tb, err2 := time.Parse(time.RFC3339Nano, b.(string))
	return err1 == nil && err2 == nil && ta.After(tb)
}
