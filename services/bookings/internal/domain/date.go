package domain

import (
	"time"
)

// Date is a tenancy day, YYYY-MM-DD, local to the property. The zero Date
// means "not set". Dates compare as strings.
type Date struct{ s string }

const dateLayout = "2006-01-02"

// ParseDate accepts exactly YYYY-MM-DD naming a real calendar day.
func ParseDate(s string) (Date, bool) {
	if len(s) != len(dateLayout) {
		return Date{}, false
	}
	t, err := time.Parse(dateLayout, s)
	if err != nil || t.Format(dateLayout) != s {
		return Date{}, false
	}
	return Date{s: s}, true
}

// MustDate is ParseDate for constants in tests and seeds; an invalid date
// gives the zero Date.
func MustDate(s string) Date {
	d, _ := ParseDate(s)
	return d
}

func (d Date) String() string     { return d.s }
func (d Date) IsZero() bool       { return d.s == "" }
func (d Date) Before(o Date) bool { return d.s < o.s }

// DaysUntil counts the days from d to o (negative when o is earlier).
func (d Date) DaysUntil(o Date) int {
	a, err1 := time.Parse(dateLayout, d.s)
	b, err2 := time.Parse(dateLayout, o.s)
	if err1 != nil || err2 != nil {
		return 0
	}
	return int(b.Sub(a).Hours() / 24)
}

// AddDays returns the date n days after d.
func (d Date) AddDays(n int) Date {
	t, err := time.Parse(dateLayout, d.s)
	if err != nil {
		return Date{}
	}
	return Date{s: t.AddDate(0, 0, n).Format(dateLayout)}
}
