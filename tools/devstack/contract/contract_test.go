package contract

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"quarters.dev/pkg/openapi"
)

// TestDocumentsAreValidOpenAPI31 lints both documents with libopenapi: they
// parse, build a model without errors and validate against the OpenAPI 3.1
// schema; the public one has the promised version and security scheme.
func TestDocumentsAreValidOpenAPI31(t *testing.T) {
	for name, get := range map[string]func() (*openapi.Document, error){"public": openapi.Public, "admin": openapi.Admin} {
		doc, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, err := libopenapi.NewDocument(doc.JSON)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v := d.GetVersion(); v != "3.1.0" {
			t.Errorf("%s: openapi %q, want 3.1.0", name, v)
		}
		m, err := d.BuildV3Model()
		if err != nil {
			t.Fatalf("%s: build model: %v", name, err)
		}
		if m.Model.Info.Version != "1.0.0" {
			t.Errorf("%s: info.version %q, want 1.0.0", name, m.Model.Info.Version)
		}
		v, errs := validator.NewValidator(d)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			for _, e := range verrs {
				t.Errorf("%s: %s", name, describe(e))
			}
		}
		if name != "public" {
			continue
		}
		schemes := m.Model.Components.SecuritySchemes
		if schemes.Len() != 1 {
			t.Fatalf("public: %d security schemes, want one", schemes.Len())
		}
		for _, s := range schemes.FromOldest() {
			if s.Type != "oauth2" || s.Flows == nil || s.Flows.ClientCredentials == nil || s.Flows.ClientCredentials.TokenUrl != "oauth2/token" ||
				s.Flows.Implicit != nil || s.Flows.Password != nil || s.Flows.AuthorizationCode != nil {
				t.Errorf("public: security scheme %+v, want one OAuth 2.0 client-credentials flow at {base_url}/oauth2/token", s)
			}
		}
		if m.Model.Webhooks.Len() != 8 {
			t.Errorf("public: %d webhooks, want 8", m.Model.Webhooks.Len())
		}
	}
}

// collect is a Reporter that keeps what it is told.
type collect struct {
	mu   sync.Mutex
	msgs []string
}

func (c *collect) Helper() {}
func (c *collect) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, fmt.Sprintf(format, args...))
}

const listing = `{"id":"l1","slug":"s","nickname":"n","active":true,"isListed":true,"propertyType":"Apartment","roomType":"Entire home/apt",
"address":{"street":null,"postalCode":null,"city":"Berlin","country":"DE","area":null,"latitude":null,"longitude":null},
"accommodates":2,"rooms":[{"kind":"bedroom","name":"","beds":[{"type":"double","count":1}]}],"bedrooms":1,"beds":1,"bathrooms":0.5,
"squareMeter":null,"timezone":"Europe/Berlin",
"pricing":{"currency":"EUR","monthlyRateCents":150000,"depositCents":null,"utilitiesCents":null,"furnitureCents":null},
"terms":{"minNights":null,"maxNights":null},"amenities":["wifi"],
"description":{"title":"t","summary":null,"space":null,"neighborhood":null,"access":null,"notes":null},
"translations":{"de":{"title":"T"}},"images":[],"publishedAt":"2026-09-01T10:00:00Z"}`

// serve answers every request with the status and body given for its path.
func serve(t *testing.T, answers map[string]struct {
	status int
	body   string
}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			a.status, a.body = 404, `{"error":"not_found","message":"No such path."}`
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestValidatorFails feeds the validator a response with an undeclared
// field, one with a wrong type and one with an undeclared status: three
// failures. A correct response and the standard 404 pass.
func TestValidatorFails(t *testing.T) {
	srv := serve(t, map[string]struct {
		status int
		body   string
	}{
		"/api/v1/listings/good":             {200, `{"listing":` + listing + `}`},
		"/api/v1/listings/extra-field":      {200, `{"listing":` + strings.Replace(listing, `"slug":"s",`, `"slug":"s","internalNote":"x",`, 1) + `}`},
		"/api/v1/listings/wrong-type":       {200, `{"listing":` + strings.Replace(listing, `"accommodates":2`, `"accommodates":"2"`, 1) + `}`},
		"/api/v1/listings/undeclared":       {418, `{"error":"teapot","message":"I am a teapot."}`},
		"/api/v1/listings/not-declared/x/y": {404, `{"error":"not_found","message":"No such path."}`},
	})
	var rep collect
	client := &http.Client{Transport: &Transport{Reporter: &rep}}
	failures := map[string]int{}
	for _, p := range []string{"good", "extra-field", "wrong-type", "undeclared", "not-declared/x/y"} {
		before := len(rep.msgs)
		resp, err := client.Get(srv.URL + "/api/v1/listings/" + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		failures[p] = len(rep.msgs) - before
	}
	if failures["good"] != 0 || failures["not-declared/x/y"] != 0 {
		t.Errorf("valid answers reported: %q", rep.msgs)
	}
	for _, p := range []string{"extra-field", "wrong-type", "undeclared"} {
		if failures[p] != 1 {
			t.Errorf("%s: %d failures, want 1", p, failures[p])
		}
	}
	t.Logf("failures:\n%s", strings.Join(rep.msgs, "\n"))
	if len(rep.msgs) != 3 {
		t.Fatalf("%d failures, want 3: %q", len(rep.msgs), rep.msgs)
	}
	for i, want := range []string{"internalNote", "accommodates", "418"} {
		if !strings.Contains(rep.msgs[i], want) {
			t.Errorf("failure %d does not name %s: %s", i, want, rep.msgs[i])
		}
	}
}

// TestValidatorChecksRequestsAndDetails covers the other checks: a missing
// required field, a missing required header, an accepted request the
// document forbids, a body where none is declared, an undeclared path that
// does not answer 404, and the admin document.
func TestValidatorChecksRequestsAndDetails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/listings":
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"listings":[` + strings.Replace(listing, `"slug":"s",`, ``, 1) + `]}`))
		case "/api/v1/listings/x":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"listing":` + listing + `}`))
		case "/api/v1/reservations":
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"reservations":[],"total":0,"limit":500,"skip":0}`))
		case "/admin/v1/orgs/o1":
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"org":{"id":"o1","name":"n","contractProvider":"external","inquiryDailyLimit":5,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}}`))
		default:
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(200)
		}
	}))
	defer srv.Close()
	cases := []struct {
		method, path, want string
	}{
		{"GET", "/api/v1/listings", "slug"},                          // missing required field
		{"GET", "/api/v1/listings/x", "Cache-Control"},               // missing required header
		{"GET", "/api/v1/reservations?limit=500", "limit"},           // accepted a forbidden request, and the answer is out of bounds
		{"DELETE", "/admin/v1/orgs/o1/webhooks/w1", "declares none"}, // body where none is declared
		{"GET", "/api/v1/nowhere", "instead of 404"},                 // undeclared path
		{"GET", "/admin/v1/orgs/o1", ""},                             // valid
		{"GET", "/readyz", ""},                                       // outside both APIs
	}
	for _, tc := range cases {
		var rep collect
		client := &http.Client{Transport: &Transport{Base: bodyOn204{}, Reporter: &rep}}
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		all := strings.Join(rep.msgs, "\n")
		if tc.want == "" && len(rep.msgs) > 0 {
			t.Errorf("%s %s: unexpected failures:\n%s", tc.method, tc.path, all)
		}
		if tc.want != "" && !strings.Contains(all, tc.want) {
			t.Errorf("%s %s: failures do not mention %q:\n%s", tc.method, tc.path, tc.want, all)
		}
	}
}

// TestDocumentsServeTheirJSON checks the rendered documents: valid JSON with
// the source's content, a strong entity tag, 304 on a matching If-None-Match.
func TestDocumentsServeTheirJSON(t *testing.T) {
	doc, err := openapi.Public()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(doc.JSON, &m); err != nil || m["openapi"] != "3.1.0" {
		t.Fatalf("public JSON: %v %v", err, m["openapi"])
	}
	if strings.HasPrefix(doc.ETag, "W/") || !strings.HasPrefix(doc.ETag, `"`) {
		t.Fatalf("ETag %s is not strong", doc.ETag)
	}
	w := httptest.NewRecorder()
	doc.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if w.Code != 200 || w.Body.String() != string(doc.JSON) || w.Header().Get("ETag") != doc.ETag || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("GET: %d %v", w.Code, w.Header())
	}
	r := httptest.NewRequest("GET", "/api/v1/openapi.json", nil)
	r.Header.Set("If-None-Match", `"other", `+doc.ETag)
	w = httptest.NewRecorder()
	doc.ServeHTTP(w, r)
	if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != doc.ETag {
		t.Fatalf("revalidation: %d %v", w.Code, w.Header())
	}
}

// bodyOn204 sends requests with http.DefaultTransport, except a DELETE,
// which it answers itself with 204 and a body: a Go server cannot send
// that, a broken one can.
type bodyOn204 struct{}

func (bodyOn204) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodDelete {
		return http.DefaultTransport.RoundTrip(r)
	}
	h := http.Header{"Cache-Control": {"no-store"}, "Content-Type": {"application/json"}}
	return &http.Response{StatusCode: 204, Status: "204 No Content", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(`{"deleted":true}`)), ContentLength: 16, Request: r}, nil
}
