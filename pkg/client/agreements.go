package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// MaxDocumentBytes is the largest agreement document the API archives
// (25 MB).
const MaxDocumentBytes = 25 << 20

// Agreement returns the current agreement of a booking, nil when none has
// been issued. An unknown booking is an [*Error] with Code [CodeNotFound].
func (c *Client) Agreement(ctx context.Context, reservationID string) (*Agreement, error) {
	var out struct {
		Agreement *Agreement `json:"agreement"`
	}
	if err := c.Get(ctx, agreementPath(reservationID), &out); err != nil {
		return nil, err
	}
	return out.Agreement, nil
}

// ReportAgreement reports the caller's whole current view of an external
// envelope (PUT /reservations/{id}/agreement) and returns the current
// agreement. created is true when the report made a new version (a new
// ExternalID, or the first report), false when it updated the current one
// in place. Only an organisation whose contract provider is external may
// report (409 [CodeConflict] otherwise). A report with the same ExternalID
// is idempotent, so the client retries it like a GET.
func (c *Client) ReportAgreement(ctx context.Context, reservationID string, in AgreementInput) (a Agreement, created bool, err error) {
	payload, err := json.Marshal(in)
	if err != nil {
		return Agreement{}, false, fmt.Errorf("encode agreement: %w", err)
	}
	resp, err := c.send(ctx, call{
		method: http.MethodPut, path: agreementPath(reservationID), contentType: "application/json", size: int64(len(payload)),
		body: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil },
	})
	if err != nil {
		return Agreement{}, false, err
	}
	defer resp.Body.Close()
	var out AgreementEnvelope
	if err := decodeJSON(resp.Body, &out); err != nil {
		return Agreement{}, false, fmt.Errorf("report agreement: %w", err)
	}
	return out.Agreement, resp.StatusCode == http.StatusCreated, nil
}

// UploadAgreementDocument archives the executed PDF of the booking's
// current agreement, streamed from pdf without holding it in memory, and
// returns the agreement with its Document set. size is the length of the
// PDF in bytes, sent as Content-Length; pass -1 when unknown and the client
// takes it from a *bytes.Reader, *bytes.Buffer, *strings.Reader or
// *os.File, or otherwise streams the body chunked.
//
// The current agreement must be an external one that is completed (409
// otherwise); a body over [MaxDocumentBytes] is 413, one that is not a PDF
// 415. A second upload replaces the archived copy.
//
// pdf is read once. When it is also an io.Seeker (a file, a bytes.Reader),
// the client can send it again after a 401 or a failed attempt, seeking
// back to where it began; otherwise such a failure is returned.
func (c *Client) UploadAgreementDocument(ctx context.Context, reservationID string, pdf io.Reader, size int64) (Agreement, error) {
	if size < 0 {
		size = lengthOf(pdf)
	}
	if size > MaxDocumentBytes {
		return Agreement{}, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
			Message: fmt.Sprintf("The document has %d bytes, more than the %d the API accepts.", size, MaxDocumentBytes)}
	}
	r := call{method: http.MethodPut, path: agreementPath(reservationID) + "/document", contentType: "application/pdf", size: size}
	if s, ok := pdf.(io.Seeker); ok {
		start, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return Agreement{}, fmt.Errorf("upload agreement document: %w", err)
		}
		r.body = func() (io.ReadCloser, error) {
			if _, err := s.Seek(start, io.SeekStart); err != nil {
				return nil, err
			}
			return io.NopCloser(pdf), nil
		}
	} else {
		r.once = true
		r.body = func() (io.ReadCloser, error) { return io.NopCloser(pdf), nil }
	}
	// Renew the token before sending, not after a 401 that would need the
	// body a second time.
	if !c.basicOnly {
		if _, err := c.accessToken(ctx, ""); err != nil {
			return Agreement{}, err
		}
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return Agreement{}, err
	}
	defer resp.Body.Close()
	var out AgreementEnvelope
	if err := decodeJSON(resp.Body, &out); err != nil {
		return Agreement{}, fmt.Errorf("upload agreement document: %w", err)
	}
	return out.Agreement, nil
}

// lengthOf returns the bytes left in r when its type tells, else -1.
func lengthOf(r io.Reader) int64 {
	switch v := r.(type) {
	case *bytes.Reader:
		return int64(v.Len())
	case *bytes.Buffer:
		return int64(v.Len())
	case *strings.Reader:
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return fi.Size() - pos
	}
	return -1
}

// DownloadAgreementDocument writes the archived PDF of the booking's
// current agreement to w and returns how many bytes it wrote. No archived
// document is an [*Error] with Code [CodeNotFound]. A download that breaks
// off midway returns an error; w then holds a partial copy.
func (c *Client) DownloadAgreementDocument(ctx context.Context, reservationID string, w io.Writer) (int64, error) {
	resp, err := c.send(ctx, call{method: http.MethodGet, path: agreementPath(reservationID) + "/document", accept: "application/pdf"})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("download agreement document: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("download agreement document: %w after %d of %d bytes", io.ErrUnexpectedEOF, n, resp.ContentLength)
	}
	return n, nil
}

func agreementPath(reservationID string) string {
	return "/reservations/" + url.PathEscape(reservationID) + "/agreement"
}
