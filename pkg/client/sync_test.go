package client_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

// pass runs one pass of s and returns what it yielded, failing the test on
// an error or on a reservation yielded twice.
func pass(t *testing.T, s *client.Sync) map[string]time.Time {
	t.Helper()
	got := map[string]time.Time{}
	for r, err := range s.Changes(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := got[r.ID]; dup {
			t.Fatalf("%s yielded twice in one pass (updatedAt %v, then %v)", r.ID, prev, r.UpdatedAt)
		}
		got[r.ID] = r.UpdatedAt
	}
	return got
}

// mirror applies yielded changes as an integrator does: newest wins.
type mirror map[string]time.Time

func (m mirror) apply(changes map[string]time.Time) {
	for id, at := range changes {
		if at.After(m[id]) {
			m[id] = at
		}
	}
}

func (m mirror) check(t *testing.T, want map[string]time.Time) {
	t.Helper()
	if len(m) != len(want) {
		t.Errorf("mirror has %d reservations, the API %d", len(m), len(want))
	}
	for id, at := range want {
		if !m[id].Equal(at) {
			t.Errorf("%s: mirror has updatedAt %v, the API %v", id, m[id], at)
		}
	}
}

func TestSyncPassesAndCursor(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.add(12, false)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	s := c.NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 5})
	if got := pass(t, s); len(got) != 12 {
		t.Fatalf("first pass: %d reservations", len(got))
	}
	if got := pass(t, s); len(got) != 0 {
		t.Fatalf("nothing changed, yet the pass yielded %v", got)
	}
	changed := api.add(1, false)[0]
	at := api.change("res_0003")
	got := pass(t, s)
	if len(got) != 2 || !got["res_0003"].Equal(at) || got[changed].IsZero() {
		t.Fatalf("after two changes: %v", got)
	}

	// The cursor survives a round trip through JSON and a new Sync.
	raw, err := json.Marshal(s.Cursor())
	if err != nil {
		t.Fatal(err)
	}
	var cur client.SyncCursor
	if err := json.Unmarshal(raw, &cur); err != nil {
		t.Fatal(err)
	}
	api.change("res_0007")
	if got := pass(t, c.NewSync(cur, client.SyncOptions{PageSize: 5})); len(got) != 1 || got["res_0007"].IsZero() {
		t.Fatalf("resumed from a stored cursor: %v", got)
	}
}

// A loop that breaks leaves the cursor before the reservation it broke on.
func TestSyncBreakKeepsTheUnfinishedReservation(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.add(6, true) // one instant: the cursor's Seen list matters
	s := client.New(api.URL(), "qc_demo", "s3cret").NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 4})
	var first []string
	for r, err := range s.Changes(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(first) == 3 {
			break // the fourth failed to apply
		}
		first = append(first, r.ID)
	}
	rest := pass(t, s)
	if len(first) != 3 || len(rest) != 3 {
		t.Fatalf("first %v, then %v", first, rest)
	}
	for _, id := range first {
		if _, again := rest[id]; again {
			t.Errorf("%s delivered by both passes", id)
		}
	}
}

// The operator changes reservations already read, not yet read, and adds
// new ones while the pass pages: nothing is missed, nothing is yielded
// twice in a pass.
func TestSyncChangesWhilePaging(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	ids := api.add(20, false)
	api.onRead = func(n int) {
		switch n {
		case 2:
			api.change(ids[0])  // read on page 1: moves to the end
			api.change(ids[1])  // likewise
			api.change(ids[15]) // not read yet
		case 3:
			api.add(2, false)
			api.change(ids[0]) // yielded already in this pass
		}
	}
	s := client.New(api.URL(), "qc_demo", "s3cret").NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 5})
	m := mirror{}
	m.apply(pass(t, s))
	api.onRead = nil
	m.apply(pass(t, s))
	m.check(t, api.snapshot())
	if got := pass(t, s); len(got) != 0 {
		t.Fatalf("a quiet pass yielded %v", got)
	}
}

// More reservations than a page share one updatedAt, and some of those
// already read change while the pass pages among them: with offset paging
// the rows behind them would shift out of reach.
func TestSyncLargeTieWithRowsLeaving(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	ids := api.add(23, true)
	api.onRead = func(n int) {
		switch n {
		case 2, 3:
			// Rows read on the first page leave the instant: three before
			// the second read, one more before the third.
			for _, id := range ids[n-1 : 2*n-1] {
				api.change(id)
			}
		}
	}
	s := client.New(api.URL(), "qc_demo", "s3cret").NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 5})
	m := mirror{}
	first := pass(t, s)
	if len(first) != 23 {
		t.Errorf("first pass yielded %d of 23 reservations", len(first))
	}
	m.apply(first)
	api.onRead = nil
	m.apply(pass(t, s))
	m.check(t, api.snapshot())
}

// Random ties and random changes between reads, several passes: the mirror
// ends equal to the API and no pass repeats a reservation.
func TestSyncRandomChurn(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		api := newFakeAPI(t)
		var ids []string
		for range 15 {
			ids = append(ids, api.add(1+rng.IntN(12), rng.IntN(2) == 0)...)
		}
		api.onRead = func(int) {
			api.mu.Lock()
			n := len(api.rows)
			api.mu.Unlock()
			for range rng.IntN(4) {
				if rng.IntN(5) == 0 {
					api.add(1+rng.IntN(3), true)
				} else {
					api.change(ids[rng.IntN(min(n, len(ids)))])
				}
			}
		}
		s := client.New(api.URL(), "qc_demo", "s3cret").NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 2 + rng.IntN(9)})
		m := mirror{}
		for range 3 {
			m.apply(pass(t, s))
		}
		api.onRead = nil
		m.apply(pass(t, s))
		m.check(t, api.snapshot())
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// A write stamped just before the cursor but visible only after the pass
// read past it (two writers racing) is caught by the overlap, and what the
// overlap reads again is not yielded again.
func TestSyncOverlapCatchesLateWrites(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.add(8, false)
	s := client.New(api.URL(), "qc_demo", "s3cret").NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 3})
	if got := pass(t, s); len(got) != 8 {
		t.Fatalf("first pass: %v", got)
	}
	cur := s.Cursor()
	api.mu.Lock()
	api.rows["res_late"] = fakeRow{ID: "res_late", Status: "inquiry", UpdatedAt: cur.Since.Add(-time.Second)}
	api.mu.Unlock()
	got := pass(t, s)
	if len(got) != 1 || got["res_late"].IsZero() {
		t.Fatalf("second pass: %v", got)
	}
	if got := pass(t, s); len(got) != 0 {
		t.Fatalf("third pass: %v", got)
	}
}
