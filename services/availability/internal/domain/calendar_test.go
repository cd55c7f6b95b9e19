package domain

import (
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
)

func day(s string) Date {
	d, ok := ParseDate(s)
	if !ok {
		panic("bad test date " + s)
	}
	return d
}

func booking(id string, s Status, in, out string) Booking {
	return Booking{ReservationID: id, Status: s, CheckIn: day(in), CheckOut: day(out)}
}

func block(id, start, end string) Block {
	return Block{ID: id, Start: day(start), End: day(end)}
}

// letters renders statuses compactly: a(vailable) u(navailable) r(eserved)
// b(ooked).
func letters(ss []Status) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteByte(s.String()[0])
	}
	return b.String()
}

func TestStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		bookings    []Booking
		blocks      []Block
		first, last string
		want        string
	}{
		{
			name:  "nothing occupies: every day available",
			first: "2026-05-01", last: "2026-05-05",
			want: "aaaaa",
		},
		{
			name:     "check-out day stays available",
			bookings: []Booking{booking("r1", Booked, "2026-05-02", "2026-05-04")},
			first:    "2026-05-01", last: "2026-05-05",
			want: "abbaa",
		},
		{
			name: "back-to-back stays: check-out day is the next check-in",
			bookings: []Booking{
				booking("r1", Booked, "2026-05-01", "2026-05-03"),
				booking("r2", Reserved, "2026-05-03", "2026-05-05"),
			},
			first: "2026-05-01", last: "2026-05-05",
			want: "bbrra",
		},
		{
			name:     "one-night stay occupies one day",
			bookings: []Booking{booking("r1", Reserved, "2026-05-03", "2026-05-04")},
			first:    "2026-05-01", last: "2026-05-05",
			want: "aaraa",
		},
		{
			name:   "block end is exclusive",
			blocks: []Block{block("b1", "2026-05-02", "2026-05-04")},
			first:  "2026-05-01", last: "2026-05-05",
			want: "auuaa",
		},
		{
			name:     "booked wins over a block",
			bookings: []Booking{booking("r1", Booked, "2026-05-02", "2026-05-04")},
			blocks:   []Block{block("b1", "2026-05-01", "2026-05-06")},
			first:    "2026-05-01", last: "2026-05-05",
			want: "ubbuu",
		},
		{
			name:     "reserved wins over a block",
			bookings: []Booking{booking("r1", Reserved, "2026-05-03", "2026-05-05")},
			blocks:   []Block{block("b1", "2026-05-02", "2026-05-04")},
			first:    "2026-05-01", last: "2026-05-05",
			want: "aurra",
		},
		{
			name: "booked wins over reserved where they overlap",
			bookings: []Booking{
				booking("r1", Reserved, "2026-05-01", "2026-05-04"),
				booking("r2", Booked, "2026-05-03", "2026-05-06"),
			},
			first: "2026-05-01", last: "2026-05-06",
			want: "rrbbba",
		},
		{
			name:   "overlapping blocks: removing neither frees the overlap",
			blocks: []Block{block("b1", "2026-05-01", "2026-05-04"), block("b2", "2026-05-03", "2026-05-05")},
			first:  "2026-05-01", last: "2026-05-06",
			want: "uuuuaa",
		},
		{
			name:     "occupations outside the range are clipped",
			bookings: []Booking{booking("r1", Booked, "2026-04-01", "2026-05-02"), booking("r2", Reserved, "2026-05-05", "2026-06-30")},
			blocks:   []Block{block("b1", "2026-01-01", "2026-02-01")},
			first:    "2026-05-01", last: "2026-05-06",
			want: "baaarr",
		},
		{
			name:     "a booking ending on the first day of the range occupies nothing in it",
			bookings: []Booking{booking("r1", Booked, "2026-04-20", "2026-05-01")},
			first:    "2026-05-01", last: "2026-05-03",
			want: "aaa",
		},
		{
			name:     "a booking starting the day after the range occupies nothing in it",
			bookings: []Booking{booking("r1", Booked, "2026-05-04", "2026-05-10")},
			first:    "2026-05-01", last: "2026-05-03",
			want: "aaa",
		},
		{
			name:     "stay across a leap day",
			bookings: []Booking{booking("r1", Booked, "2028-02-28", "2028-03-01")},
			first:    "2028-02-27", last: "2028-03-01",
			want: "abba",
		},
		{
			name:     "stay across 28 February of a common year",
			bookings: []Booking{booking("r1", Booked, "2027-02-28", "2027-03-02")},
			first:    "2027-02-27", last: "2027-03-02",
			want: "abba",
		},
		{
			name:     "stay across the Amsterdam spring-forward night (2026-03-29)",
			bookings: []Booking{booking("r1", Booked, "2026-03-28", "2026-03-30")},
			first:    "2026-03-27", last: "2026-03-30",
			want: "abba",
		},
		{
			name:     "stay across the New York fall-back night (2026-11-01)",
			bookings: []Booking{booking("r1", Reserved, "2026-10-31", "2026-11-02")},
			first:    "2026-10-30", last: "2026-11-02",
			want: "arra",
		},
		{
			name:  "one-day range",
			first: "2026-05-01", last: "2026-05-01",
			blocks: []Block{block("b1", "2026-05-01", "2026-05-02")},
			want:   "u",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Calendar{Bookings: tt.bookings, Blocks: tt.blocks}
			got := c.Statuses(day(tt.first), day(tt.last), nil)
			if letters(got) != tt.want {
				t.Fatalf("statuses %s, want %s", letters(got), tt.want)
			}
		})
	}
}

func TestStatusesLongRangeReusesBuffer(t *testing.T) {
	t.Parallel()
	c := Calendar{Bookings: []Booking{booking("r1", Booked, "2026-01-10", "2026-01-12")}}
	buf := make([]Status, 0, 2000)
	got := c.Statuses(day("2026-01-01"), day("2026-01-01").AddDays(MaxSpanDays-1), buf)
	if len(got) != MaxSpanDays || &got[0] != &buf[:1][0] {
		t.Fatalf("%d days, buffer reused %v", len(got), &got[0] == &buf[:1][0])
	}
	if letters(got[8:12]) != "abba" {
		t.Fatalf("days 9-12: %s", letters(got[8:12]))
	}
}

func TestChanged(t *testing.T) {
	t.Parallel()
	base := Calendar{
		Bookings: []Booking{booking("r1", Reserved, "2026-05-10", "2026-05-15")},
		Blocks:   []Block{block("b1", "2026-05-01", "2026-05-05")},
	}
	tests := []struct {
		name     string
		change   func(c *Calendar)
		hull     Span
		want     string // "first..last", or "" for no change
		wantNone bool
	}{
		{
			name:   "confirming turns every reserved day booked",
			change: func(c *Calendar) { c.PutBooking(booking("r1", Booked, "2026-05-10", "2026-05-15")) },
			hull:   Span{day("2026-05-10"), day("2026-05-14")},
			want:   "2026-05-10..2026-05-14",
		},
		{
			name:   "moving the stay two days later changes the days left and the days taken",
			change: func(c *Calendar) { c.PutBooking(booking("r1", Reserved, "2026-05-12", "2026-05-17")) },
			hull:   Span{day("2026-05-10"), day("2026-05-16")},
			want:   "2026-05-10..2026-05-16",
		},
		{
			name:     "a block inside an existing block changes nothing",
			change:   func(c *Calendar) { c.AddBlock(block("b2", "2026-05-02", "2026-05-04")) },
			hull:     Span{day("2026-05-02"), day("2026-05-03")},
			wantNone: true,
		},
		{
			name:   "a block half over a booking changes only its free days",
			change: func(c *Calendar) { c.AddBlock(block("b2", "2026-05-13", "2026-05-20")) },
			hull:   Span{day("2026-05-13"), day("2026-05-19")},
			want:   "2026-05-15..2026-05-19",
		},
		{
			name:   "cancelling frees the stay",
			change: func(c *Calendar) { c.RemoveBooking("r1") },
			hull:   Span{day("2026-05-10"), day("2026-05-14")},
			want:   "2026-05-10..2026-05-14",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := base.Clone()
			after := base.Clone()
			tt.change(&after)
			got, ok := Changed(&before, &after, tt.hull)
			if tt.wantNone {
				if ok {
					t.Fatalf("changed %s..%s, want no change", got.First, got.Last)
				}
				return
			}
			if !ok || got.First.String()+".."+got.Last.String() != tt.want {
				t.Fatalf("changed %v %s..%s, want %s", ok, got.First, got.Last, tt.want)
			}
		})
	}
}

func TestOccupies(t *testing.T) {
	t.Parallel()
	in, out := day("2026-05-01"), day("2026-05-03")
	tests := []struct {
		name string
		r    Reservation
		want Status
		ok   bool
	}{
		{"inquiry blocks nothing", Reservation{PropertyID: "p", Status: StatusInquiry, CheckIn: in, CheckOut: out}, Available, false},
		{"reserved holds", Reservation{PropertyID: "p", Status: StatusReserved, CheckIn: in, CheckOut: out}, Reserved, true},
		{"confirmed books", Reservation{PropertyID: "p", Status: StatusConfirmed, CheckIn: in, CheckOut: out}, Booked, true},
		{"cancelled blocks nothing", Reservation{PropertyID: "p", Status: StatusCancelled, CheckIn: in, CheckOut: out}, Available, false},
		{"deleted blocks nothing", Reservation{PropertyID: "p", Status: StatusConfirmed, CheckIn: in, CheckOut: out, Deleted: true}, Available, false},
		{"no nights blocks nothing", Reservation{PropertyID: "p", Status: StatusConfirmed, CheckIn: in, CheckOut: in}, Available, false},
		{"no property blocks nothing", Reservation{Status: StatusConfirmed, CheckIn: in, CheckOut: out}, Available, false},
	}
	for _, tt := range tests {
		if got, ok := tt.r.Occupies(); got != tt.want || ok != tt.ok {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolveRange(t *testing.T) {
	t.Parallel()
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	ams, ny := zone("Europe/Amsterdam"), zone("America/New_York")
	kiritimati, pagoPago := zone("Pacific/Kiritimati"), zone("Pacific/Pago_Pago")
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name                string
		start, end          *string
		now                 time.Time
		loc                 *time.Location
		wantFirst, wantLast string
		wantDays            int
		wantErr             string
	}{
		{name: "defaults: today in the zone plus 730 days", now: at("2026-06-15T12:00:00Z"), loc: ams,
			wantFirst: "2026-06-15", wantLast: "2028-06-14", wantDays: 731},
		{name: "default start just after midnight in Amsterdam on the spring-forward day",
			now: at("2026-03-28T23:30:00Z"), loc: ams, wantFirst: "2026-03-29", wantLast: "2028-03-28"},
		{name: "default start just before midnight in Amsterdam", now: at("2026-03-28T22:59:59Z"), loc: ams,
			wantFirst: "2026-03-28"},
		{name: "default start in New York during the repeated fall-back hour", now: at("2026-11-01T05:30:00Z"), loc: ny,
			wantFirst: "2026-11-01"},
		{name: "default start in New York one minute before midnight", now: at("2026-11-01T03:59:00Z"), loc: ny,
			wantFirst: "2026-10-31"},
		{name: "UTC+14: already tomorrow", now: at("2026-06-30T10:00:00Z"), loc: kiritimati,
			wantFirst: "2026-07-01"},
		{name: "UTC+14: one second earlier it is still today", now: at("2026-06-30T09:59:59Z"), loc: kiritimati,
			wantFirst: "2026-06-30"},
		{name: "UTC-11: still yesterday", now: at("2026-01-01T10:59:00Z"), loc: pagoPago,
			wantFirst: "2025-12-31", wantLast: "2027-12-31"},
		{name: "UTC+14 on New Year's Eve: the next year", now: at("2026-12-31T10:00:00Z"), loc: kiritimati,
			wantFirst: "2027-01-01"},
		{name: "explicit range across both Amsterdam changes", start: ptr("2026-03-28"), end: ptr("2026-10-26"),
			now: at("2026-01-01T00:00:00Z"), loc: ams, wantFirst: "2026-03-28", wantLast: "2026-10-26", wantDays: 213},
		{name: "explicit range across both New York changes", start: ptr("2026-03-07"), end: ptr("2026-11-02"),
			now: at("2026-01-01T00:00:00Z"), loc: ny, wantFirst: "2026-03-07", wantLast: "2026-11-02", wantDays: 241},
		{name: "end only: start is today", end: ptr("2026-06-20"), now: at("2026-06-15T12:00:00Z"), loc: ams,
			wantFirst: "2026-06-15", wantLast: "2026-06-20", wantDays: 6},
		{name: "start only: end is start plus 730", start: ptr("2024-02-29"), now: at("2026-06-15T12:00:00Z"), loc: ams,
			wantFirst: "2024-02-29", wantLast: "2026-02-28"},
		{name: "one day", start: ptr("2026-06-15"), end: ptr("2026-06-15"), loc: ams, wantDays: 1},
		{name: "exactly 1100 days", start: ptr("2026-01-01"), end: ptr("2029-01-04"), loc: ams, wantDays: 1100},
		{name: "1101 days", start: ptr("2026-01-01"), end: ptr("2029-01-05"), loc: ams, wantErr: "1101 days"},
		{name: "end before start", start: ptr("2026-06-15"), end: ptr("2026-06-14"), loc: ams, wantErr: "before start"},
		{name: "end only, before today", end: ptr("2026-06-14"), now: at("2026-06-15T12:00:00Z"), loc: ams, wantErr: "before start"},
		{name: "end only, before today in a far zone", end: ptr("2026-06-30"), now: at("2026-06-30T10:00:00Z"), loc: kiritimati, wantErr: "before start"},
		{name: "not a real day", start: ptr("2026-02-30"), loc: ams, wantErr: "start"},
		{name: "a time", end: ptr("2026-02-01T00:00:00Z"), loc: ams, wantErr: "end"},
		{name: "empty", start: ptr(""), loc: ams, wantErr: "start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := ParseRangeQuery(deref(tt.start), deref(tt.end), tt.start != nil, tt.end != nil)
			var first, last Date
			if err == nil {
				first, last, err = q.Resolve(tt.now, tt.loc)
			}
			if tt.wantErr != "" {
				if !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want invalid_request naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantFirst != "" && first.String() != tt.wantFirst {
				t.Errorf("first %s, want %s", first, tt.wantFirst)
			}
			if tt.wantLast != "" && last.String() != tt.wantLast {
				t.Errorf("last %s, want %s", last, tt.wantLast)
			}
			if tt.wantDays != 0 {
				days := (&Calendar{}).Statuses(first, last, nil)
				if len(days) != tt.wantDays {
					t.Errorf("%d days, want %d", len(days), tt.wantDays)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestNewBlock(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if b, err := NewBlock("b", "2026-02-28", "2026-03-01", nil, now); err != nil || b.Start.String() != "2026-02-28" || b.End.String() != "2026-03-01" {
		t.Fatalf("one-day block: %+v %v", b, err)
	}
	bad := []struct{ start, end, field string }{
		{"", "2026-03-01", "start"},
		{"2026-03-01", "", "end"},
		{"2026-02-29", "2026-03-05", "start"},
		{"2026-03-01", "2026-03-01", "after start"},
		{"2026-03-02", "2026-03-01", "after start"},
		{"2026-03-01", "2026-03-01T10:00", "end"},
	}
	for _, b := range bad {
		if _, err := NewBlock("b", b.start, b.end, nil, now); !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(err.Error(), b.field) {
			t.Errorf("%s..%s: %v, want invalid_request naming %s", b.start, b.end, err, b.field)
		}
	}
}
