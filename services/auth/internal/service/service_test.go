package service_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/auth/internal/service"
)

const adminToken = "test-admin-token"

type harness struct {
	t   *testing.T
	api http.Handler
	cfg *service.Config
}

func start(t *testing.T) *harness { return startWithRedis(t, testenv.RedisURL(t)) }

func startWithRedis(t *testing.T, redisURL string) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cfg := &service.Config{AdminToken: adminToken}
	cfg.Mongo.URI, cfg.Mongo.Database = testenv.MongoURI(t), testenv.Database(t)
	cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix = testenv.KafkaBrokers(t), testenv.TopicPrefix(t)
	cfg.Redis.URL = redisURL
	rt := &bootstrap.Runtime{Name: "auth", Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	app, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	workCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, w := range app.Workers {
			go w(workCtx)
		}
		<-workCtx.Done()
	}()
	t.Cleanup(func() {
		stop()
		<-done
		for _, c := range app.Closers {
			_ = c(context.Background())
		}
	})
	return &harness{t: t, api: app.API, cfg: cfg}
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (h *harness) do(method, path, contentType, body string, hdr ...string) resp {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, req)
	raw, _ := io.ReadAll(w.Body)
	r := resp{status: w.Code, header: w.Header(), raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		h.t.Errorf("%s %s: Cache-Control %q", method, path, got)
	}
	return r
}

func (h *harness) admin(method, path, body string) resp {
	h.t.Helper()
	return h.do(method, "/admin/v1"+path, "application/json", body, "Authorization", "Bearer "+adminToken)
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func basicAuth(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

func TestOrgsAdmin(t *testing.T) {
	t.Parallel()
	h := start(t)
	r := h.admin("POST", "/orgs", `{"name":"  Acme Rentals "}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	org := obj(r.body["org"])
	id, _ := org["id"].(string)
	if id == "" || org["name"] != "Acme Rentals" || org["contractProvider"] != "quarters" || org["inquiryDailyLimit"] != 500.0 {
		t.Fatalf("created org: %v", org)
	}
	if ts, _ := org["createdAt"].(string); !strings.HasSuffix(ts, "Z") {
		t.Fatalf("createdAt %v is not UTC with Z", org["createdAt"])
	}
	if r := h.admin("GET", "/orgs/"+id, ""); r.status != 200 || obj(r.body["org"])["id"] != id {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	r = h.admin("PATCH", "/orgs/"+id, `{"contractProvider":"external","inquiryDailyLimit":3}`)
	if r.status != 200 || obj(r.body["org"])["contractProvider"] != "external" || obj(r.body["org"])["inquiryDailyLimit"] != 3.0 {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	if obj(r.body["org"])["name"] != "Acme Rentals" {
		t.Fatalf("patch changed an absent field: %s", r.raw)
	}

	bad := []struct{ method, path, body, field string }{
		{"POST", "/orgs", `{}`, "name"},
		{"POST", "/orgs", `{"name":""}`, "name"},
		{"POST", "/orgs", `{"name":7}`, "name"},
		{"POST", "/orgs", `{"name":"a","contractProvider":"docusign"}`, "contractProvider"},
		{"POST", "/orgs", `{"name":"a","inquiryDailyLimit":1.5}`, "inquiryDailyLimit"},
		{"POST", "/orgs", `{"name":"a","inquiryDailyLimit":-1}`, "inquiryDailyLimit"},
		{"POST", "/orgs", `{"name":"a","inquiryDailyLimit":"5"}`, "inquiryDailyLimit"},
		{"POST", "/orgs", `{"name":"a","inquiryDailyLimit":1e3}`, "inquiryDailyLimit"},
		{"POST", "/orgs", `not json`, "JSON"},
		{"PATCH", "/orgs/" + id, `{"name":"  "}`, "name"},
		{"PATCH", "/orgs/" + id, `{"name":null}`, "name"},
		{"PATCH", "/orgs/" + id, `{"contractProvider":null}`, "contractProvider"},
		{"PATCH", "/orgs/" + id, `{"inquiryDailyLimit":null}`, "inquiryDailyLimit"},
		{"POST", "/orgs", `{"name":null}`, "name"},
	}
	for _, b := range bad {
		r := h.admin(b.method, b.path, b.body)
		if r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(r.body["message"].(string), b.field) {
			t.Errorf("%s %s %s: %d %s", b.method, b.path, b.body, r.status, r.raw)
		}
	}
	for _, p := range []string{"/orgs/nope", "/orgs/nope/credentials"} {
		if r := h.admin("GET", p, ""); r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("GET %s: %d %s", p, r.status, r.raw)
		}
	}
	if r := h.admin("PATCH", "/orgs/nope", `{"name":"x"}`); r.status != 404 {
		t.Errorf("PATCH unknown org: %d", r.status)
	}
	if r := h.do("GET", "/admin/v1/orgs/"+id, "", "", "Authorization", "Bearer wrong"); r.status != 401 || r.body["error"] != "unauthorized" {
		t.Errorf("wrong admin token: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/admin/v1/orgs", "application/json", `{"name":"x"}`); r.status != 401 {
		t.Errorf("no admin token: %d", r.status)
	}
}

func (h *harness) newOrgWithCredential(name string) (orgID, clientID, secret string) {
	h.t.Helper()
	r := h.admin("POST", "/orgs", `{"name":"`+name+`"}`)
	orgID = obj(r.body["org"])["id"].(string)
	r = h.admin("POST", "/orgs/"+orgID+"/credentials", `{"name":"integration"}`)
	if r.status != 201 {
		h.t.Fatalf("create credential: %d %s", r.status, r.raw)
	}
	c := obj(r.body["credential"])
	return orgID, c["clientId"].(string), c["clientSecret"].(string)
}

func TestTokenExchange(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, id, secret := h.newOrgWithCredential("Tokens")
	form := "application/x-www-form-urlencoded"
	ok := []struct {
		name, ctype, body string
		hdr               []string
	}{
		{"form", form, "grant_type=client_credentials&client_id=" + id + "&client_secret=" + secret, nil},
		{"basic", form, "grant_type=client_credentials", []string{"Authorization", basicAuth(id, secret)}},
		{"json", "application/json", `{"grant_type":"client_credentials","client_id":"` + id + `","client_secret":"` + secret + `"}`, nil},
		{"json charset", "application/json; charset=utf-8", `{"grant_type":"client_credentials","client_id":"` + id + `","client_secret":"` + secret + `"}`, nil},
		{"form with a stray bearer", form, "grant_type=client_credentials&client_id=" + id + "&client_secret=" + secret, []string{"Authorization", "Bearer xyz"}},
	}
	for _, c := range ok {
		r := h.do("POST", "/api/v1/oauth2/token", c.ctype, c.body, c.hdr...)
		if r.status != 200 || r.body["token_type"] != "Bearer" || r.body["expires_in"] != 86400.0 || r.body["access_token"] == "" {
			t.Errorf("%s: %d %s", c.name, r.status, r.raw)
		}
		if r.header.Get("Pragma") != "no-cache" {
			t.Errorf("%s: Pragma %q", c.name, r.header.Get("Pragma"))
		}
	}

	bad := []struct {
		name, ctype, body string
		hdr               []string
		status            int
		code              string
	}{
		{"missing grant", form, "client_id=" + id + "&client_secret=" + secret, nil, 400, "unsupported_grant_type"},
		{"empty grant", form, "grant_type=&client_id=" + id + "&client_secret=" + secret, nil, 400, "unsupported_grant_type"},
		{"empty body", form, "", nil, 400, "unsupported_grant_type"},
		{"wrong grant", form, "grant_type=password&client_id=" + id + "&client_secret=" + secret, nil, 400, "unsupported_grant_type"},
		{"missing secret", form, "grant_type=client_credentials&client_id=" + id, nil, 400, "invalid_request"},
		{"missing id", form, "grant_type=client_credentials&client_secret=" + secret, nil, 400, "invalid_request"},
		{"malformed form", form, "grant_type=%zz", nil, 400, "invalid_request"},
		{"repeated field", form, "grant_type=client_credentials&grant_type=client_credentials&client_id=" + id + "&client_secret=" + secret, nil, 400, "invalid_request"},
		{"text body", "text/plain", "grant_type=client_credentials", nil, 400, "invalid_request"},
		{"no content type", "", "grant_type=client_credentials", nil, 400, "invalid_request"},
		{"json array", "application/json", `["x"]`, nil, 400, "invalid_request"},
		{"json number", "application/json", `{"grant_type":"client_credentials","client_id":5,"client_secret":"x"}`, nil, 400, "invalid_request"},
		{"oversized", form, "grant_type=client_credentials&pad=" + strings.Repeat("x", 20000), nil, 413, "invalid_request"},
		{"unknown client", form, "grant_type=client_credentials&client_id=qc_nobody&client_secret=" + secret, nil, 401, "invalid_client"},
		{"wrong secret", form, "grant_type=client_credentials&client_id=" + id + "&client_secret=" + secret + "x", nil, 401, "invalid_client"},
		{"wrong basic", form, "grant_type=client_credentials", []string{"Authorization", basicAuth(id, "nope")}, 401, "invalid_client"},
		{"malformed basic", form, "grant_type=client_credentials", []string{"Authorization", "Basic %%%"}, 401, "invalid_client"},
	}
	for _, c := range bad {
		r := h.do("POST", "/api/v1/oauth2/token", c.ctype, c.body, c.hdr...)
		if r.status != c.status || r.body["error"] != c.code || r.body["error_description"] == nil {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.code)
		}
		if r.header.Get("Pragma") != "no-cache" {
			t.Errorf("%s: Pragma %q", c.name, r.header.Get("Pragma"))
		}
		if basic := len(c.hdr) > 1 && strings.HasPrefix(c.hdr[1], "Basic "); basic && r.header.Get("WWW-Authenticate") != `Basic realm="quarters"` {
			t.Errorf("%s: WWW-Authenticate %q, want the Basic challenge", c.name, r.header.Get("WWW-Authenticate"))
		}
	}
	if r := h.do("GET", "/api/v1/oauth2/token", "", ""); r.status != 404 || r.body["error"] != "not_found" {
		t.Errorf("GET token: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", "/api/v1/nothing/here", "", ""); r.status != 404 || r.body["error"] != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
}

func TestCredentialsListAndRevoke(t *testing.T) {
	t.Parallel()
	h := start(t)
	org, id1, secret1 := h.newOrgWithCredential("Creds")
	r := h.admin("POST", "/orgs/"+org+"/credentials", "")
	if r.status != 201 {
		t.Fatalf("create without body: %d %s", r.status, r.raw)
	}
	id2 := obj(r.body["credential"])["clientId"].(string)

	r = h.admin("GET", "/orgs/"+org+"/credentials", "")
	list, _ := r.body["credentials"].([]any)
	if r.status != 200 || len(list) != 2 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	if strings.Contains(r.raw, "clientSecret") || strings.Contains(r.raw, secret1) || strings.Contains(r.raw, "secretHash") {
		t.Fatalf("list reveals secrets: %s", r.raw)
	}
	if obj(list[0])["clientId"] != id1 || obj(list[0])["revokedAt"] != nil || obj(list[0])["name"] != "integration" {
		t.Fatalf("first set: %v", list[0])
	}

	if r := h.admin("DELETE", "/orgs/"+org+"/credentials/"+id1, ""); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/credentials/"+id1, ""); r.status != 204 {
		t.Fatalf("revoke again: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/credentials/qc_unknown", ""); r.status != 404 {
		t.Fatalf("revoke unknown: %d %s", r.status, r.raw)
	}
	other, _, _ := h.newOrgWithCredential("Other")
	if r := h.admin("DELETE", "/orgs/"+other+"/credentials/"+id2, ""); r.status != 404 {
		t.Fatalf("revoke another org's set: %d %s", r.status, r.raw)
	}
	r = h.admin("GET", "/orgs/"+org+"/credentials", "")
	list, _ = r.body["credentials"].([]any)
	if ts, _ := obj(list[0])["revokedAt"].(string); !strings.HasSuffix(ts, "Z") || obj(list[1])["revokedAt"] != nil {
		t.Fatalf("after revoke: %s", r.raw)
	}
	r = h.do("POST", "/api/v1/oauth2/token", "application/x-www-form-urlencoded",
		"grant_type=client_credentials&client_id="+id1+"&client_secret="+secret1)
	if r.status != 401 || r.body["error"] != "invalid_client" {
		t.Fatalf("token for a revoked set: %d %s", r.status, r.raw)
	}
}

func TestOrgEventsArePublishedWithFullState(t *testing.T) {
	t.Parallel()
	h := start(t)
	r := h.admin("POST", "/orgs", `{"name":"Evented"}`)
	id := obj(r.body["org"])["id"].(string)
	h.admin("PATCH", "/orgs/"+id, `{"contractProvider":"external"}`)
	h.admin("PATCH", "/orgs/"+id, `{"contractProvider":"external"}`) // no change, no event

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers: h.cfg.Kafka.Brokers, Topic: h.cfg.Kafka.Topic("orgs"), GroupID: "test-" + id,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
	})
	defer reader.Close()
	var got []*eventsv1.OrgEvent
	for len(got) < 2 {
		msg, err := reader.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		var ev eventsv1.OrgEvent
		if err := proto.Unmarshal(msg.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.GetEnvelope().GetOrgId() != id {
			continue
		}
		if string(msg.Key) != id {
			t.Errorf("message key %q, want the org id", msg.Key)
		}
		got = append(got, &ev)
	}
	first, second := got[0], got[1]
	if first.GetEnvelope().GetType() != "org.created" || first.GetEnvelope().GetAggregateVersion() != 1 ||
		first.GetOrg().GetName() != "Evented" || first.GetOrg().GetInquiryDailyLimit() != 500 {
		t.Fatalf("first event: %v", first)
	}
	if second.GetEnvelope().GetType() != "org.updated" || second.GetEnvelope().GetAggregateVersion() != 2 ||
		second.GetOrg().GetContractProvider() != eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL ||
		second.GetEnvelope().GetEventId() == "" || second.GetEnvelope().GetEventId() == first.GetEnvelope().GetEventId() {
		t.Fatalf("second event: %v", second)
	}
}

func TestTokenExchangeRestoresASetRedisLost(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, id, secret := h.newOrgWithCredential("Lost")
	rdb := testenv.Redis(t)
	if err := rdb.Del(context.Background(), "quarters:cred:{"+id+"}").Err(); err != nil {
		t.Fatal(err)
	}
	r := h.do("POST", "/api/v1/oauth2/token", "application/x-www-form-urlencoded",
		"grant_type=client_credentials&client_id="+id+"&client_secret="+secret)
	if r.status != 200 {
		t.Fatalf("token after Redis lost the set: %d %s", r.status, r.raw)
	}
	if n, _ := rdb.Exists(context.Background(), "quarters:cred:{"+id+"}").Result(); n != 1 {
		t.Fatal("the set was not written back to Redis")
	}
}

func TestRedisOutageFailsClosedAndRevocationCanBeRetried(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	h := startWithRedis(t, "redis://"+mr.Addr()+"/0")
	org, id, secret := h.newOrgWithCredential("Outage")
	mint := func() resp {
		return h.do("POST", "/api/v1/oauth2/token", "application/x-www-form-urlencoded",
			"grant_type=client_credentials&client_id="+id+"&client_secret="+secret)
	}
	if r := mint(); r.status != 200 {
		t.Fatalf("mint: %d %s", r.status, r.raw)
	}
	mr.SetError("LOADING Redis is loading the dataset in memory")
	if r := mint(); r.status != 503 || r.body["error"] != "temporarily_unavailable" || r.header.Get("Pragma") != "no-cache" {
		t.Fatalf("mint with Redis failing: %d %s", r.status, r.raw)
	}
	if r := h.admin("DELETE", "/orgs/"+org+"/credentials/"+id, ""); r.status != 503 || r.body["error"] != "service_unavailable" {
		t.Fatalf("revoke with Redis failing: %d %s", r.status, r.raw)
	}
	mr.SetError("")
	// The set is already revoked in the record; repeating the call applies
	// the revocation to Redis too.
	if r := h.admin("DELETE", "/orgs/"+org+"/credentials/"+id, ""); r.status != 204 {
		t.Fatalf("revoke retried: %d %s", r.status, r.raw)
	}
	if r := mint(); r.status != 401 || r.body["error"] != "invalid_client" {
		t.Fatalf("mint after revocation: %d %s", r.status, r.raw)
	}
}
