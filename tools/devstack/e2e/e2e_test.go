// Package e2e drives the whole dev stack through its ingress, as an
// integrator and an operator meet it: every service built from source and
// run as its own process, the embedded store, Kafka and SMTP sink, and Redis.
//
// Every exchange with /api/v1 and /admin/v1 is checked against the OpenAPI
// documents (pkg/openapi, through tools/devstack/contract): the requests of
// `call` and `admin`, and those of any client on http.DefaultTransport (the
// Go client of pkg/client included). A failure is reported on the test whose
// context carried the request (`call` does it; pass `tctx(t)` to the Go
// client), otherwise the run fails at its end with the list.
package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"quarters.dev/pkg/client"
	"quarters.dev/pkg/testenv"
	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/contract"
	"quarters.dev/tools/devstack/stack"
)

var st *stack.Stack

// unattributed collects the contract failures of requests sent without a
// test in their context (tctx).
var unattributed contractLog

type contractLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *contractLog) Helper() {}
func (l *contractLog) Errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := contract.Default(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	http.DefaultTransport = &contract.Transport{Base: http.DefaultTransport, Reporter: &unattributed}
	code := runStack(m)
	if len(unattributed.msgs) > 0 {
		fmt.Fprintf(os.Stderr, "contract failures of requests outside a test's context:\n%s\n", strings.Join(unattributed.msgs, "\n"))
		code = 1
	}
	return code
}

// tctx returns a context that reports the contract failures of the
// requests made with it on t.
func tctx(t *testing.T) context.Context {
	return contract.WithReporter(t.Context(), t)
}

// apiClient returns the Go client of the public API for a credential set;
// pass tctx(t) to its calls.
func apiClient(id, secret string) *client.Client {
	return client.New(st.BaseURL, id, secret)
}

// stackOutput collects what the shared stack prints, across its restart
// (TestRestartKeepsData), for the report of a failed run.
var stackOutput testenv.Buffer

func runStack(m *testing.M) int {
	dir, err := os.MkdirTemp("", "quarters-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	st, err = startStack(dir, &stackOutput)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start dev stack: %v\n%s", err, stackOutput.String())
		return 1
	}
	code := m.Run()
	st.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "dev stack output (both starts):\n%s", stackOutput.String())
	}
	return code
}

func startStack(dir string, out io.Writer) (*stack.Stack, error) {
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.RedisURL = os.Getenv("QUARTERS_TEST_REDIS_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return stack.Start(ctx, stack.Config{Config: cfg, Output: out})
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// call sends one request through the ingress and checks what every response
// must carry.
func call(t *testing.T, method, url, contentType, body string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(tctx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s %s: Cache-Control %q, want no-store", method, url, cc)
	}
	for k := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s %s: CORS header %s", method, url, k)
		}
	}
	return a
}

func admin(t *testing.T, method, path, body string) answer {
	t.Helper()
	return call(t, method, st.AdminURL+path, "application/json", body, "Authorization", "Bearer "+st.AdminToken)
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func basic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

type credential struct{ id, secret string }

func newOrg(t *testing.T, name string, sets int) (string, []credential) {
	t.Helper()
	a := admin(t, "POST", "/orgs", `{"name":"`+name+`"}`)
	if a.status != 201 {
		t.Fatalf("create org: %d %s", a.status, a.raw)
	}
	org := obj(a.body["org"])["id"].(string)
	var creds []credential
	for i := range sets {
		a := admin(t, "POST", "/orgs/"+org+"/credentials", fmt.Sprintf(`{"name":"set %d"}`, i))
		if a.status != 201 {
			t.Fatalf("create credential: %d %s", a.status, a.raw)
		}
		c := obj(a.body["credential"])
		creds = append(creds, credential{c["clientId"].(string), c["clientSecret"].(string)})
	}
	return org, creds
}

const form = "application/x-www-form-urlencoded"

func TestAuthenticationEndToEnd(t *testing.T) {
	orgID, creds := newOrg(t, "End To End", 2)
	one, two := creds[0], creds[1]
	tokenURL := st.BaseURL + "/oauth2/token"

	// Mint tokens all three ways.
	mints := map[string]answer{
		"form":  call(t, "POST", tokenURL, form, "grant_type=client_credentials&client_id="+one.id+"&client_secret="+one.secret),
		"basic": call(t, "POST", tokenURL, form, "grant_type=client_credentials", "Authorization", basic(one.id, one.secret)),
		"json":  call(t, "POST", tokenURL, "application/json", `{"grant_type":"client_credentials","client_id":"`+one.id+`","client_secret":"`+one.secret+`"}`),
	}
	for how, a := range mints {
		if a.status != 200 || a.body["token_type"] != "Bearer" || a.body["expires_in"] != 86400.0 || a.header.Get("Pragma") != "no-cache" {
			t.Fatalf("mint by %s: %d %v %s", how, a.status, a.header, a.raw)
		}
	}
	tokenOne := mints["form"].body["access_token"].(string)

	// An authenticated route, with the bearer and with Basic.
	for how, auth := range map[string]string{"bearer": "Bearer " + tokenOne, "basic": basic(one.id, one.secret)} {
		a := call(t, "GET", st.BaseURL+"/listings", "", "", "Authorization", auth)
		if a.status != 200 || a.raw != `{"listings":[]}` {
			t.Fatalf("listings with %s: %d %s", how, a.status, a.raw)
		}
	}

	// The Go client, as an integrator uses it.
	c := apiClient(two.id, two.secret)
	if ls, err := c.Listings(tctx(t)); err != nil || len(ls) != 0 {
		t.Fatalf("client listings: %v %v", ls, err)
	}
	tokenTwo, err := c.FetchToken(tctx(t))
	if err != nil {
		t.Fatal(err)
	}

	// Revoking set one fails its token and its Basic from the next call on;
	// set two is unaffected.
	if a := admin(t, "DELETE", "/orgs/"+orgID+"/credentials/"+one.id, ""); a.status != 204 {
		t.Fatalf("revoke: %d %s", a.status, a.raw)
	}
	for how, auth := range map[string]string{"bearer": "Bearer " + tokenOne, "basic": basic(one.id, one.secret)} {
		a := call(t, "GET", st.BaseURL+"/listings", "", "", "Authorization", auth)
		if a.status != 401 || a.header.Get("WWW-Authenticate") != "Bearer" || a.body["error"] != "unauthorized" {
			t.Fatalf("revoked set by %s: %d %v %s", how, a.status, a.header, a.raw)
		}
	}
	if a := call(t, "GET", st.BaseURL+"/listings", "", "", "Authorization", "Bearer "+tokenTwo.AccessToken); a.status != 200 {
		t.Fatalf("other set after revocation: %d %s", a.status, a.raw)
	}
	if a := call(t, "POST", tokenURL, form, "grant_type=client_credentials&client_id="+one.id+"&client_secret="+one.secret); a.status != 401 || a.body["error"] != "invalid_client" {
		t.Fatalf("mint with a revoked set: %d %s", a.status, a.raw)
	}
}

func TestBadInput(t *testing.T) {
	_, creds := newOrg(t, "Bad Input", 1)
	c := creds[0]
	tokenURL := st.BaseURL + "/oauth2/token"
	good := "grant_type=client_credentials&client_id=" + c.id + "&client_secret=" + c.secret
	mint := call(t, "POST", tokenURL, form, good)
	token, _ := mint.body["access_token"].(string)

	tokenCases := []struct {
		name, ctype, body string
		hdr               []string
		status            int
		code              string
	}{
		{"malformed form", form, "grant_type=client_credentials&client_id=%zz", nil, 400, "invalid_request"},
		{"missing fields", form, "grant_type=client_credentials", nil, 400, "invalid_request"},
		{"missing secret", form, "grant_type=client_credentials&client_id=" + c.id, nil, 400, "invalid_request"},
		{"missing grant type", form, "client_id=" + c.id + "&client_secret=" + c.secret, nil, 400, "unsupported_grant_type"},
		{"wrong grant type", form, "grant_type=authorization_code&client_id=" + c.id + "&client_secret=" + c.secret, nil, 400, "unsupported_grant_type"},
		{"unknown client", form, "grant_type=client_credentials&client_id=qc_000000000000000000000000&client_secret=" + c.secret, nil, 401, "invalid_client"},
		{"wrong secret", form, "grant_type=client_credentials&client_id=" + c.id + "&client_secret=wrong", nil, 401, "invalid_client"},
		{"neither form nor JSON", "text/plain", good, nil, 400, "invalid_request"},
		{"broken JSON", "application/json", `{"grant_type":`, nil, 400, "invalid_request"},
		{"oversized body", form, good + "&pad=" + strings.Repeat("a", 1<<20), nil, 413, "invalid_request"},
	}
	for _, tc := range tokenCases {
		a := call(t, "POST", tokenURL, tc.ctype, tc.body, tc.hdr...)
		if a.status != tc.status || a.body["error"] != tc.code || a.body["error_description"] == nil {
			t.Errorf("token %s: %d %s, want %d %s", tc.name, a.status, a.raw, tc.status, tc.code)
		}
	}

	authCases := map[string]string{
		"no credentials":           "",
		"malformed header":         "Bearer",
		"unknown scheme":           "Digest " + token,
		"token with trailing junk": "Bearer " + token + "junk",
		"two tokens":               "Bearer " + token + " " + token,
		"made-up token":            "Bearer qt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"bad basic":                "Basic not-base64!",
	}
	for name, auth := range authCases {
		var hdr []string
		if auth != "" {
			hdr = []string{"Authorization", auth}
		}
		a := call(t, "GET", st.BaseURL+"/listings", "", "", hdr...)
		if a.status != 401 || a.header.Get("WWW-Authenticate") != "Bearer" || a.body["error"] != "unauthorized" {
			t.Errorf("%s: %d %v %s", name, a.status, a.header, a.raw)
		}
	}
}

func TestUnknownPathsAndPreflight(t *testing.T) {
	for _, p := range []string{"/api/v1/nope", "/api/v1/listings/x/y/z/w", "/api/v1/oauth2", "/api/v1/"} {
		a := call(t, "GET", st.IngressURL+p, "", "")
		if a.status != 404 || a.body["error"] != "not_found" || a.body["message"] == "" {
			t.Errorf("GET %s: %d %s", p, a.status, a.raw)
		}
	}
	a := call(t, "OPTIONS", st.BaseURL+"/listings", "", "",
		"Origin", "https://app.example", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "authorization")
	if a.status != 404 {
		t.Errorf("preflight: %d %s", a.status, a.raw)
	}
	if a := call(t, "GET", st.IngressURL+"/readyz", "", ""); a.status != 200 {
		t.Errorf("readyz: %d %s", a.status, a.raw)
	}
}

func TestAdminOrgsThroughTheIngress(t *testing.T) {
	a := admin(t, "POST", "/orgs", `{"name":"Admin Org","contractProvider":"external","inquiryDailyLimit":20}`)
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	org := obj(a.body["org"])
	id := org["id"].(string)
	for _, f := range []string{"id", "name", "contractProvider", "inquiryDailyLimit", "createdAt", "updatedAt"} {
		if _, ok := org[f]; !ok {
			t.Errorf("org lacks %s: %s", f, a.raw)
		}
	}
	if a := admin(t, "PATCH", "/orgs/"+id, `{"name":"Renamed"}`); a.status != 200 || obj(a.body["org"])["name"] != "Renamed" || obj(a.body["org"])["contractProvider"] != "external" {
		t.Fatalf("patch: %d %s", a.status, a.raw)
	}
	if a := admin(t, "GET", "/orgs/org_unknown", ""); a.status != 404 || a.body["error"] != "not_found" {
		t.Fatalf("unknown org: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs", `{"contractProvider":"external"}`); a.status != 400 || !strings.Contains(a.raw, "name") {
		t.Fatalf("missing name: %d %s", a.status, a.raw)
	}
	if a := call(t, "GET", st.AdminURL+"/orgs/"+id, "", ""); a.status != 401 || a.body["error"] != "unauthorized" {
		t.Fatalf("no admin token: %d %s", a.status, a.raw)
	}
}

// An unknown orgId answers 404 on every admin route under /orgs/{orgId},
// whatever the body: the org is checked before the body is read.
func TestUnknownOrgIsNotFoundWhateverTheBody(t *testing.T) {
	t.Parallel()
	const org = "/orgs/org_0000000000000000000000ff"
	for _, r := range []struct{ method, path, body string }{
		{"PATCH", org, `{"inquiryDailyLimit":"many"}`},
		{"POST", org + "/credentials", `{"name":7}`},
		{"POST", org + "/properties", `{}`},
		{"PUT", org + "/properties/prop_x", `{"unknownField":1}`},
		{"POST", org + "/properties/prop_x/blocks", `{"start":"2027-02-30"}`},
		{"POST", org + "/reservations", `{"checkIn":"not a date"}`},
		{"PATCH", org + "/reservations/res_x", `{"status":"sideways"}`},
		{"POST", org + "/inquiries/inq_x/convert", `{"status":"sideways"}`},
		{"POST", org + "/reservations/res_x/agreements", `{"signers":"nobody"}`},
		{"POST", org + "/webhooks", `{"url":"not a url"}`},
		{"GET", org + "/emails", ""},
	} {
		if a := admin(t, r.method, r.path, r.body); a.status != 404 || a.body["error"] != "not_found" || !strings.Contains(a.raw, "org_0000000000000000000000ff") {
			t.Errorf("%s %s %s: %d %s, want 404 naming the org", r.method, r.path, r.body, a.status, a.raw)
		}
	}
}

func TestDemoOrgIsSeeded(t *testing.T) {
	if st.Demo == nil {
		t.Fatal("no demo org")
	}
	c := apiClient(st.Demo.ClientID, st.Demo.ClientSecret)
	if _, err := c.Listings(tctx(t)); err != nil {
		t.Fatalf("demo credentials: %v", err)
	}
}

// TestRestartKeepsData stops the shared stack and starts a new one on the
// same data directory; the tests after it (in file order) use the new one.
func TestRestartKeepsData(t *testing.T) {
	orgID, creds := newOrg(t, "Survivor", 1)
	demo := *st.Demo
	dir := st.DataDir
	st.Stop()
	fmt.Fprintln(&stackOutput, "--- restart on the same data directory")
	next, err := startStack(dir, &stackOutput)
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, stackOutput.String())
	}
	st = next
	if a := admin(t, "GET", "/orgs/"+orgID, ""); a.status != 200 || obj(a.body["org"])["name"] != "Survivor" {
		t.Fatalf("org after restart: %d %s", a.status, a.raw)
	}
	c := apiClient(creds[0].id, creds[0].secret)
	if _, err := c.Listings(tctx(t)); err != nil {
		t.Fatalf("credential set after restart: %v", err)
	}
	if st.Demo == nil || st.Demo.ClientID != demo.ClientID {
		t.Fatalf("demo org seeded again: %+v, was %+v", st.Demo, demo)
	}
}
