package e2e

import (
	"strings"
	"testing"

	"quarters.dev/pkg/openapi"
)

// TestOpenAPIDocumentsAreServed fetches both documents through the ingress:
// the public one without credentials, the admin one with the admin token,
// each byte-identical to the repository's file rendered as JSON, with a strong
// ETag that revalidates to 304.
func TestOpenAPIDocumentsAreServed(t *testing.T) {
	docs := []struct {
		name, url string
		doc       *openapi.Document
		auth      []string
	}{
		{"public", st.BaseURL + "/openapi.json", openapi.MustPublic(), nil},
		{"admin", st.AdminURL + "/openapi.json", openapi.MustAdmin(), []string{"Authorization", "Bearer " + st.AdminToken}},
	}
	for _, d := range docs {
		a := call(t, "GET", d.url, "", "", d.auth...)
		if a.status != 200 || a.raw != string(d.doc.JSON) {
			t.Fatalf("%s: %d, %d bytes, want the %d bytes of the document", d.name, a.status, len(a.raw), len(d.doc.JSON))
		}
		etag := a.header.Get("ETag")
		if etag != d.doc.ETag || strings.HasPrefix(etag, "W/") || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
			t.Fatalf("%s: ETag %q Content-Type %q", d.name, etag, a.header.Get("Content-Type"))
		}
		r := call(t, "GET", d.url, "", "", append([]string{"If-None-Match", etag}, d.auth...)...)
		if r.status != 304 || r.raw != "" || r.header.Get("ETag") != etag {
			t.Fatalf("%s revalidation: %d %q %v", d.name, r.status, r.raw, r.header)
		}
		if r := call(t, "GET", d.url, "", "", append([]string{"If-None-Match", `"stale"`}, d.auth...)...); r.status != 200 {
			t.Fatalf("%s with a stale tag: %d", d.name, r.status)
		}
	}
	if a := call(t, "GET", st.AdminURL+"/openapi.json", "", ""); a.status != 401 || a.body["error"] != "unauthorized" {
		t.Fatalf("admin document without the token: %d %s", a.status, a.raw)
	}
}
