package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI is an in-memory stand-in for the API: enough of the token
// exchange, reservations and agreement documents to exercise the client.
type fakeAPI struct {
	*httptest.Server

	mu       sync.Mutex
	tokens   map[string]bool // valid access tokens
	minted   int
	clock    time.Time
	rows     map[string]fakeRow
	nextID   int
	reads    int          // GET /reservations served
	onRead   func(n int)  // runs before answering the n-th GET /reservations (mu not held)
	document []byte       // archived PDF
	uploads  []fakeUpload // what each upload looked like
}

type fakeRow struct {
	ID        string
	Status    string
	UpdatedAt time.Time
}

type fakeUpload struct {
	contentLength int64
	chunked       bool
	bytes         int64
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := startFakeAPI()
	t.Cleanup(f.Close)
	return f
}

// startFakeAPI starts a fakeAPI; the caller closes it.
func startFakeAPI() *fakeAPI {
	f := &fakeAPI{tokens: map[string]bool{}, rows: map[string]fakeRow{}, clock: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/oauth2/token", f.token)
	mux.HandleFunc("GET /api/v1/reservations", f.auth(f.list))
	mux.HandleFunc("PUT /api/v1/reservations/{id}/agreement/document", f.auth(f.upload))
	mux.HandleFunc("GET /api/v1/reservations/{id}/agreement/document", f.auth(f.download))
	mux.HandleFunc("GET /api/v1/listings", f.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"listings": []any{fakeListing}})
	}))
	mux.HandleFunc("GET /api/v1/listings/{id}", f.auth(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != fakeListing["id"] {
			writeJSON(w, 404, map[string]any{"error": "not_found", "message": "No published listing has this id."})
			return
		}
		writeJSON(w, 200, map[string]any{"listing": fakeListing})
	}))
	f.Server = httptest.NewServer(mux)
	return f
}

var fakeListing = map[string]any{
	"id": "lst_1", "slug": "loft-alfama", "nickname": "Loft Alfama", "active": true, "isListed": true,
	"propertyType": "Apartment", "roomType": "Entire home/apt", "timezone": "Europe/Lisbon",
	"address":      map[string]any{"street": nil, "postalCode": "1100-001", "city": "Lisbon", "country": "PT", "area": "Alfama", "latitude": nil, "longitude": nil},
	"accommodates": 2, "bedrooms": 1, "beds": 1, "bathrooms": 1.5, "squareMeter": 48,
	"rooms": []any{
		map[string]any{"kind": "bedroom", "name": "", "beds": []any{map[string]any{"type": "double", "count": 1}}},
		map[string]any{"kind": "full_bathroom", "name": "", "beds": []any{}},
		map[string]any{"kind": "half_bathroom", "name": "", "beds": []any{}},
	},
	"pricing":      map[string]any{"currency": "EUR", "monthlyRateCents": 150000, "depositCents": 300000, "utilitiesCents": nil, "furnitureCents": 0, "rateBasis": "monthly"},
	"terms":        map[string]any{"minNights": 30, "maxNights": nil},
	"amenities":    []any{"wifi", "washer"},
	"description":  map[string]any{"title": "Bright loft", "summary": "<p>Quiet street.</p>", "space": nil, "neighborhood": nil, "access": nil, "notes": nil},
	"translations": map[string]any{"pt": map[string]any{"title": "Loft luminoso"}},
	"images":       []any{},
	"publishedAt":  "2026-04-30T09:00:00.000Z",
	"newField":     "clients ignore fields they do not know",
}

func (f *fakeAPI) URL() string { return f.Server.URL + "/api/v1" }

func (f *fakeAPI) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != "qc_demo" || secret != "s3cret" {
		writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "Unknown client or wrong secret."})
		return
	}
	f.mu.Lock()
	f.minted++
	tok := fmt.Sprintf("tok-%d", f.minted)
	f.tokens[tok] = true
	f.mu.Unlock()
	writeJSON(w, 200, map[string]any{"token_type": "Bearer", "access_token": tok, "expires_in": 86400})
}

func (f *fakeAPI) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		ok := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		f.mu.Unlock()
		if id, secret, basic := r.BasicAuth(); basic {
			ok = id == "qc_demo" && secret == "s3cret"
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, 401, map[string]any{"error": "unauthorized", "message": "The access token is invalid or expired."})
			return
		}
		h(w, r)
	}
}

// revokeAll invalidates every token issued so far.
func (f *fakeAPI) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.tokens)
}

func (f *fakeAPI) mintedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.minted
}

// tick advances the fake clock by one millisecond and returns it.
func (f *fakeAPI) tick() time.Time {
	f.clock = f.clock.Add(time.Millisecond)
	return f.clock
}

// add creates n reservations, all stamped at one instant when sameInstant.
func (f *fakeAPI) add(n int, sameInstant bool) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	at := f.tick()
	for range n {
		if !sameInstant {
			at = f.tick()
		}
		f.nextID++
		id := fmt.Sprintf("res_%04d", f.nextID)
		f.rows[id] = fakeRow{ID: id, Status: "inquiry", UpdatedAt: at}
		ids = append(ids, id)
	}
	return ids
}

// change stamps the reservation with a new updatedAt and returns it.
func (f *fakeAPI) change(id string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rows[id]
	r.UpdatedAt = f.tick()
	r.Status = "reserved"
	f.rows[id] = r
	return r.UpdatedAt
}

func (f *fakeAPI) snapshot() map[string]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]time.Time{}
	for id, r := range f.rows {
		out[id] = r.UpdatedAt
	}
	return out
}

func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reads++
	n, hook := f.reads, f.onRead
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	q := r.URL.Query()
	limit, skip := 25, 0
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if v := q.Get("skip"); v != "" {
		skip, _ = strconv.Atoi(v)
	}
	var since time.Time
	if v := q.Get("updatedSince"); v != "" {
		var err error
		if since, err = time.Parse(time.RFC3339Nano, v); err != nil {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "Parameter updatedSince is malformed."})
			return
		}
	}
	if q.Get("sort") != "updatedAt" {
		writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "This fake sorts by updatedAt only."})
		return
	}
	f.mu.Lock()
	var rows []fakeRow
	for _, row := range f.rows {
		if !row.UpdatedAt.Before(since) {
			rows = append(rows, row)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(rows, func(a, b fakeRow) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	total := len(rows)
	rows = rows[min(skip, len(rows)):]
	rows = rows[:min(limit, len(rows))]
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = map[string]any{"id": row.ID, "status": row.Status, "propertyId": "prop_1",
			"updatedAt": row.UpdatedAt.Format("2006-01-02T15:04:05.000Z"), "createdAt": "2026-05-01T08:00:00.000Z"}
	}
	writeJSON(w, 200, map[string]any{"reservations": out, "total": total, "limit": limit, "skip": skip})
}

func (f *fakeAPI) upload(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") != "application/pdf" {
		writeJSON(w, 415, map[string]any{"error": "unsupported_media_type", "message": "Send application/pdf."})
		return
	}
	h := sha256.New()
	var body strings.Builder
	n, err := io.Copy(io.MultiWriter(h, &body), io.LimitReader(r.Body, 25<<20+1))
	if err != nil {
		writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": err.Error()})
		return
	}
	f.mu.Lock()
	f.uploads = append(f.uploads, fakeUpload{contentLength: r.ContentLength, chunked: slices.Contains(r.TransferEncoding, "chunked"), bytes: n})
	f.document = []byte(body.String())
	f.mu.Unlock()
	writeJSON(w, 200, map[string]any{"agreement": map[string]any{
		"id": "agr_1", "version": 1, "provider": "external", "externalId": "env-1", "status": "completed",
		"document": map[string]any{"checksum": "sha256:" + hex.EncodeToString(h.Sum(nil)), "contentType": "application/pdf", "bytes": n},
		"signers":  []any{}, "createdAt": "2026-05-01T08:00:00.000Z", "updatedAt": "2026-05-01T08:00:00.000Z",
	}})
}

func (f *fakeAPI) download(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	doc := f.document
	f.mu.Unlock()
	if doc == nil {
		writeJSON(w, 404, map[string]any{"error": "not_found", "message": "No document is archived for this agreement."})
		return
	}
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	_, _ = w.Write(doc)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
