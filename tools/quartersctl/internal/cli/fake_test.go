package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI is an in-memory stand-in for /admin/v1 and /api/v1 that answers
// with the shapes of the OpenAPI documents and records every request.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	seq      int
	now      time.Time
	requests []string
	orgs     map[string]map[string]any
	props    map[string]map[string]any
	res      []map[string]any
	creds    []map[string]any
}

const (
	fakeAdminToken = "test-admin-token"
	fakeClientID   = "cl_test"
	fakeSecret     = "secret_test"
)

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, now: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		orgs: map[string]map[string]any{}, props: map[string]map[string]any{}}
	f.orgs["org_1"] = map[string]any{"id": "org_1", "name": "Acme Rentals", "contractProvider": "quarters", "inquiryDailyLimit": 500, "createdAt": f.stamp(), "updatedAt": f.stamp()}
	f.props["prop_1"] = map[string]any{"id": "prop_1", "draft": map[string]any{"nickname": "Loft Mitte"}, "publishedAt": f.stamp(), "published": true, "createdAt": f.stamp(), "updatedAt": f.stamp()}
	for i, r := range []struct{ id, status, in, out, first, last string }{
		{"res_1", "confirmed", "2027-01-01", "2027-04-01", "Ada", "Lovelace"},
		{"res_2", "inquiry", "2027-02-01", "2027-03-01", "Alan", "Turing"},
		{"res_3", "reserved", "2027-05-01", "2027-08-01", "Grace", "Hopper"},
	} {
		at := f.now.Add(time.Duration(i) * time.Minute).Format(time.RFC3339Nano)
		f.res = append(f.res, f.reservation(r.id, r.status, "prop_1", r.in, r.out, map[string]any{"firstName": r.first, "lastName": r.last}, at))
	}
	f.now = f.now.Add(10 * time.Minute) // changes made by the tests come after the seeded ones
	mux := http.NewServeMux()
	f.routes(mux)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := r.Method + " " + r.URL.RequestURI()
		if len(body) > 0 {
			line += " " + string(body)
		}
		f.mu.Lock()
		f.requests = append(f.requests, line)
		f.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if strings.HasPrefix(r.URL.Path, "/admin/v1/") && r.Header.Get("Authorization") != "Bearer "+fakeAdminToken {
			writeJSON(w, 401, map[string]any{"error": "unauthorized", "message": "missing or wrong admin token"})
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/v1/") && r.URL.Path != "/api/v1/oauth2/token" && r.Header.Get("Authorization") != "Bearer tok_1" {
			writeJSON(w, 401, map[string]any{"error": "unauthorized", "message": "invalid token"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) stamp() string { return f.now.Format(time.RFC3339Nano) }

// tick advances the fake clock by a second and returns it.
func (f *fakeAPI) tick() string {
	f.now = f.now.Add(time.Second)
	return f.stamp()
}

func (f *fakeAPI) id(prefix string) string {
	f.seq++
	return prefix + "_" + strconv.Itoa(100+f.seq)
}

func (f *fakeAPI) reservation(id, status, prop, in, out string, guest map[string]any, at string) map[string]any {
	first, _ := guest["firstName"].(string)
	last, _ := guest["lastName"].(string)
	ci, _ := time.Parse(time.DateOnly, in)
	co, _ := time.Parse(time.DateOnly, out)
	return map[string]any{"id": id, "status": status, "propertyId": prop, "checkIn": in, "checkOut": out,
		"nights": int(co.Sub(ci).Hours() / 24), "guest": map[string]any{"id": "g_" + id, "firstName": first, "lastName": last, "name": strings.TrimSpace(first + " " + last)},
		"createdAt": at, "updatedAt": at}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, 404, map[string]any{"error": "not_found", "message": "not found"})
}

func decode(r *http.Request) map[string]any {
	var m map[string]any
	_ = json.NewDecoder(r.Body).Decode(&m)
	return m
}

func (f *fakeAPI) routes(mux *http.ServeMux) {
	org := func(h func(w http.ResponseWriter, r *http.Request, o map[string]any)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("org") == "boom" {
				writeJSON(w, 500, map[string]any{"error": "internal_error", "message": "something broke"})
				return
			}
			o, ok := f.orgs[r.PathValue("org")]
			if !ok {
				notFound(w)
				return
			}
			h(w, r, o)
		}
	}
	mux.HandleFunc("POST /admin/v1/orgs", func(w http.ResponseWriter, r *http.Request) {
		b := decode(r)
		if s, _ := b["name"].(string); s == "" {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "name: required"})
			return
		}
		id := f.id("org")
		o := map[string]any{"id": id, "name": b["name"], "contractProvider": "quarters", "inquiryDailyLimit": 500, "createdAt": f.stamp(), "updatedAt": f.stamp()}
		for k, v := range b {
			o[k] = v
		}
		f.orgs[id] = o
		writeJSON(w, 201, map[string]any{"org": o})
	})
	mux.HandleFunc("GET /admin/v1/orgs/{org}", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		writeJSON(w, 200, map[string]any{"org": o})
	}))
	mux.HandleFunc("PATCH /admin/v1/orgs/{org}", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		for k, v := range decode(r) {
			o[k] = v
		}
		o["updatedAt"] = f.tick()
		writeJSON(w, 200, map[string]any{"org": o})
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/credentials", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		b := decode(r)
		c := map[string]any{"clientId": f.id("cl"), "name": b["name"], "createdAt": f.stamp(), "revokedAt": nil}
		f.creds = append(f.creds, c)
		out := map[string]any{"clientSecret": "s3cret"}
		for k, v := range c {
			if k != "revokedAt" {
				out[k] = v
			}
		}
		writeJSON(w, 201, map[string]any{"credential": out})
	}))
	mux.HandleFunc("GET /admin/v1/orgs/{org}/credentials", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		writeJSON(w, 200, map[string]any{"credentials": f.creds})
	}))
	mux.HandleFunc("DELETE /admin/v1/orgs/{org}/credentials/{id}", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		for _, c := range f.creds {
			if c["clientId"] == r.PathValue("id") {
				c["revokedAt"] = f.tick()
				w.WriteHeader(204)
				return
			}
		}
		notFound(w)
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/properties", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		b := decode(r)
		if s, _ := b["nickname"].(string); s == "" {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "nickname: required"})
			return
		}
		p := map[string]any{"id": f.id("prop"), "draft": b, "publishedAt": nil, "published": false, "createdAt": f.stamp(), "updatedAt": f.stamp()}
		f.props[p["id"].(string)] = p
		writeJSON(w, 201, map[string]any{"property": p})
	}))
	prop := func(h func(w http.ResponseWriter, r *http.Request, p map[string]any)) http.HandlerFunc {
		return org(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
			p, ok := f.props[r.PathValue("prop")]
			if !ok {
				notFound(w)
				return
			}
			h(w, r, p)
		})
	}
	mux.HandleFunc("GET /admin/v1/orgs/{org}/properties/{prop}", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		writeJSON(w, 200, map[string]any{"property": p})
	}))
	mux.HandleFunc("PUT /admin/v1/orgs/{org}/properties/{prop}", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		p["draft"], p["updatedAt"] = decode(r), f.tick()
		writeJSON(w, 200, map[string]any{"property": p})
	}))
	mux.HandleFunc("DELETE /admin/v1/orgs/{org}/properties/{prop}", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		delete(f.props, r.PathValue("prop"))
		w.WriteHeader(204)
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/properties/{prop}/publish", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		p["published"], p["publishedAt"] = true, f.tick()
		d := p["draft"].(map[string]any)
		writeJSON(w, 200, map[string]any{"listing": map[string]any{"id": p["id"], "nickname": d["nickname"], "slug": d["slug"], "publishedAt": p["publishedAt"]}})
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/properties/{prop}/unpublish", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		p["published"] = false
		w.WriteHeader(204)
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/properties/{prop}/blocks", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		b := decode(r)
		writeJSON(w, 201, map[string]any{"block": map[string]any{"id": f.id("blk"), "propertyId": p["id"], "start": b["start"], "end": b["end"], "reason": b["reason"], "createdAt": f.stamp()}})
	}))
	mux.HandleFunc("GET /admin/v1/orgs/{org}/properties/{prop}/blocks", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		writeJSON(w, 200, map[string]any{"blocks": []any{
			map[string]any{"id": "blk_1", "propertyId": p["id"], "start": "2027-03-01", "end": "2027-03-15", "reason": "renovation", "createdAt": f.stamp()},
			map[string]any{"id": "blk_2", "propertyId": p["id"], "start": "2027-06-01", "end": "2027-06-02", "reason": nil, "createdAt": f.stamp()},
		}})
	}))
	mux.HandleFunc("DELETE /admin/v1/orgs/{org}/properties/{prop}/blocks/{blk}", prop(func(w http.ResponseWriter, r *http.Request, p map[string]any) {
		w.WriteHeader(204)
	}))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/reservations", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		b := decode(r)
		if _, ok := f.props[fmt.Sprint(b["propertyId"])]; !ok {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "propertyId: unknown property"})
			return
		}
		g, _ := b["guest"].(map[string]any)
		status, _ := b["status"].(string)
		if status == "" {
			status = "inquiry"
		}
		res := f.reservation(f.id("res"), status, b["propertyId"].(string), fmt.Sprint(b["checkIn"]), fmt.Sprint(b["checkOut"]), g, f.tick())
		f.res = append(f.res, res)
		writeJSON(w, 201, map[string]any{"reservation": res})
	}))
	resv := func(h func(w http.ResponseWriter, r *http.Request, i int)) http.HandlerFunc {
		return org(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
			for i, x := range f.res {
				if x["id"] == r.PathValue("id") {
					h(w, r, i)
					return
				}
			}
			notFound(w)
		})
	}
	mux.HandleFunc("PATCH /admin/v1/orgs/{org}/reservations/{id}", resv(func(w http.ResponseWriter, r *http.Request, i int) {
		for k, v := range decode(r) {
			f.res[i][k] = v
		}
		f.res[i]["updatedAt"] = f.tick()
		writeJSON(w, 200, map[string]any{"reservation": f.res[i]})
	}))
	mux.HandleFunc("DELETE /admin/v1/orgs/{org}/reservations/{id}", resv(func(w http.ResponseWriter, r *http.Request, i int) {
		f.res = append(f.res[:i], f.res[i+1:]...)
		w.WriteHeader(204)
	}))
	hook := map[string]any{"id": "wh_1", "url": "https://example.com/hook", "secret": "whsec_1", "createdAt": "2026-11-20T10:00:00Z"}
	mux.HandleFunc("POST /admin/v1/orgs/{org}/webhooks", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		b := decode(r)
		writeJSON(w, 201, map[string]any{"webhook": map[string]any{"id": f.id("wh"), "url": b["url"], "secret": "whsec_new", "createdAt": f.stamp()}})
	}))
	mux.HandleFunc("GET /admin/v1/orgs/{org}/webhooks", org(func(w http.ResponseWriter, r *http.Request, o map[string]any) {
		writeJSON(w, 200, map[string]any{"webhooks": []any{hook}})
	}))
	withHook := func(h http.HandlerFunc) http.HandlerFunc {
		return org(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
			if r.PathValue("wh") != "wh_1" {
				notFound(w)
				return
			}
			h(w, r)
		})
	}
	mux.HandleFunc("DELETE /admin/v1/orgs/{org}/webhooks/{wh}", withHook(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/webhooks/{wh}/ping", withHook(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(202) }))
	mux.HandleFunc("POST /admin/v1/orgs/{org}/webhooks/{wh}/deliveries/{d}/redeliver", withHook(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(202) }))
	mux.HandleFunc("GET /admin/v1/orgs/{org}/webhooks/{wh}/deliveries", withHook(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"deliveries": []any{
			map[string]any{"id": "dlv_2", "event": "ping", "createdAt": "2026-11-20T10:05:00Z", "attemptedAt": "2026-11-20T10:05:00Z", "durationMs": 12, "statusCode": 200, "outcome": "delivered", "error": nil, "reason": nil, "redelivery": true},
			map[string]any{"id": "dlv_1", "event": "reservation.created", "createdAt": "2026-11-20T10:00:00Z", "attemptedAt": "2026-11-20T10:00:01Z", "durationMs": 10000, "statusCode": nil, "outcome": "failed", "error": "timeout after 10s", "reason": "timeout", "redelivery": false},
		}})
	}))

	mux.HandleFunc("POST /api/v1/oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		known := r.PostForm.Get("client_id") == fakeClientID && r.PostForm.Get("client_secret") == fakeSecret
		for _, c := range f.creds {
			known = known || (c["clientId"] == r.PostForm.Get("client_id") && c["revokedAt"] == nil && r.PostForm.Get("client_secret") == "s3cret")
		}
		if !known {
			writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "unknown client"})
			return
		}
		writeJSON(w, 200, map[string]any{"token_type": "Bearer", "access_token": "tok_1", "expires_in": 86400})
	})
	listing := func(id, nick, slug string) map[string]any {
		return map[string]any{"id": id, "nickname": nick, "slug": slug, "timezone": "Europe/Berlin", "publishedAt": "2026-11-20T09:00:00Z",
			"address": map[string]any{"city": "Berlin", "country": "DE"}, "accommodates": 2}
	}
	mux.HandleFunc("GET /api/v1/listings", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"listings": []any{listing("prop_1", "Loft Mitte", "loft-mitte"), listing("prop_2", "Studio Kreuzberg", "studio-kreuzberg")}})
	})
	mux.HandleFunc("GET /api/v1/listings/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "prop_1" {
			notFound(w)
			return
		}
		writeJSON(w, 200, map[string]any{"listing": listing("prop_1", "Loft Mitte", "loft-mitte")})
	})
	mux.HandleFunc("GET /api/v1/listings/{id}/calendar", func(w http.ResponseWriter, r *http.Request) {
		start, _ := time.Parse(time.DateOnly, r.URL.Query().Get("start"))
		end, _ := time.Parse(time.DateOnly, r.URL.Query().Get("end"))
		var days []any
		for d := start; !d.After(end); d = d.AddDate(0, 0, 1) {
			status := "available"
			if d.Day() >= 2 && d.Day() < 4 {
				status = "blocked"
			}
			days = append(days, map[string]any{"date": d.Format(time.DateOnly), "status": status, "minNights": 30, "isBaseMinNights": d.Day() == 1})
		}
		writeJSON(w, 200, map[string]any{"days": days})
	})
	mux.HandleFunc("GET /api/v1/reservations", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var rows []map[string]any
		for _, x := range f.res {
			if s := q.Get("status"); s != "" && !strings.Contains(","+s+",", ","+x["status"].(string)+",") {
				continue
			}
			if p := q.Get("propertyId"); p != "" && x["propertyId"] != p {
				continue
			}
			in := x["checkIn"].(string)
			if v := q.Get("checkInFrom"); v != "" && in < v {
				continue
			}
			if v := q.Get("checkInTo"); v != "" && in > v {
				continue
			}
			if v := q.Get("updatedSince"); v != "" {
				since, _ := time.Parse(time.RFC3339Nano, v)
				at, _ := time.Parse(time.RFC3339Nano, x["updatedAt"].(string))
				if at.Before(since) {
					continue
				}
			}
			rows = append(rows, x)
		}
		key := q.Get("sort")
		if key == "" {
			key = "checkIn"
		}
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := rows[i][key].(string)+rows[i]["id"].(string), rows[j][key].(string)+rows[j]["id"].(string)
			if q.Get("order") == "desc" {
				return a > b
			}
			return a < b
		})
		limit, skip := 25, 0
		if v := q.Get("limit"); v != "" {
			limit, _ = strconv.Atoi(v)
		}
		if v := q.Get("skip"); v != "" {
			skip, _ = strconv.Atoi(v)
		}
		page := []map[string]any{}
		for i := skip; i < len(rows) && i < skip+limit; i++ {
			page = append(page, rows[i])
		}
		writeJSON(w, 200, map[string]any{"reservations": page, "total": len(rows), "limit": limit, "skip": skip})
	})
	mux.HandleFunc("GET /api/v1/reservations/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, x := range f.res {
			if x["id"] == r.PathValue("id") {
				writeJSON(w, 200, map[string]any{"reservation": x})
				return
			}
		}
		notFound(w)
	})
	mux.HandleFunc("POST /api/v1/inquiries", func(w http.ResponseWriter, r *http.Request) {
		b := decode(r)
		if s, _ := b["email"].(string); s == "" {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "email: required"})
			return
		}
		writeJSON(w, 201, map[string]any{"id": f.id("inq")})
	})
}
