package domain

import (
	"time"

	"quarters.dev/pkg/apperr"
)

// Calendar range limits of GET /listings/{id}/calendar.
const (
	// MaxSpanDays is the most days one calendar request may cover.
	MaxSpanDays = 1100
	// DefaultSpanDays is how far the default end lies after the start.
	DefaultSpanDays = 730
)

// RangeQuery is the start and end a calendar request names, each optional.
type RangeQuery struct {
	Start, End       Date
	HasStart, HasEnd bool
}

// ParseRangeQuery checks the syntax of the start and end parameters; an
// absent parameter is "". Every parameter must be a real day written as
// YYYY-MM-DD.
func ParseRangeQuery(start, end string, hasStart, hasEnd bool) (RangeQuery, error) {
	var q RangeQuery
	var ok bool
	if hasStart {
		if q.Start, ok = ParseDate(start); !ok {
			return q, apperr.Invalid("Parameter start must be a calendar day written as YYYY-MM-DD.")
		}
		q.HasStart = true
	}
	if hasEnd {
		if q.End, ok = ParseDate(end); !ok {
			return q, apperr.Invalid("Parameter end must be a calendar day written as YYYY-MM-DD.")
		}
		q.HasEnd = true
	}
	if q.HasStart && q.HasEnd {
		if err := checkSpan(q.Start, q.End); err != nil {
			return q, err
		}
	}
	return q, nil
}

// Resolve fills in the defaults of an absent start (today in the listing's
// zone loc, at instant now) and end (start plus DefaultSpanDays) and checks
// the span: the end not before the start, end − start + 1 days at most
// MaxSpanDays. first and last are both included.
func (q RangeQuery) Resolve(now time.Time, loc *time.Location) (first, last Date, err error) {
	first = q.Start
	if !q.HasStart {
		first = Today(now, loc)
	}
	last = q.End
	if !q.HasEnd {
		last = min(first.AddDays(DefaultSpanDays), MaxDate)
	}
	if err := checkSpan(first, last); err != nil {
		return 0, 0, err
	}
	return first, last, nil
}

func checkSpan(first, last Date) error {
	if last < first {
		return apperr.Invalid("Parameter end must not be before start.")
	}
	if first.DaysUntil(last)+1 > MaxSpanDays {
		return apperr.Invalid("Parameters start and end span %d days; at most %d are allowed.", first.DaysUntil(last)+1, MaxSpanDays)
	}
	return nil
}

// NewBlock validates an operator's block: start inclusive, end exclusive
// and after start, both real days written as YYYY-MM-DD.
func NewBlock(id, start, end string, reason *string, now time.Time) (Block, error) {
	s, ok := ParseDate(start)
	if !ok {
		if start == "" {
			return Block{}, apperr.Invalid("Field start is required (YYYY-MM-DD).")
		}
		return Block{}, apperr.Invalid("Field start must be a calendar day written as YYYY-MM-DD.")
	}
	e, ok := ParseDate(end)
	if !ok {
		if end == "" {
			return Block{}, apperr.Invalid("Field end is required (YYYY-MM-DD).")
		}
		return Block{}, apperr.Invalid("Field end must be a calendar day written as YYYY-MM-DD.")
	}
	if e <= s {
		return Block{}, apperr.Invalid("Field end must be after start (end is exclusive).")
	}
	if reason != nil && len(*reason) > MaxReasonLength {
		return Block{}, apperr.Invalid("Field reason is longer than %d bytes.", MaxReasonLength)
	}
	return Block{ID: id, Start: s, End: e, Reason: reason, CreatedAt: now}, nil
}

// MaxReasonLength bounds a block's reason.
const MaxReasonLength = 1000
