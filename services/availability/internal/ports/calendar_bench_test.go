package ports

import (
	"encoding/json"
	"fmt"
	"testing"

	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/domain"
)

// benchCalendar is a busy property: 300 bookings and 50 blocks spread over
// the 1100 days asked for (and beyond them).
func benchCalendar() *domain.Calendar {
	c := &domain.Calendar{PropertyID: "p"}
	first, _ := domain.ParseDate("2026-01-01")
	for i := range 300 {
		in := first.AddDays(i*4 - 40)
		st := domain.Reserved
		if i%3 != 0 {
			st = domain.Booked
		}
		c.Bookings = append(c.Bookings, domain.Booking{ReservationID: fmt.Sprintf("r%03d", i), Status: st, CheckIn: in, CheckOut: in.AddDays(3)})
	}
	for i := range 50 {
		s := first.AddDays(i*23 + 2)
		c.Blocks = append(c.Blocks, domain.Block{ID: fmt.Sprintf("b%02d", i), Start: s, End: s.AddDays(5)})
	}
	return c
}

// BenchmarkCalendar computes the statuses of 1100 days and encodes the
// JSON body, as GET /listings/{id}/calendar does once the property's
// calendar is read.
func BenchmarkCalendar(b *testing.B) {
	c := benchCalendar()
	first, _ := domain.ParseDate("2026-01-01")
	last := first.AddDays(domain.MaxSpanDays - 1)
	var days []domain.Status
	var body []byte
	b.ReportAllocs()
	for b.Loop() {
		days = c.Statuses(first, last, days)
		body = AppendCalendar(body[:0], app.CalendarView{First: first, Days: days, MinNights: 30})
	}
	b.ReportMetric(float64(len(body)), "bytes/body")
}

// BenchmarkCalendarFresh is BenchmarkCalendar without reused buffers.
func BenchmarkCalendarFresh(b *testing.B) {
	c := benchCalendar()
	first, _ := domain.ParseDate("2026-01-01")
	last := first.AddDays(domain.MaxSpanDays - 1)
	b.ReportAllocs()
	for b.Loop() {
		days := c.Statuses(first, last, nil)
		_ = AppendCalendar(nil, app.CalendarView{First: first, Days: days, MinNights: 30})
	}
}

func TestAppendCalendarIsTheSpecShape(t *testing.T) {
	t.Parallel()
	c := benchCalendar()
	first, _ := domain.ParseDate("2026-01-01")
	last := first.AddDays(domain.MaxSpanDays - 1)
	body := AppendCalendar(nil, app.CalendarView{First: first, Days: c.Statuses(first, last, nil), MinNights: 30})
	var got struct {
		Days []map[string]any `json:"days"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if len(got.Days) != domain.MaxSpanDays {
		t.Fatalf("%d days", len(got.Days))
	}
	seen := map[any]bool{}
	for i, d := range got.Days {
		if d["date"] != first.AddDays(i).String() || d["minNights"] != 30.0 || d["isBaseMinNights"] != true || len(d) != 4 {
			t.Fatalf("day %d: %v", i, d)
		}
		seen[d["status"]] = true
	}
	if len(seen) != 4 {
		t.Fatalf("statuses seen: %v", seen)
	}
	empty := AppendCalendar(nil, app.CalendarView{First: first})
	if string(empty) != `{"days":[]}` {
		t.Fatalf("no days: %s", empty)
	}
}
