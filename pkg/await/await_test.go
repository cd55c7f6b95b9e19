package await_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"quarters.dev/pkg/await"
)

func TestFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Found after a few looks.
	looks := 0
	v, ok, err := await.Found(ctx, 5*time.Second, func(context.Context) (string, bool, error) {
		looks++
		return "rec", looks == 3, nil
	})
	if v != "rec" || !ok || err != nil || looks != 3 {
		t.Fatalf("found on the third look: %q %v %v after %d looks", v, ok, err, looks)
	}

	// Never found: gives up once wait has passed, not long after.
	start := time.Now()
	_, ok, err = await.Found(ctx, 200*time.Millisecond, func(context.Context) (int, bool, error) { return 0, false, nil })
	if ok || err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("never found: %v %v after %v", ok, err, time.Since(start))
	}

	// No wait: one look.
	looks = 0
	await.Found(ctx, 0, func(context.Context) (int, bool, error) { looks++; return 0, false, nil })
	if looks != 1 {
		t.Fatalf("no wait: %d looks", looks)
	}

	// An error ends the wait at once.
	boom := errors.New("boom")
	looks = 0
	_, _, err = await.Found(ctx, 5*time.Second, func(context.Context) (int, bool, error) { looks++; return 0, false, boom })
	if !errors.Is(err, boom) || looks != 1 {
		t.Fatalf("error: %v after %d looks", err, looks)
	}

	// A cancelled context ends the wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = await.Found(cctx, 5*time.Second, func(context.Context) (int, bool, error) { return 0, false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
