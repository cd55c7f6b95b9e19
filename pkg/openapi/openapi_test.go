package openapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestDocumentsRender(t *testing.T) {
	for name, get := range map[string]func() (*Document, error){"public": Public, "admin": Admin} {
		d, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.HasPrefix(d.JSON, []byte(`{"openapi":"3.1.0","info":{`)) {
			t.Errorf("%s: JSON does not keep the source order: %.60s", name, d.JSON)
		}
		var doc map[string]any
		if err := json.Unmarshal(d.JSON, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every reference is local and resolves.
		for _, m := range regexp.MustCompile(`"\$ref":"([^"]*)"`).FindAllStringSubmatch(string(d.JSON), -1) {
			ref := m[1]
			if !strings.HasPrefix(ref, "#/") {
				t.Errorf("%s: reference %s is not local", name, ref)
				continue
			}
			var node any = doc
			for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				obj, _ := node.(map[string]any)
				node = obj[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
			}
			if node == nil {
				t.Errorf("%s: reference %s does not resolve", name, ref)
			}
		}
		if again, _ := get(); !bytes.Equal(again.JSON, d.JSON) || again.ETag != d.ETag {
			t.Errorf("%s: rendered twice differently", name)
		}
	}
	if bytes.Equal(MustPublic().JSON, MustAdmin().JSON) || MustPublic().ETag == MustAdmin().ETag {
		t.Fatal("the two documents are the same")
	}
}

func TestServeHTTP(t *testing.T) {
	d := MustPublic()
	w := httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), d.JSON) || w.Header().Get("ETag") != d.ETag ||
		w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %d %v", w.Code, w.Header())
	}
	if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(d.ETag) {
		t.Fatalf("ETag %s is not a strong tag", d.ETag)
	}
	for _, inm := range []string{d.ETag, `"x", ` + d.ETag, "W/" + d.ETag, "*"} {
		r := httptest.NewRequest("GET", "/api/v1/openapi.json", nil)
		r.Header.Set("If-None-Match", inm)
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != d.ETag || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("If-None-Match %s: %d %v", inm, w.Code, w.Header())
		}
	}
	r := httptest.NewRequest("GET", "/api/v1/openapi.json", nil)
	r.Header.Set("If-None-Match", `"stale"`)
	w = httptest.NewRecorder()
	d.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("stale tag: %d", w.Code)
	}
}

func TestAdminDocumentStandsAlone(t *testing.T) {
	d, err := Admin()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(d.JSON, []byte(`openapi.yaml#`)) {
		t.Fatal("admin JSON still refers to openapi.yaml")
	}
	if !bytes.Contains(d.JSON, []byte(`"ReservationFields":{`)) || !bytes.Contains(d.JSON, []byte(`"Agreement":{`)) {
		t.Fatal("admin JSON lacks the public schemas it uses")
	}
}

func TestInlineRejectsClashesAndUnknownComponents(t *testing.T) {
	pub := `components: {schemas: {A: {$ref: "#/components/schemas/B"}, B: {type: string}}}`
	for admin, want := range map[string]string{
		`components: {schemas: {X: {$ref: "openapi.yaml#/components/schemas/A"}}}`:                     "",
		`components: {schemas: {B: {type: integer}, X: {$ref: "openapi.yaml#/components/schemas/A"}}}`: "defined in both",
		`components: {schemas: {X: {$ref: "openapi.yaml#/components/schemas/Nope"}}}`:                  "no component",
		`components: {schemas: {X: {$ref: "other.yaml#/components/schemas/A"}}}`:                       "unsupported reference",
	} {
		var a, p yaml.Node
		if err := yaml.Unmarshal([]byte(admin), &a); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(pub), &p); err != nil {
			t.Fatal(err)
		}
		err := inline(&a, &p)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", admin, err)
				continue
			}
			d, _ := render(&a)
			if got := string(d.JSON); got != `{"components":{"schemas":{"X":{"$ref":"#/components/schemas/A"},"A":{"$ref":"#/components/schemas/B"},"B":{"type":"string"}}}}` {
				t.Errorf("inlined: %s", got)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", admin, err, want)
		}
	}
}
