// Package await waits for a record a projection learns of through an event:
// one created a moment ago by another service, whose event may still be on
// its way when the next call arrives.
package await

import (
	"context"
	"time"
)

// First and most delays between two looks.
const (
	firstDelay = 5 * time.Millisecond
	maxDelay   = 50 * time.Millisecond
)

// Found calls get until it finds the record, fails, or wait has passed,
// waiting a little longer between calls each time, and returns its last
// answer. With wait zero or less it calls get once.
func Found[T any](ctx context.Context, wait time.Duration, get func(context.Context) (T, bool, error)) (T, bool, error) {
	deadline := time.Now().Add(wait)
	delay := firstDelay
	for {
		v, ok, err := get(ctx)
		if err != nil || ok || time.Now().Add(delay).After(deadline) {
			return v, ok, err
		}
		select {
		case <-ctx.Done():
			return v, false, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxDelay)
	}
}
