package client

import (
	"context"
	"net/url"
)

// CalendarDay is one day of a listing's calendar.
type CalendarDay struct {
	Date            string `json:"date"`
	Status          string `json:"status"`
	MinNights       int    `json:"minNights"`
	IsBaseMinNights bool   `json:"isBaseMinNights"`
}

// Calendar returns the days of a published listing from start to end, both
// included (YYYY-MM-DD); an empty start is today in the listing's zone, an
// empty end is start plus 730 days.
func (c *Client) Calendar(ctx context.Context, listingID, start, end string) ([]CalendarDay, error) {
	q := url.Values{}
	if start != "" {
		q.Set("start", start)
	}
	if end != "" {
		q.Set("end", end)
	}
	path := "/listings/" + url.PathEscape(listingID) + "/calendar"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out struct {
		Days []CalendarDay `json:"days"`
	}
	if err := c.Get(ctx, path, &out); err != nil {
		return nil, err
	}
	return out.Days, nil
}
