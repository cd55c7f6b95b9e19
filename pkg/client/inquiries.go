package client

import (
	"context"
	"net/http"
)

// CreateInquiry submits a booking-form inquiry (POST /inquiries) and
// returns its id. body is an [InquiryInput] (or any value that encodes to
// its JSON, such as a map).
//
// Creation is not idempotent, so the call is never retried: after a
// transport error the inquiry may or may not exist. Beyond the
// organisation's daily allowance the call fails with an [*Error] of Code
// [CodeRateLimited], whose RetryAfter says when to try again.
func (c *Client) CreateInquiry(ctx context.Context, body any) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := c.Do(ctx, http.MethodPost, "/inquiries", body, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}
