package httpx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"quarters.dev/pkg/apperr"
)

func testEngine(t *testing.T) (*gin.Engine, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	e := New(Options{Registry: reg, MaxBodyBytes: 64, BodyLimits: map[string]int64{"PUT /big": 1024}})
	e.GET("/ok", func(c *gin.Context) { c.JSON(200, gin.H{"ok": true}) })
	e.GET("/items/:id", func(c *gin.Context) { Error(c, apperr.NotFoundf("No item %s.", c.Param("id"))) })
	e.GET("/panic", func(c *gin.Context) { panic("boom") })
	e.GET("/fail", func(c *gin.Context) { Error(c, errFixed("database password wrong")) })
	e.GET("/unauth", func(c *gin.Context) { Error(c, apperr.New(apperr.Unauthorized, "Token expired.")) })
	decode := func(c *gin.Context) {
		var v struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		}
		if err := DecodeJSON(c, &v); err != nil {
			Error(c, err)
			return
		}
		c.JSON(200, v)
	}
	e.POST("/echo", decode)
	e.PUT("/big", decode)
	return e, reg
}

type errFixed string

func (e errFixed) Error() string { return string(e) }

func do(e http.Handler, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

func errorBody(t *testing.T, w *httptest.ResponseRecorder) Body {
	t.Helper()
	var b Body
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("body %q is not the error JSON: %v", w.Body.String(), err)
	}
	return b
}

func TestEveryResponseIsNoStoreWithoutCORS(t *testing.T) {
	t.Parallel()
	e, _ := testEngine(t)
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/ok", 200, ""},
		{"GET", "/nowhere", 404, "not_found"},
		{"GET", "/ok/", 404, "not_found"},
		{"DELETE", "/ok", 404, "not_found"},
		{"OPTIONS", "/ok", 404, "not_found"},
		{"GET", "/items/42", 404, "not_found"},
		{"GET", "/panic", 500, "internal_error"},
		{"GET", "/fail", 500, "internal_error"},
		{"GET", "/unauth", 401, "unauthorized"},
	}
	for _, c := range cases {
		w := do(e, c.method, c.path, "", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET")
		if w.Code != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, w.Code, c.status)
		}
		if got := w.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q", c.method, c.path, got)
		}
		for k := range w.Header() {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s %s: CORS header %s", c.method, c.path, k)
			}
		}
		if w.Header().Get(RequestIDHeader) == "" {
			t.Errorf("%s %s: no request id", c.method, c.path)
		}
		if c.code != "" {
			if b := errorBody(t, w); b.Error != c.code || b.Message == "" {
				t.Errorf("%s %s: body %+v, want error %s", c.method, c.path, b, c.code)
			}
		}
	}
}

func TestServerFaultHidesItsCause(t *testing.T) {
	t.Parallel()
	e, _ := testEngine(t)
	w := do(e, "GET", "/fail", "")
	if strings.Contains(w.Body.String(), "password") {
		t.Fatalf("internal error leaked: %s", w.Body.String())
	}
	if w := do(e, "GET", "/unauth", ""); w.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: Bearer: %v", w.Header())
	}
}

func TestRequestIDIsPassedThroughOrMinted(t *testing.T) {
	t.Parallel()
	e, _ := testEngine(t)
	if w := do(e, "GET", "/ok", "", RequestIDHeader, "abc-123"); w.Header().Get(RequestIDHeader) != "abc-123" {
		t.Fatalf("request id not echoed: %q", w.Header().Get(RequestIDHeader))
	}
	if w := do(e, "GET", "/ok", "", RequestIDHeader, "bad id\x01"); w.Header().Get(RequestIDHeader) == "bad id\x01" {
		t.Fatal("malformed request id echoed")
	}
}

func TestDecodeJSONNamesTheField(t *testing.T) {
	t.Parallel()
	e, _ := testEngine(t)
	cases := []struct {
		body, ctype string
		status      int
		mention     string
	}{
		{`{"name":"a","count":2}`, "application/json", 200, ""},
		{`{"name":"a","count":"two"}`, "application/json", 400, "count"},
		{`{"name":5}`, "application/json", 400, "name"},
		{`{"name":`, "application/json", 400, "not valid JSON"},
		{``, "application/json", 400, "empty"},
		{`[1]`, "application/json", 400, "object"},
		{`{} {}`, "application/json", 400, "exactly one"},
		{`name=a`, "application/x-www-form-urlencoded", 400, "JSON"},
		{`{"name":"` + strings.Repeat("x", 100) + `"}`, "application/json", 413, "larger"},
	}
	for _, c := range cases {
		w := do(e, "POST", "/echo", c.body, "Content-Type", c.ctype)
		if w.Code != c.status {
			t.Errorf("%q: status %d, want %d (%s)", c.body, w.Code, c.status, w.Body.String())
			continue
		}
		if c.mention != "" && !strings.Contains(errorBody(t, w).Message, c.mention) {
			t.Errorf("%q: message %q does not mention %q", c.body, errorBody(t, w).Message, c.mention)
		}
	}
	// A route may raise the limit.
	if w := do(e, "PUT", "/big", `{"name":"`+strings.Repeat("x", 100)+`"}`, "Content-Type", "application/json"); w.Code != 200 {
		t.Fatalf("per-route limit: status %d %s", w.Code, w.Body.String())
	}
}

func TestOversizedDeclaredBodyIsRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	e, _ := testEngine(t)
	req := httptest.NewRequest("POST", "/echo", strings.NewReader(strings.Repeat("x", 1000)))
	req.ContentLength = 1000
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != 413 || errorBody(t, w).Error != "payload_too_large" {
		t.Fatalf("status %d body %s", w.Code, w.Body.String())
	}
}

func TestMetricsUseRouteTemplates(t *testing.T) {
	t.Parallel()
	e, reg := testEngine(t)
	do(e, "GET", "/items/1", "")
	do(e, "GET", "/items/2", "")
	do(e, "GET", "/zzz", "")
	want := `
# HELP quarters_http_requests_total HTTP requests served, by method, route template and status code.
# TYPE quarters_http_requests_total counter
quarters_http_requests_total{code="404",method="GET",route="/items/:id"} 2
quarters_http_requests_total{code="404",method="GET",route="unmatched"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "quarters_http_requests_total"); err != nil {
		t.Fatal(err)
	}
}

func TestAccessLogLinesAreJSON(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	e := New(Options{AccessLog: &out, Service: "svc"})
	e.GET("/items/:id", func(c *gin.Context) { SetOrg(c, "org-1"); c.String(200, "ok") })
	do(e, "GET", "/items/a%22b%0A", "", RequestIDHeader, "rid-1")
	do(e, "GET", "/nowhere", "")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), out.String())
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("line %q: %v", lines[0], err)
	}
	want := map[string]any{"level": "INFO", "msg": "request", "service": "svc", "method": "GET",
		"route": "/items/:id", "path": "/items/a\"b\n", "status": 200.0, "bytes": 2.0,
		"request_id": "rid-1", "org_id": "org-1"}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if ts, _ := first["time"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("time %q", first["time"])
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil || second["route"] != "unmatched" || second["status"] != 404.0 {
		t.Fatalf("second line %q: %v", lines[1], err)
	}
}

func TestMetricsDoNotGrowWithMadeUpMethods(t *testing.T) {
	t.Parallel()
	e, reg := testEngine(t)
	do(e, "FROB", "/ok", "")
	do(e, "BLORT", "/ok", "")
	want := `
# HELP quarters_http_requests_total HTTP requests served, by method, route template and status code.
# TYPE quarters_http_requests_total counter
quarters_http_requests_total{code="404",method="OTHER",route="unmatched"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "quarters_http_requests_total"); err != nil {
		t.Fatal(err)
	}
}

func TestIncomingTraceIsCarriedIntoTheAccessLog(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	e := New(Options{AccessLog: &out})
	e.GET("/ok", func(c *gin.Context) { c.Status(204) })
	do(e, "GET", "/ok", "", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !strings.Contains(out.String(), `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) {
		t.Fatalf("access log without the incoming trace id: %s", out.String())
	}
}

// OrgFirst answers for an unknown org before the handler reads the body.
func TestOrgFirst(t *testing.T) {
	e := New(Options{})
	known := func(_ context.Context, orgID string) error {
		if orgID != "org_1" {
			return apperr.NotFoundf("No organisation %s.", orgID)
		}
		return nil
	}
	e.POST("/orgs/:orgId/things", OrgFirst(known), func(c *gin.Context) {
		Error(c, apperr.Invalid("Field name is required."))
	})
	for _, tc := range []struct {
		org    string
		status int
		error  string
	}{{"org_1", 400, "invalid_request"}, {"org_2", 404, "not_found"}} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest("POST", "/orgs/"+tc.org+"/things", strings.NewReader(`{}`)))
		var body Body
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tc.status || body.Error != tc.error {
			t.Errorf("%s: %d %s, want %d %s", tc.org, w.Code, w.Body, tc.status, tc.error)
		}
	}
}
