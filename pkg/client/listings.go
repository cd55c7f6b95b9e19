package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// Listings returns every published listing of the organisation, sorted by
// nickname. The list is complete, not paged and not a delta: a mirror
// deletes the listings that no longer appear.
func (c *Client) Listings(ctx context.Context) ([]Listing, error) {
	var out struct {
		Listings []json.RawMessage `json:"listings"`
	}
	if err := c.Get(ctx, "/listings", &out); err != nil {
		return nil, err
	}
	ls := make([]Listing, len(out.Listings))
	for i, raw := range out.Listings {
		if err := decodeListing(raw, &ls[i]); err != nil {
			return nil, err
		}
	}
	return ls, nil
}

// Listing returns one published listing. An unknown or never-published one
// is an [*Error] with Code [CodeNotFound].
func (c *Client) Listing(ctx context.Context, id string) (Listing, error) {
	var out struct {
		Listing json.RawMessage `json:"listing"`
	}
	if err := c.Get(ctx, "/listings/"+url.PathEscape(id), &out); err != nil {
		return Listing{}, err
	}
	var l Listing
	if err := decodeListing(out.Listing, &l); err != nil {
		return Listing{}, err
	}
	return l, nil
}

func decodeListing(raw json.RawMessage, l *Listing) error {
	if err := json.Unmarshal(raw, l); err != nil {
		return fmt.Errorf("decode listing: %w", err)
	}
	l.Raw = raw
	return nil
}

// Calendar returns the days of a published listing from start to end, both
// included (YYYY-MM-DD, at most 1100 days apart); an empty start is today in
// the listing's zone, an empty end is start plus 730 days. The answer is live:
// it reflects bookings and blocks at the moment of the call.
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
