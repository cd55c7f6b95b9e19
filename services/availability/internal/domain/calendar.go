package domain

import (
	"sort"
	"time"
)

// Status is the state of one calendar day. Higher values win where
// occupations overlap: booked over reserved, reserved over unavailable,
// each over available.
type Status uint8

// Day statuses, in precedence order.
const (
	Available Status = iota
	Unavailable
	Reserved
	Booked
)

var statusNames = [...]string{"available", "unavailable", "reserved", "booked"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// ReservationStatus is a booking's status as the bookings service keeps it.
type ReservationStatus uint8

// Reservation statuses. Only reserved and confirmed bookings occupy days.
const (
	StatusUnknown ReservationStatus = iota
	StatusInquiry
	StatusReserved
	StatusConfirmed
	StatusCancelled
)

// Reservation is what availability keeps of a booking: the facts that decide
// which days it occupies.
type Reservation struct {
	ID         string
	OrgID      string
	PropertyID string
	Status     ReservationStatus
	CheckIn    Date
	CheckOut   Date
	// Deleted: the booking was deleted outright and occupies nothing.
	Deleted bool
	// Version is the reservation's aggregate version.
	Version int64
}

// Occupies returns the day status the reservation gives the days from
// check-in up to (not including) check-out, and false when it occupies no
// day: an inquiry, a cancelled or deleted booking, or one whose dates are
// not a real stay.
func (r Reservation) Occupies() (Status, bool) {
	if r.Deleted || r.PropertyID == "" || r.CheckOut <= r.CheckIn {
		return Available, false
	}
	switch r.Status {
	case StatusReserved:
		return Reserved, true
	case StatusConfirmed:
		return Booked, true
	default:
		return Available, false
	}
}

// Booking is a reservation that occupies days of a property: check-in
// inclusive, check-out exclusive (the check-out day stays free).
type Booking struct {
	ReservationID string
	Status        Status
	CheckIn       Date
	CheckOut      Date
	// Version is the reservation version this entry reflects.
	Version int64
}

// Block makes days unavailable: start inclusive, end exclusive.
type Block struct {
	ID        string
	Start     Date
	End       Date
	Reason    *string
	CreatedAt time.Time
}

// Calendar is the availability state of one property: its blocks and the
// bookings that occupy its days. It is the aggregate that calendar events
// carry, and the unit of consistency: every change to a property's days is
// one version-guarded update of its calendar.
type Calendar struct {
	PropertyID string
	OrgID      string
	// Version counts the changes of the property's days.
	Version int64
	// Bookings are ordered by check-in, then reservation id.
	Bookings []Booking
	// Blocks are ordered by start, then id.
	Blocks []Block
}

// Booking returns the entry of reservation id.
func (c *Calendar) Booking(id string) (Booking, bool) {
	for _, b := range c.Bookings {
		if b.ReservationID == id {
			return b, true
		}
	}
	return Booking{}, false
}

// PutBooking sets the entry of b.ReservationID, keeping the order.
func (c *Calendar) PutBooking(b Booking) {
	c.RemoveBooking(b.ReservationID)
	c.Bookings = append(c.Bookings, b)
	sort.SliceStable(c.Bookings, func(i, j int) bool {
		x, y := c.Bookings[i], c.Bookings[j]
		if x.CheckIn != y.CheckIn {
			return x.CheckIn < y.CheckIn
		}
		return x.ReservationID < y.ReservationID
	})
}

// RemoveBooking drops the entry of reservation id; it reports whether there
// was one.
func (c *Calendar) RemoveBooking(id string) bool {
	for i, b := range c.Bookings {
		if b.ReservationID == id {
			c.Bookings = append(c.Bookings[:i:i], c.Bookings[i+1:]...)
			return true
		}
	}
	return false
}

// Block returns the block with id.
func (c *Calendar) Block(id string) (Block, bool) {
	for _, b := range c.Blocks {
		if b.ID == id {
			return b, true
		}
	}
	return Block{}, false
}

// AddBlock adds b, keeping the order.
func (c *Calendar) AddBlock(b Block) {
	c.Blocks = append(c.Blocks, b)
	sort.SliceStable(c.Blocks, func(i, j int) bool {
		x, y := c.Blocks[i], c.Blocks[j]
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return x.CreatedAt.Before(y.CreatedAt)
		}
		return x.ID < y.ID
	})
}

// RemoveBlock drops the block with id; it reports whether there was one.
func (c *Calendar) RemoveBlock(id string) bool {
	for i, b := range c.Blocks {
		if b.ID == id {
			c.Blocks = append(c.Blocks[:i:i], c.Blocks[i+1:]...)
			return true
		}
	}
	return false
}

// Clone returns a copy that shares nothing mutable with c.
func (c *Calendar) Clone() Calendar {
	out := *c
	out.Bookings = append([]Booking(nil), c.Bookings...)
	out.Blocks = append([]Block(nil), c.Blocks...)
	return out
}

// Statuses returns the status of each day from first to last inclusive
// (last-first+1 entries), reusing buf when it is large enough.
//
// It makes one pass over the bookings and blocks, keeping those that overlap
// the range (clipped to it) as counter changes on their first and end day,
// then one pass over the range that carries the counters forward: a day's
// status is the highest whose counter is positive. The work is linear in the
// days plus the occupations, however long or overlapping they are.
func (c *Calendar) Statuses(first, last Date, buf []Status) []Status {
	n := first.DaysUntil(last) + 1
	if n <= 0 {
		return buf[:0]
	}
	if cap(buf) < n {
		buf = make([]Status, n)
	}
	out := buf[:n]
	clear(out)
	var small [64][3]int32
	var delta [][3]int32
	if n+1 <= len(small) {
		delta = small[:n+1]
	} else {
		delta = make([][3]int32, n+1)
	}
	add := func(s Status, from, to Date) {
		// [from, to) clipped to [first, last+1)
		if to <= first || from > last {
			return
		}
		lo := first.DaysUntil(max(from, first))
		hi := first.DaysUntil(min(to, last+1))
		delta[lo][s-1]++
		delta[hi][s-1]--
	}
	for _, b := range c.Bookings {
		add(b.Status, b.CheckIn, b.CheckOut)
	}
	for _, b := range c.Blocks {
		add(Unavailable, b.Start, b.End)
	}
	var cnt [3]int32
	for i := range n {
		d := &delta[i]
		cnt[0] += d[0]
		cnt[1] += d[1]
		cnt[2] += d[2]
		switch {
		case cnt[Booked-1] > 0:
			out[i] = Booked
		case cnt[Reserved-1] > 0:
			out[i] = Reserved
		case cnt[Unavailable-1] > 0:
			out[i] = Unavailable
		}
	}
	return out
}

// Span is a run of days, first and last inclusive.
type Span struct{ First, Last Date }

// maxDiffDays bounds the days Changed compares one by one; beyond it the
// whole hull is reported as changed.
const maxDiffDays = 20 * 366

// Changed returns the first and last day whose status differs between
// before and after, looking only at days within hull (the days an update
// touched); ok is false when no day changed.
func Changed(before, after *Calendar, hull Span) (Span, bool) {
	if hull.Last < hull.First {
		return Span{}, false
	}
	if hull.First.DaysUntil(hull.Last) >= maxDiffDays {
		return hull, true
	}
	a := before.Statuses(hull.First, hull.Last, nil)
	b := after.Statuses(hull.First, hull.Last, nil)
	lo, hi := -1, -1
	for i := range a {
		if a[i] != b[i] {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return Span{}, false
	}
	return Span{hull.First.AddDays(lo), hull.First.AddDays(hi)}, true
}

// Hull returns the smallest span holding the half-open intervals
// [from, to) given as pairs; ok is false when they hold no day.
func Hull(intervals ...[2]Date) (Span, bool) {
	var s Span
	ok := false
	for _, iv := range intervals {
		if iv[1] <= iv[0] {
			continue
		}
		if !ok {
			s, ok = Span{iv[0], iv[1] - 1}, true
			continue
		}
		s.First = min(s.First, iv[0])
		s.Last = max(s.Last, iv[1]-1)
	}
	return s, ok
}
