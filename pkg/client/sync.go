package client

import (
	"context"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"
)

// SyncCursor is where an incremental sync of reservations resumes: the
// updatedAt of the newest change delivered, and the changes delivered
// recently enough to be read again (so that they are not delivered again).
// The zero cursor starts from the beginning. It encodes to JSON; persist it
// between runs.
type SyncCursor struct {
	Since time.Time  `json:"since"`
	Seen  []SyncMark `json:"seen,omitempty"`
}

// SyncMark is one delivered change: a reservation at one updatedAt.
type SyncMark struct {
	ID        string    `json:"id"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// DefaultSyncOverlap is the default of SyncOptions.Overlap.
const DefaultSyncOverlap = 2 * time.Second

// SyncOptions narrow and tune a [Sync].
type SyncOptions struct {
	// Status and PropertyID filter the bookings, as in ReservationQuery.
	Status     []string
	PropertyID string
	// PageSize is the page size, 2 to MaxPageSize (default MaxPageSize).
	PageSize int
	// Overlap is how far before the cursor each pass starts reading
	// (default DefaultSyncOverlap; negative for none). It catches a write
	// the API stamped just before the cursor but made visible only after a
	// pass read past it, as concurrent writes can be. Changes read again
	// are recognised and not yielded again.
	Overlap time.Duration
}

// Sync follows the changes of an organisation's reservations with the
// `updatedSince` read of GET /reservations. Each call of [Sync.Changes] is
// one pass: it yields the reservations changed since the cursor, oldest
// change first, and advances the cursor past each one the loop body
// finishes. Run passes one after another (after a webhook, or on a timer).
//
// Guarantees, for reservations matching the options:
//
//   - No change is missed. A change made before or while a pass pages is
//     yielded by that pass or, at the latest, by the next one, provided the
//     next pass starts from [Sync.Cursor]. This rests on updatedAt
//     growing with time: a write stamped more than Overlap before the
//     cursor and made visible only after a pass read past it cannot be
//     seen by any reader of updatedSince.
//   - No reservation is yielded twice in one pass. When a reservation
//     changes again after the pass yielded it, the pass skips the newer
//     version and moves the cursor back to it, so the next pass yields it.
//   - No change is yielded twice: a change delivered by one pass is not
//     yielded by a later one that reads it again. (A loop that breaks
//     leaves the reservation it broke on undelivered; it comes again.)
//   - A deletion is not a change here: deleted bookings vanish from the
//     API; the reservation.deleted webhook is its only signal.
//
// Apply changes keyed by reservation id, newest updatedAt winning.
//
// How: pages are read sorted by updatedAt then id, ascending, each from
// the largest updatedAt read so far (inclusive) rather than by offset, so a
// booking that changes and moves to the end of the order cannot shift an
// unread one out of reach. Only when more than a page of bookings share
// one updatedAt does the pass page by offset within them, re-reading the
// last row of each page to check that nothing moved, and starting that
// instant over when something did. Rows read twice are recognised by id
// and updatedAt.
//
// A Sync is safe for concurrent use, but its passes must not overlap.
type Sync struct {
	c    *Client
	opts SyncOptions

	mu     sync.Mutex
	since  time.Time             // the newest change delivered
	marks  map[SyncMark]struct{} // changes delivered
	rewind time.Time             // a skipped newer version; zero when none
}

// NewSync returns a Sync that resumes at from.
func (c *Client) NewSync(from SyncCursor, opts SyncOptions) *Sync {
	if opts.PageSize <= 0 || opts.PageSize > MaxPageSize {
		opts.PageSize = MaxPageSize
	}
	if opts.PageSize < 2 {
		opts.PageSize = 2
	}
	switch {
	case opts.Overlap == 0:
		opts.Overlap = DefaultSyncOverlap
	case opts.Overlap < 0:
		opts.Overlap = 0
	}
	s := &Sync{c: c, opts: opts}
	s.reset(from)
	return s
}

func (s *Sync) reset(from SyncCursor) {
	s.since, s.rewind = from.Since, time.Time{}
	s.marks = make(map[SyncMark]struct{}, len(from.Seen))
	for _, m := range from.Seen {
		s.marks[SyncMark{ID: m.ID, UpdatedAt: m.UpdatedAt.UTC()}] = struct{}{}
	}
}

// Cursor returns where the next pass starts: past every change whose loop
// body finished, and before any newer version a pass skipped.
func (s *Sync) Cursor() SyncCursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	since := s.since
	if !s.rewind.IsZero() && s.rewind.Before(since) {
		since = s.rewind
	}
	cur := SyncCursor{Since: since}
	horizon := since.Add(-s.opts.Overlap)
	for m := range s.marks {
		if !m.UpdatedAt.Before(horizon) {
			cur.Seen = append(cur.Seen, m)
		}
	}
	slices.SortFunc(cur.Seen, func(a, b SyncMark) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return cur
}

// delivered moves the cursor past r.
func (s *Sync) delivered(r Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.UpdatedAt.After(s.since) {
		s.since = r.UpdatedAt
	}
	s.marks[mark(r)] = struct{}{}
}

func (s *Sync) isDelivered(r Reservation) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.marks[mark(r)]
	return ok
}

func mark(r Reservation) SyncMark { return SyncMark{ID: r.ID, UpdatedAt: r.UpdatedAt.UTC()} }

func (s *Sync) skipped(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rewind.IsZero() || at.Before(s.rewind) {
		s.rewind = at
	}
}

// Changes runs one pass and yields the reservations changed since the
// cursor. It stops at the first error, which it yields; the cursor then
// stays after the last reservation delivered, so the next pass resumes
// there. A reservation counts as delivered once the loop body returns
// for it without breaking the loop.
func (s *Sync) Changes(ctx context.Context) iter.Seq2[Reservation, error] {
	return func(yield func(Reservation, error) bool) {
		start := s.Cursor()
		s.mu.Lock()
		s.reset(start)
		s.mu.Unlock()
		yielded := map[string]time.Time{} // id → updatedAt yielded in this pass
		n := s.opts.PageSize
		from := start.Since // the updatedSince of the next read
		if !from.IsZero() {
			from = from.Add(-s.opts.Overlap)
		}
		skip := 0    // > 0 while paging by offset among rows at from
		lastID := "" // the last row read among rows at from
		for {
			q := ReservationQuery{Status: s.opts.Status, PropertyID: s.opts.PropertyID,
				UpdatedSince: from, Sort: SortUpdatedAt, Order: OrderAsc, Limit: n, Skip: skip}
			page, err := s.c.Reservations(ctx, q)
			if err != nil {
				yield(Reservation{}, err)
				return
			}
			rows := page.Reservations
			if skip > 0 {
				// The page starts one row early, with the last row read. If
				// that row is not there, rows before it left or joined this
				// instant, and the offset no longer means what it did.
				if len(rows) == 0 || rows[0].ID != lastID || !rows[0].UpdatedAt.Equal(from) {
					skip, lastID = 0, ""
					continue
				}
			}
			for _, r := range rows {
				if s.isDelivered(r) {
					continue
				}
				if at, ok := yielded[r.ID]; ok {
					if r.UpdatedAt.After(at) {
						s.skipped(r.UpdatedAt)
					}
					continue
				}
				if !yield(r, nil) {
					return
				}
				yielded[r.ID] = r.UpdatedAt
				s.delivered(r)
			}
			if len(rows) < n {
				return
			}
			last := rows[len(rows)-1]
			if last.UpdatedAt.After(from) {
				from, skip, lastID = last.UpdatedAt, 0, ""
				continue
			}
			// A full page of rows at one instant: page by offset among them,
			// overlapping by one row.
			if skip == 0 {
				skip = n - 1
			} else {
				skip += n - 1
			}
			lastID = last.ID
		}
	}
}
