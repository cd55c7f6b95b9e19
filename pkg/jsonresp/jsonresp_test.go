package jsonresp

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestWriteAndError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Write(rec, 201, map[string]any{"emails": []string{}})
	if rec.Code != 201 || rec.Body.String() != "{\"emails\":[]}\n" {
		t.Fatalf("Write: %d %q", rec.Code, rec.Body)
	}
	for k, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}

	rec = httptest.NewRecorder()
	Error(rec, 404, "not_found", `no "such" path`)
	var body struct{ Error, Message string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 404 || body.Error != "not_found" || body.Message != `no "such" path` {
		t.Fatalf("Error: %d %q %v", rec.Code, rec.Body, err)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatal("Error without no-store")
	}

	rec = httptest.NewRecorder()
	Write(rec, 200, map[string]any{"f": func() {}})
	if rec.Code != 500 || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error != "internal_error" {
		t.Fatalf("unencodable value: %d %q", rec.Code, rec.Body)
	}
}
