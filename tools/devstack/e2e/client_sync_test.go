package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

// adminTry calls an admin route and returns what happened instead of
// failing the test, for use from goroutines.
func adminTry(ctx context.Context, method, path, body string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, st.AdminURL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+st.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, out, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out, nil
}

// firstRead closes started when the first GET /reservations goes out.
type firstRead struct {
	base    http.RoundTripper
	once    sync.Once
	started chan struct{}
}

func (f *firstRead) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/reservations") {
		f.once.Do(func() { close(f.started) })
	}
	return f.base.RoundTrip(r)
}

// syncPass runs one pass and fails the test on an error or on a
// reservation yielded twice.
func syncPass(t *testing.T, ctx context.Context, s *client.Sync) map[string]time.Time {
	t.Helper()
	got := map[string]time.Time{}
	for r, err := range s.Changes(ctx) {
		if err != nil {
			t.Fatalf("sync pass: %v", err)
		}
		if prev, dup := got[r.ID]; dup {
			t.Fatalf("%s yielded twice in one pass (updatedAt %v, then %v)", r.ID, prev, r.UpdatedAt)
		}
		got[r.ID] = r.UpdatedAt
	}
	return got
}

// TestClientSyncWithConcurrentWriters follows an organisation's
// reservations with the client's incremental sync, paging four at a time,
// while two operators create and change bookings: every change is seen,
// none is yielded twice in a pass, and the mirror ends equal to the API.
func TestClientSyncWithConcurrentWriters(t *testing.T) {
	orgID, creds := newOrg(t, "Client Sync Rentals", 1)
	ctx := tctx(t)

	type change struct {
		id string
		at time.Time
	}
	var (
		mu      sync.Mutex
		ids     []string
		changes []change
	)
	record := func(body map[string]any) error {
		r := obj(body["reservation"])
		id, _ := r["id"].(string)
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r["updatedAt"]))
		if id == "" || err != nil {
			return fmt.Errorf("reservation without id or updatedAt: %v", body)
		}
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, change{id, at})
		return nil
	}
	newBooking := func(i int) string {
		return fmt.Sprintf(`{"propertyId":"prop_csync_%d","status":"inquiry","checkIn":"2027-%02d-01","checkOut":"2027-%02d-20"}`, i%3, 1+i%12, 1+i%12)
	}
	for i := range 30 {
		r := bookingsReservation(t, orgID, newBooking(i))
		ids = append(ids, r["id"].(string))
		if err := record(map[string]any{"reservation": r}); err != nil {
			t.Fatal(err)
		}
	}

	reads := &firstRead{base: http.DefaultTransport, started: make(chan struct{})}
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret, client.WithHTTPClient(&http.Client{Transport: reads, Timeout: 30 * time.Second}))
	s := c.NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 4})

	// The operators start once the sync reads its first page.
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			<-reads.started
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range 40 {
				var (
					body map[string]any
					err  error
				)
				if rng.IntN(4) == 0 {
					_, body, err = adminTry(ctx, "POST", "/orgs/"+orgID+"/reservations", newBooking(100*w+i))
					if err == nil {
						mu.Lock()
						ids = append(ids, obj(body["reservation"])["id"].(string))
						mu.Unlock()
					}
				} else {
					mu.Lock()
					id := ids[rng.IntN(len(ids))]
					mu.Unlock()
					patch := fmt.Sprintf(`{"notes":"operator %d, change %d"}`, w, i)
					if rng.IntN(2) == 0 {
						patch = fmt.Sprintf(`{"adults":%d}`, 1+rng.IntN(4))
					}
					_, body, err = adminTry(ctx, "PATCH", "/orgs/"+orgID+"/reservations/"+id, patch)
				}
				if err == nil {
					err = record(body)
				}
				if err != nil {
					t.Errorf("operator %d: %v", w, err)
					return
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	mirror := map[string]time.Time{}
	apply := func(got map[string]time.Time) {
		for id, at := range got {
			if at.After(mirror[id]) {
				mirror[id] = at
			}
		}
	}
	passes, during := 0, 0
	for running := true; running; {
		select {
		case <-writing:
			running = false
		default:
		}
		got := syncPass(t, ctx, s)
		apply(got)
		passes++
		if running {
			during += len(got)
		}
	}
	// The operators are done: passes until one finds nothing new.
	for quiet := false; !quiet; {
		got := syncPass(t, ctx, s)
		apply(got)
		passes++
		quiet = len(got) == 0
		if passes > 200 {
			t.Fatal("the sync never came to rest")
		}
	}
	t.Logf("%d changes by the operators, %d passes, %d reservations yielded while they wrote", len(changes)-30, passes, during)

	for _, ch := range changes {
		if got, ok := mirror[ch.id]; !ok || got.Before(ch.at) {
			t.Errorf("%s: the change at %v was never seen (mirror has %v)", ch.id, ch.at, got)
		}
	}
	n := 0
	for r, err := range c.AllReservations(ctx, client.ReservationQuery{Sort: client.SortCreatedAt}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !mirror[r.ID].Equal(r.UpdatedAt) {
			t.Errorf("%s: mirror has updatedAt %v, the API %v", r.ID, mirror[r.ID], r.UpdatedAt)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n != len(mirror) || n != len(ids) {
		t.Errorf("the API lists %d reservations, the mirror holds %d, the operators made %d", n, len(mirror), len(ids))
	}
}
