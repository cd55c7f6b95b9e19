package demo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func adminAPI(t *testing.T, credentialsStatus int) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(401)
			return
		}
		switch r.URL.Path {
		case "/admin/v1/orgs":
			w.WriteHeader(201)
			io.WriteString(w, `{"org":{"id":"org_9","name":"Demo Rentals"}}`)
		case "/admin/v1/orgs/org_9/credentials":
			w.WriteHeader(credentialsStatus)
			io.WriteString(w, `{"credential":{"clientId":"cid","clientSecret":"sec","name":"demo"}}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestSeedSavesAndLoads(t *testing.T) {
	t.Parallel()
	api := adminAPI(t, 201)
	file := filepath.Join(t.TempDir(), "demo.json")
	extra := Step{Name: "record a listing", Run: func(_ context.Context, _ *Client, st *State) error {
		st.Data["listingId"] = "l_1"
		return nil
	}}
	st, err := Seed(context.Background(), &Client{AdminURL: api.URL + "/admin/v1", Token: "tok"}, append(BaseSteps(), extra), file)
	if err != nil {
		t.Fatal(err)
	}
	if st.OrgID != "org_9" || st.ClientID != "cid" || st.ClientSecret != "sec" {
		t.Fatalf("state %+v", st)
	}
	loaded, found, err := Load(file)
	if err != nil || !found || loaded.ClientSecret != "sec" || loaded.Data["listingId"] != "l_1" {
		t.Fatalf("Load = %+v, %v, %v", loaded, found, err)
	}
	var b strings.Builder
	loaded.Print(&b, "http://127.0.0.1:8080/api/v1")
	if !strings.Contains(b.String(), "curl -s -u cid:sec -d grant_type=client_credentials http://127.0.0.1:8080/api/v1/oauth2/token") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

func TestFailedSeedSavesNothing(t *testing.T) {
	t.Parallel()
	api := adminAPI(t, 500)
	file := filepath.Join(t.TempDir(), "demo.json")
	_, err := Seed(context.Background(), &Client{AdminURL: api.URL + "/admin/v1", Token: "tok"}, DefaultSteps(), file)
	if err == nil || !strings.Contains(err.Error(), "create demo credentials") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("demo.json written after a failed seed: %v", err)
	}
	if _, found, err := Load(file); found || err != nil {
		t.Fatalf("Load after failed seed: found %v, err %v", found, err)
	}
}
