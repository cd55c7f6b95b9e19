package reqid

import (
	"strings"
	"sync"
	"testing"
)

func TestNextIsUniqueAcrossGeneratorsAndGoroutines(t *testing.T) {
	t.Parallel()
	a, b := New(), New()
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range []*Generator{a, b, a, b} {
		wg.Go(func() {
			for range 1000 {
				id := g.Next()
				mu.Lock()
				if seen[id] {
					t.Errorf("id %s minted twice", id)
				}
				seen[id] = true
				mu.Unlock()
				if len(id) != Len || strings.Trim(id, "0123456789abcdef") != "" {
					t.Errorf("id %q is not %d hex digits", id, Len)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != 4000 {
		t.Fatalf("%d distinct ids, want 4000", len(seen))
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"abc-123": true, New().Next(): true, strings.Repeat("x", 128): true,
		"": false, "bad id": false, "tab\tid": false, "é": false, strings.Repeat("x", 129): false, "new\nline": false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
}
