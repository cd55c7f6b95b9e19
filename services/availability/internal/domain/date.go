// Package domain holds the availability service's types and rules: calendar
// days, the blocks and bookings that occupy them, and how a day's status is
// derived from them.
package domain

import "time"

// Date is a calendar day local to a property (a tenancy date, not an
// instant), counted in days since 1970-01-01. Arithmetic on it is plain
// integer arithmetic, so daylight-saving changes never skip or repeat a day.
type Date int32

// Bounds of the dates the API accepts: four-digit years.
var (
	MinDate = civilToDate(1, 1, 1)
	MaxDate = civilToDate(9999, 12, 31)
)

// ParseDate reads a real calendar day written exactly as YYYY-MM-DD: no
// times, no missing zeros, no 2026-02-30.
func ParseDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 || m < 1 || m > 12 || d < 1 || d > DaysIn(y, m) {
		return 0, false
	}
	return civilToDate(y, m, d), true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// IsLeap reports whether year y of the proleptic Gregorian calendar is a
// leap year.
func IsLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// DaysIn returns the number of days of month m (1–12) of year y.
func DaysIn(y, m int) int {
	switch m {
	case 2:
		if IsLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

// DateOf returns the calendar day of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return civilToDate(y, int(m), d)
}

// Today returns the current day in loc.
func Today(now time.Time, loc *time.Location) Date { return DateOf(now.In(loc)) }

// Civil returns the year, month and day of d.
func (d Date) Civil() (year, month, day int) { return dateToCivil(d) }

// AddDays returns the day n days after d (before it when n is negative).
func (d Date) AddDays(n int) Date { return d + Date(n) }

// DaysUntil returns the number of days from d to e (negative when e is
// earlier).
func (d Date) DaysUntil(e Date) int { return int(e) - int(d) }

// String formats d as YYYY-MM-DD.
func (d Date) String() string {
	var b [10]byte
	return string(d.AppendTo(b[:0]))
}

// AppendTo appends d as YYYY-MM-DD to b.
func (d Date) AppendTo(b []byte) []byte {
	y, m, dd := dateToCivil(d)
	return append(b,
		byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-',
		byte('0'+dd/10), byte('0'+dd%10))
}

// civilToDate and dateToCivil convert between the proleptic Gregorian
// calendar and a day count (H. Hinnant's days_from_civil and
// civil_from_days), for the positive years the API uses.
func civilToDate(y, m, d int) Date {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return Date(era*146097 + doe - 719468)
}

func dateToCivil(dt Date) (y, m, d int) {
	z := int(dt) + 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
