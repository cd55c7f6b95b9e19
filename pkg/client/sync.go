package client

import (
	"context"
	"iter"
	"slices"
	"sync"
	"time"
)

// SyncCursor is where an incremental sync of reservations resumes: the
// updatedAt of the last change delivered, and the ids delivered at exactly
// that instant (so that they are not delivered again). The zero cursor
// starts from the beginning. It encodes to JSON; persist it between runs.
type SyncCursor struct {
	Since time.Time `json:"since"`
	Seen  []string  `json:"seen,omitempty"`
}

// SyncOptions narrow and tune a [Sync].
type SyncOptions struct {
	// Status and PropertyID filter the bookings, as in ReservationQuery.
	Status     []string
	PropertyID string
	// PageSize is the page size, 2 to MaxPageSize (default MaxPageSize).
	PageSize int
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
//     next pass starts from [Sync.Cursor]. This rests on the API stamping
//     updatedAt from a clock that does not run backwards; a write stamped
//     before the cursor and made visible after the pass read past it
//     cannot be seen by any client.
//   - No reservation is yielded twice in one pass. When a reservation
//     changes again after the pass yielded it, the pass skips the newer
//     version and moves the cursor back to it, so the next pass yields it
//     (and may repeat reservations yielded after that point: delivery
//     across passes is at least once, so apply changes idempotently,
//     keyed by id, and keep the newest updatedAt).
//   - A deletion is not a change here: deleted bookings vanish from the
//     API; the reservation.deleted webhook is its only signal.
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
	cursor SyncCursor
	rewind time.Time // a skipped newer version; zero when none
}

// NewSync returns a Sync that resumes at from.
func (c *Client) NewSync(from SyncCursor, opts SyncOptions) *Sync {
	if opts.PageSize <= 0 || opts.PageSize > MaxPageSize {
		opts.PageSize = MaxPageSize
	}
	if opts.PageSize < 2 {
		opts.PageSize = 2
	}
	from.Seen = slices.Clone(from.Seen)
	return &Sync{c: c, opts: opts, cursor: from}
}

// Cursor returns where the next pass starts: past every reservation whose
// loop body finished, and before any newer version a pass skipped.
func (s *Sync) Cursor() SyncCursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rewind.IsZero() && s.rewind.Before(s.cursor.Since) {
		return SyncCursor{Since: s.rewind}
	}
	return SyncCursor{Since: s.cursor.Since, Seen: slices.Clone(s.cursor.Seen)}
}

// delivered moves the cursor past r.
func (s *Sync) delivered(r Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.UpdatedAt.After(s.cursor.Since):
		s.cursor = SyncCursor{Since: r.UpdatedAt, Seen: []string{r.ID}}
	case r.UpdatedAt.Equal(s.cursor.Since):
		s.cursor.Seen = append(s.cursor.Seen, r.ID)
	}
}

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
		s.cursor, s.rewind = start, time.Time{}
		s.mu.Unlock()
		prior := make(map[string]bool, len(start.Seen))
		for _, id := range start.Seen {
			prior[id] = true
		}
		yielded := map[string]time.Time{} // id → updatedAt yielded in this pass
		n := s.opts.PageSize
		from := start.Since // the updatedSince of the next read
		skip := 0           // > 0 while paging by offset among rows at from
		lastID := ""        // the last row read among rows at from
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
				if r.UpdatedAt.Equal(start.Since) && prior[r.ID] {
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
