package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestBookingsStepsSeedEveryStatus(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		created   []map[string]any
		patched   []string
		inquiries []map[string]any
		orgMisses = 1
	)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		switch {
		case r.Method == "POST" && r.URL.Path == "/admin/v1/orgs/org_9/reservations":
			if orgMisses > 0 {
				orgMisses--
				w.WriteHeader(404)
				io.WriteString(w, `{"error":"not_found","message":"No organisation org_9."}`)
				return
			}
			created = append(created, body)
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"reservation":{"id":"res_%d"}}`, len(created))
		case r.Method == "PATCH" && strings.HasPrefix(r.URL.Path, "/admin/v1/orgs/org_9/reservations/"):
			patched = append(patched, strings.TrimPrefix(r.URL.Path, "/admin/v1/orgs/org_9/reservations/")+"="+fmt.Sprint(body["status"]))
			io.WriteString(w, `{"reservation":{}}`)
		case r.URL.Path == "/api/v1/oauth2/token" && strings.Contains(string(raw), "client_id=cid"):
			io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":86400}`)
		case r.URL.Path == "/api/v1/inquiries" && r.Header.Get("Authorization") == "Bearer tok":
			inquiries = append(inquiries, body)
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":"inq_%d"}`, len(inquiries))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(s.Close)
	c := &Client{AdminURL: s.URL + "/admin/v1", Token: "admin"}
	st := &State{OrgID: "org_9", ClientID: "cid", ClientSecret: "sec", Data: map[string]any{"listings": []string{"lst_a", "lst_b"}}}
	if err := createBookings(context.Background(), c, st); err != nil {
		t.Fatal(err)
	}
	statuses := map[string]int{}
	for _, b := range created {
		statuses[b["status"].(string)]++
		if b["checkIn"].(string) >= b["checkOut"].(string) {
			t.Errorf("stay %v", b)
		}
	}
	if len(created) != 8 || statuses["confirmed"] != 2 || statuses["reserved"] != 4 || statuses["inquiry"] != 2 {
		t.Fatalf("created %v", statuses)
	}
	if strings.Join(patched, " ") != "res_4=cancelled res_8=cancelled" {
		t.Fatalf("patched %v", patched)
	}
	if len(inquiries) != 3 || inquiries[0]["propertyId"] != "lst_a" {
		t.Fatalf("inquiries %v", inquiries)
	}
	if ids := stringsOf(st.Data["reservations"]); len(ids) != 8 {
		t.Fatalf("recorded %v", st.Data)
	}
	if ids := stringsOf(st.Data["inquiries"]); len(ids) != 3 {
		t.Fatalf("recorded %v", st.Data)
	}

	// Without listings there is nothing to book.
	empty := &State{OrgID: "org_9", Data: map[string]any{}}
	if err := createBookings(context.Background(), c, empty); err != nil || empty.Data["reservations"] != nil {
		t.Fatalf("no listings: %v %v", err, empty.Data)
	}
}
