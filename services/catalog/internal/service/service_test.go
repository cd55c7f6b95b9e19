package service_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/catalog/internal/service"
)

const adminToken = "test-admin-token"

// instance is one catalog process: its router with its workers running.
type instance struct{ api http.Handler }

func start(t *testing.T, ctx context.Context, cfg *service.Config) *instance {
	t.Helper()
	rt := &bootstrap.Runtime{Name: "catalog", Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	app, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	workCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range app.Workers {
		wg.Go(func() {
			if err := w(workCtx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		stop()
		wg.Wait()
		for _, c := range app.Closers {
			_ = c(context.Background())
		}
	})
	return &instance{api: app.API}
}

type answer struct {
	status int
	body   map[string]any
	raw    string
	ctype  string
}

func (in *instance) do(t *testing.T, method, path, auth, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	in.api.ServeHTTP(w, req)
	a := answer{status: w.Code, raw: w.Body.String(), ctype: w.Header().Get("Content-Type")}
	_ = json.Unmarshal(w.Body.Bytes(), &a.body)
	return a
}

func (in *instance) admin(t *testing.T, method, path, body string) answer {
	t.Helper()
	return in.do(t, method, "/admin/v1"+path, "Bearer "+adminToken, body)
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// announceOrg publishes an org event as the auth service does.
func announceOrg(t *testing.T, ctx context.Context, cfg *service.Config, orgID string) {
	t.Helper()
	value, err := proto.Marshal(&eventsv1.OrgEvent{
		Envelope: &eventsv1.Envelope{EventId: orgID + "-1", Type: "org.created", OrgId: orgID, AggregateId: orgID,
			AggregateVersion: 1, OccurredAt: timestamppb.Now()},
		Org: &eventsv1.Org{Id: orgID, Name: "Org " + orgID},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := extkafka.NewWriter(cfg.Kafka.Brokers)
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Topic: cfg.Kafka.Topic("orgs"), Key: []byte(orgID), Value: value}); err != nil {
		t.Fatal(err)
	}
}

// bearer makes a credential set for orgID and mints a token.
func bearer(t *testing.T, ctx context.Context, orgID string) string {
	t.Helper()
	store := authn.NewStore(testenv.Redis(t))
	t.Cleanup(func() { store.Close() })
	id := authn.NewClientID()
	secret, hash := authn.NewSecret()
	if err := store.PutCredential(ctx, id, orgID, hash); err != nil {
		t.Fatal(err)
	}
	p, err := store.VerifySecret(ctx, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	token, err := store.Mint(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + token
}

func config(t *testing.T) *service.Config {
	media, _ := url.Parse("https://media.test")
	cfg := &service.Config{AdminToken: adminToken, MediaURL: media, OrgWait: 10 * time.Second, ViewReload: 0}
	cfg.Mongo.URI = testenv.MongoURI(t)
	cfg.Mongo.Database = testenv.Database(t)
	cfg.Kafka.Brokers = testenv.KafkaBrokers(t)
	cfg.Kafka.TopicPrefix = testenv.TopicPrefix(t)
	cfg.Redis.URL = testenv.RedisURL(t)
	return cfg
}

const draft = `{
  "nickname": %q, "timezone": "Europe/Amsterdam", "active": true, "isListed": true,
  "address": {"city": "Amsterdam", "country": "NL", "street": "Prinsengracht 1"},
  "rooms": [{"kind": "bedroom", "name": "Main", "beds": [{"type": "double", "count": 1}]},
            {"kind": "living_room", "name": "", "beds": [{"type": "sofa_bed", "count": 1}]},
            {"kind": "full_bathroom"}, {"kind": "half_bathroom"}],
  "pricing": {"monthlyRateCents": 180000, "depositCents": 0},
  "terms": {"minNights": 30},
  "translations": {"nl": {"title": "Grachtenpand"}},
  "images": [{"isPrimary": false, "sortOrder": 2, "width": 800, "height": 600, "bytes": 1000, "url": "https://img.test/b.jpg"},
             {"isPrimary": true, "sortOrder": 1, "width": 800, "height": 600, "bytes": 1000, "url": "https://img.test/a.jpg"}],
  "ownerName": "Canal Holdings"
}`

func draftJSON(nickname string) string { return strings.Replace(draft, "%q", `"`+nickname+`"`, 1) }

// eventually polls check until it holds or the bound passes, and returns how
// long it took.
func eventually(t *testing.T, bound time.Duration, what string, check func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !check() {
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestPropertiesPublishAcrossTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := config(t)
	one := start(t, ctx, cfg)
	two := start(t, ctx, cfg) // a second replica on the same store and topics

	org, other := "org_"+testenv.Unique(), "org_"+testenv.Unique()
	announceOrg(t, ctx, cfg, org)
	announceOrg(t, ctx, cfg, other)
	auth, otherAuth := bearer(t, ctx, org), bearer(t, ctx, other)

	// Create (201), read, and a draft never shows in the public API.
	a := one.admin(t, "POST", "/orgs/"+org+"/properties", draftJSON("Canal House"))
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	prop := obj(a.body["property"])
	id := prop["id"].(string)
	if prop["published"] != false || prop["publishedAt"] != nil || obj(prop["draft"])["nickname"] != "Canal House" {
		t.Fatalf("created property: %s", a.raw)
	}
	if a := two.admin(t, "GET", "/orgs/"+org+"/properties/"+id, ""); a.status != 200 || obj(a.body["property"])["id"] != id {
		t.Fatalf("read through the other process: %d %s", a.status, a.raw)
	}
	for _, in := range []*instance{one, two} {
		if a := in.do(t, "GET", "/api/v1/listings/"+id, auth, ""); a.status != 404 || a.body["error"] != "not_found" {
			t.Fatalf("never published: %d %s", a.status, a.raw)
		}
	}

	// Publish through one: the answer is the snapshot, and the other process
	// serves the same bytes soon after.
	a = one.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", "")
	if a.status != 200 {
		t.Fatalf("publish: %d %s", a.status, a.raw)
	}
	listing := obj(a.body["listing"])
	if listing["bedrooms"] != 1.0 || listing["beds"] != 2.0 || listing["bathrooms"] != 1.5 || listing["slug"] != "canal-house" {
		t.Fatalf("derived fields: %s", a.raw)
	}
	if _, leaked := listing["ownerName"]; leaked {
		t.Fatal("ownerName is on the public listing")
	}
	pricing := obj(listing["pricing"])
	if pricing["currency"] != "EUR" || pricing["depositCents"] != 0.0 || pricing["utilitiesCents"] != nil || pricing["monthlyRateCents"] != 180000.0 {
		t.Fatalf("pricing: %v", pricing)
	}
	images := listing["images"].([]any)
	if obj(images[0])["sortOrder"] != 1.0 || obj(images[0])["isPrimary"] != true || !strings.HasPrefix(obj(images[1])["large"].(string), "https://media.test/") {
		t.Fatalf("images: %v", images)
	}
	snapshot, _ := json.Marshal(map[string]any{"listing": listing})
	took := eventually(t, time.Second, "publish visible through the other process", func() bool {
		return two.do(t, "GET", "/api/v1/listings/"+id, auth, "").status == 200
	})
	t.Logf("a publish through one process reached the other in %s", took)
	if got := two.do(t, "GET", "/api/v1/listings/"+id, auth, ""); !jsonEqual(got.raw, string(snapshot)) {
		t.Fatalf("the other process serves\n%s\nnot the published snapshot\n%s", got.raw, snapshot)
	}

	// Edits without publishing show nowhere; another org never sees it.
	if a := two.admin(t, "PUT", "/orgs/"+org+"/properties/"+id, draftJSON("Renamed")); a.status != 200 || obj(obj(a.body["property"])["draft"])["nickname"] != "Renamed" {
		t.Fatalf("replace: %d %s", a.status, a.raw)
	}
	for _, in := range []*instance{one, two} {
		if got := in.do(t, "GET", "/api/v1/listings", auth, ""); !strings.Contains(got.raw, `"Canal House"`) || strings.Contains(got.raw, "Renamed") {
			t.Fatalf("unpublished edit visible: %s", got.raw)
		}
		if got := in.do(t, "GET", "/api/v1/listings/"+id, otherAuth, ""); got.status != 404 {
			t.Fatalf("another org's listing: %d %s", got.status, got.raw)
		}
		if got := in.do(t, "GET", "/api/v1/listings", otherAuth, ""); got.raw != `{"listings":[]}` {
			t.Fatalf("another org's list: %s", got.raw)
		}
	}

	// Unpublish through two: one stops serving it soon after.
	if a := two.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/unpublish", ""); a.status != 204 {
		t.Fatalf("unpublish: %d %s", a.status, a.raw)
	}
	took = eventually(t, time.Second, "unpublish visible through the other process", func() bool {
		return one.do(t, "GET", "/api/v1/listings/"+id, auth, "").status == 404
	})
	t.Logf("an unpublish through one process reached the other in %s", took)
	if got := one.do(t, "GET", "/api/v1/listings", auth, ""); got.raw != `{"listings":[]}` {
		t.Fatalf("list after unpublish: %s", got.raw)
	}

	// Publishing again brings it back with the edit; a process started now
	// loads it from the store.
	if a := one.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", ""); a.status != 200 || obj(a.body["listing"])["nickname"] != "Renamed" {
		t.Fatalf("republish: %d %s", a.status, a.raw)
	}
	three := start(t, ctx, cfg)
	if got := three.do(t, "GET", "/api/v1/listings/"+id, auth, ""); got.status != 200 || !strings.Contains(got.raw, "Renamed") {
		t.Fatalf("a new process: %d %s", got.status, got.raw)
	}

	// Delete: gone from the admin and the public API of every process.
	if a := one.admin(t, "DELETE", "/orgs/"+org+"/properties/"+id, ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	if a := two.admin(t, "GET", "/orgs/"+org+"/properties/"+id, ""); a.status != 404 {
		t.Fatalf("deleted property: %d %s", a.status, a.raw)
	}
	for _, in := range []*instance{two, three} {
		eventually(t, 5*time.Second, "delete visible", func() bool {
			return in.do(t, "GET", "/api/v1/listings/"+id, auth, "").status == 404
		})
	}

	// The listing events carry the whole snapshot; the property events
	// only the id and org. The deletion's two events share a version.
	events := readListingEvents(t, ctx, cfg, 6)
	want := []string{"property.created", "listing.updated", "listing.deleted", "listing.updated", "property.deleted", "listing.deleted"}
	var lastVersion int64
	for i, ev := range events {
		env := ev.GetEnvelope()
		if env.GetType() != want[i] || env.GetAggregateId() != id || env.GetOrgId() != org ||
			env.GetAggregateVersion() < lastVersion || (env.GetAggregateVersion() == lastVersion && i != 5) {
			t.Fatalf("event %d: %v", i, env)
		}
		lastVersion = env.GetAggregateVersion()
	}
	for _, i := range []int{0, 4} {
		if l := events[i].GetListing(); l.GetId() != id || l.GetOrgId() != org || l.GetNickname() != "" {
			t.Fatalf("%s carries more than the id and org: %v", want[i], l)
		}
	}
	events = events[1:]
	if l := events[0].GetListing(); l.GetOwnerName() != "Canal Holdings" || l.GetTimezone() != "Europe/Amsterdam" ||
		l.GetTerms().GetMinNights() != 30 || l.GetPricing().GetMonthlyRateCents() != 180000 || l.GetNickname() != "Canal House" ||
		l.GetAddress().GetCity() != "Amsterdam" || len(l.GetImages()) != 2 || l.GetSlug() != "canal-house" {
		t.Fatalf("listing.updated snapshot: %v", l)
	}
	if events[2].GetListing().GetNickname() != "Renamed" {
		t.Fatalf("republish event: %v", events[2].GetListing())
	}
}

func readListingEvents(t *testing.T, ctx context.Context, cfg *service.Config, n int) []*eventsv1.ListingEvent {
	t.Helper()
	// One property's events share a partition: read every partition until
	// n events arrived (the last may still be on its way). Two replicas run
	// a relay each, so an event may be published twice (at least once):
	// repeats of an event id are dropped, as consumers do.
	readers := make([]*kafka.Reader, 4)
	for p := range readers {
		readers[p] = kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Kafka.Brokers, Topic: cfg.Kafka.Topic("listings"),
			Partition: p, MaxWait: 100 * time.Millisecond})
		defer readers[p].Close()
	}
	var out []*eventsv1.ListingEvent
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		for _, r := range readers {
			fctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			msg, err := r.FetchMessage(fctx)
			cancel()
			if err != nil {
				continue
			}
			var ev eventsv1.ListingEvent
			if err := proto.Unmarshal(msg.Value, &ev); err != nil {
				t.Fatal(err)
			}
			if !seen[ev.GetEnvelope().GetEventId()] {
				seen[ev.GetEnvelope().GetEventId()] = true
				out = append(out, &ev)
			}
		}
	}
	if len(out) != n {
		t.Fatalf("%d listing events, want %d", len(out), n)
	}
	return out
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestAdminRulesAndUnknownPaths(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := config(t)
	cfg.OrgWait = 300 * time.Millisecond
	in := start(t, ctx, cfg)
	org := "org_" + testenv.Unique()
	announceOrg(t, ctx, cfg, org)
	auth := bearer(t, ctx, org)

	eventually(t, 30*time.Second, "org known", func() bool {
		return in.admin(t, "POST", "/orgs/"+org+"/properties", draftJSON("First")).status == 201
	})
	if a := in.admin(t, "POST", "/orgs/org_unknown/properties", draftJSON("X")); a.status != 404 || a.body["error"] != "not_found" {
		t.Fatalf("unknown org: %d %s", a.status, a.raw)
	}
	if a := in.do(t, "POST", "/admin/v1/orgs/"+org+"/properties", "Bearer wrong", draftJSON("X")); a.status != 401 {
		t.Fatalf("wrong admin token: %d %s", a.status, a.raw)
	}

	bad := []struct{ name, body, field string }{
		{"unknown field", strings.Replace(draftJSON("X"), `"active"`, `"colour": "red", "active"`, 1), "colour"},
		{"bad bed type", strings.Replace(draftJSON("X"), `"sofa_bed"`, `"hammock"`, 1), "rooms[1].beds[0].type"},
		{"missing timezone", strings.Replace(draftJSON("X"), `"timezone": "Europe/Amsterdam",`, ``, 1), "timezone"},
		{"not JSON", `{"nickname":`, ""},
	}
	for _, b := range bad {
		a := in.admin(t, "POST", "/orgs/"+org+"/properties", b.body)
		if a.status != 400 || a.body["error"] != "invalid_request" || !strings.Contains(a.body["message"].(string), b.field) {
			t.Errorf("%s: %d %s", b.name, a.status, a.raw)
		}
	}

	// A draft whose primary image is missing is refused at publish, naming
	// images; a second primary likewise.
	noPrimary := strings.Replace(draftJSON("No Primary"), `"isPrimary": true`, `"isPrimary": false`, 1)
	a := in.admin(t, "POST", "/orgs/"+org+"/properties", noPrimary)
	if a.status != 201 {
		t.Fatalf("a draft without a primary image is a valid draft: %d %s", a.status, a.raw)
	}
	id := obj(a.body["property"])["id"].(string)
	if a := in.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", ""); a.status != 400 || !strings.Contains(a.raw, "images") {
		t.Fatalf("publish without a primary: %d %s", a.status, a.raw)
	}
	twoPrimaries := strings.Replace(draftJSON("Two"), `"isPrimary": false`, `"isPrimary": true`, 1)
	if a := in.admin(t, "PUT", "/orgs/"+org+"/properties/"+id, twoPrimaries); a.status != 200 {
		t.Fatalf("replace: %d %s", a.status, a.raw)
	}
	if a := in.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/publish", ""); a.status != 400 || !strings.Contains(a.raw, "images") {
		t.Fatalf("publish with two primaries: %d %s", a.status, a.raw)
	}
	if a := in.admin(t, "GET", "/orgs/other/properties/"+id, ""); a.status != 404 {
		t.Fatalf("property under another org: %d %s", a.status, a.raw)
	}
	if a := in.admin(t, "POST", "/orgs/"+org+"/properties/"+id+"/unpublish", ""); a.status != 204 {
		t.Fatalf("unpublish a draft: %d %s", a.status, a.raw)
	}

	// Unmatched paths and methods under the catalog's prefixes: JSON 404.
	for _, c := range []struct{ method, path, auth string }{
		{"GET", "/api/v1/listings/x/y", auth},
		{"POST", "/api/v1/listings", auth},
		{"DELETE", "/api/v1/listings/" + id, auth},
		{"PATCH", "/admin/v1/orgs/" + org + "/properties/" + id, "Bearer " + adminToken},
		{"GET", "/admin/v1/orgs/" + org + "/properties", "Bearer " + adminToken},
		{"GET", "/admin/v1/orgs/" + org + "/properties/" + id + "/publish", "Bearer " + adminToken},
	} {
		a := in.do(t, c.method, c.path, c.auth, "")
		if a.status != 404 || a.body["error"] != "not_found" || !strings.HasPrefix(a.ctype, "application/json") {
			t.Errorf("%s %s: %d %q %s", c.method, c.path, a.status, a.ctype, a.raw)
		}
	}
}
