package demo

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// AvailabilitySteps block a fortnight of the first published demo listing
// (recorded in State.Data["listings"] by the catalog steps); without
// published listings they do nothing.
func AvailabilitySteps() []Step {
	return []Step{{Name: "block demo listing days", Run: blockDemoListing}}
}

// listingWait bounds how long seeding waits for availability to learn of
// the demo org and listing (both reach it as events).
const listingWait = 90 * time.Second

func blockDemoListing(ctx context.Context, c *Client, st *State) error {
	ids := stringList(st.Data["listings"])
	if len(ids) == 0 {
		return nil
	}
	id := ids[0]
	// Repainting between tenancies: the first fortnight of the third
	// month after next, a gap the demo bookings (demoStays) leave free.
	now := time.Now().UTC()
	start := time.Date(now.Year(), now.Month()+4, 1, 0, 0, 0, 0, time.UTC)
	body := map[string]any{
		"start":  start.Format(time.DateOnly),
		"end":    start.AddDate(0, 0, 14).Format(time.DateOnly),
		"reason": "Repainting between tenancies",
	}
	var out struct {
		Block struct {
			ID string `json:"id"`
		} `json:"block"`
	}
	deadline := time.Now().Add(listingWait)
	for {
		err := c.Do(ctx, http.MethodPost, "/orgs/"+st.OrgID+"/properties/"+id+"/blocks", body, http.StatusCreated, &out)
		if err == nil {
			st.Data["blocks"] = []string{out.Block.ID}
			return nil
		}
		if !strings.Contains(err.Error(), "answered 404") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stringList reads a list of strings kept in State.Data, whether set by an
// earlier step ([]string) or read back from demo.json ([]any).
func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
