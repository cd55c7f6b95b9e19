package domain

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests, whatever the machine has installed
)

func TestParseDate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in string
		ok bool
	}{
		{"2026-01-01", true},
		{"2024-02-29", true}, // leap year
		{"2000-02-29", true}, // divisible by 400
		{"2026-02-29", false},
		{"1900-02-29", false}, // divisible by 100, not by 400
		{"2026-02-30", false},
		{"2026-04-31", false},
		{"2026-12-31", true},
		{"2026-13-01", false},
		{"2026-00-10", false},
		{"2026-01-00", false},
		{"0000-01-01", false},
		{"0001-01-01", true},
		{"9999-12-31", true},
		{"2026-1-01", false},
		{"2026-01-1", false},
		{"26-01-01", false},
		{"2026/01/01", false},
		{"2026-01-01T00:00:00Z", false},
		{"2026-01-01 ", false},
		{" 2026-01-01", false},
		{"+026-01-01", false},
		{"2026-0a-01", false},
		{"", false},
	}
	for _, tt := range tests {
		d, ok := ParseDate(tt.in)
		if ok != tt.ok {
			t.Errorf("ParseDate(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if ok && d.String() != tt.in {
			t.Errorf("ParseDate(%q).String() = %q", tt.in, d.String())
		}
	}
}

// Every day from year 1 to 9999 round-trips and agrees with package time.
func TestDateAgreesWithTimePackage(t *testing.T) {
	t.Parallel()
	day := time.Date(1, 1, 1, 12, 0, 0, 0, time.UTC)
	for d := MinDate; d <= MaxDate; d++ {
		y, m, dd := day.Date()
		if gy, gm, gd := d.Civil(); gy != y || gm != int(m) || gd != dd {
			t.Fatalf("day %d is %04d-%02d-%02d, want %s", d, gy, gm, gd, day.Format(time.DateOnly))
		}
		if DateOf(day) != d {
			t.Fatalf("DateOf(%s) = %d, want %d", day.Format(time.DateOnly), DateOf(day), d)
		}
		day = day.AddDate(0, 0, 1)
	}
	if got := DateOf(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)); got != 0 {
		t.Fatalf("1970-01-01 is day %d, want 0", got)
	}
}

func TestLeapDayArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from string
		days int
		want string
	}{
		{"2024-02-28", 1, "2024-02-29"},
		{"2024-02-29", 1, "2024-03-01"},
		{"2026-02-28", 1, "2026-03-01"},
		{"2100-02-28", 1, "2100-03-01"},
		{"2000-02-28", 1, "2000-02-29"},
		{"2026-03-29", 730, "2028-03-28"}, // the default end spans 2028-02-29
		{"2027-01-01", 730, "2028-12-31"}, // 2028 has 366 days
		{"2024-02-29", 365, "2025-02-28"},
		{"2026-12-31", 1, "2027-01-01"},
	}
	for _, tt := range tests {
		d, ok := ParseDate(tt.from)
		if !ok {
			t.Fatalf("parse %s", tt.from)
		}
		if got := d.AddDays(tt.days).String(); got != tt.want {
			t.Errorf("%s + %d days = %s, want %s", tt.from, tt.days, got, tt.want)
		}
	}
}
