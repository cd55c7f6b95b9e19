package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/client"
)

func pdfOf(n int) string {
	return "%PDF-1.7\n" + strings.Repeat("q", n-16) + "\n%%EOF\n"
}

// onlyReader hides every method but Read, as a network stream would.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestDocumentUploadAndDownload(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	ctx := context.Background()
	if _, err := c.DownloadAgreementDocument(ctx, "res_1", io.Discard); !isCode(err, client.CodeNotFound) {
		t.Fatalf("nothing archived: %v", err)
	}
	pdf := pdfOf(300_000)
	sum := sha256.Sum256([]byte(pdf))
	for name, tc := range map[string]struct {
		body    io.Reader
		size    int64
		length  int64
		chunked bool
	}{
		"strings.Reader, size taken from it": {strings.NewReader(pdf), -1, int64(len(pdf)), false},
		"a stream of known size":             {onlyReader{strings.NewReader(pdf)}, int64(len(pdf)), int64(len(pdf)), false},
		"a stream of unknown size":           {onlyReader{strings.NewReader(pdf)}, -1, -1, true},
	} {
		api.mu.Lock()
		api.uploads = nil
		api.mu.Unlock()
		a, err := c.UploadAgreementDocument(ctx, "res_1", tc.body, tc.size)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Document == nil || a.Document.Checksum != "sha256:"+hex.EncodeToString(sum[:]) || a.Document.Bytes != int64(len(pdf)) {
			t.Errorf("%s: document %+v", name, a.Document)
		}
		api.mu.Lock()
		up := api.uploads
		api.mu.Unlock()
		if len(up) != 1 || up[0].contentLength != tc.length || up[0].chunked != tc.chunked || up[0].bytes != int64(len(pdf)) {
			t.Errorf("%s: the server saw %+v", name, up)
		}
	}
	var out bytes.Buffer
	n, err := c.DownloadAgreementDocument(ctx, "res_1", &out)
	if err != nil || n != int64(len(pdf)) || out.String() != pdf {
		t.Fatalf("download: %d bytes, %v", n, err)
	}
	if _, err := c.UploadAgreementDocument(ctx, "res_1", strings.NewReader("x"), client.MaxDocumentBytes+1); !isCode(err, client.CodePayloadTooLarge) {
		t.Fatalf("over 25 MB: %v", err)
	}
}

// A seekable body is sent again after a 401; a plain stream cannot be, so
// the client makes sure of its token before it starts.
func TestDocumentUploadAfterRevocation(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	ctx := context.Background()
	pdf := pdfOf(10_000)
	if _, err := c.FetchToken(ctx); err != nil {
		t.Fatal(err)
	}
	api.revokeAll()
	if _, err := c.UploadAgreementDocument(ctx, "res_1", strings.NewReader(pdf), -1); err != nil {
		t.Fatalf("seekable body after revocation: %v", err)
	}
	api.revokeAll()
	_, err := c.UploadAgreementDocument(ctx, "res_1", onlyReader{strings.NewReader(pdf)}, int64(len(pdf)))
	if !isCode(err, client.CodeUnauthorized) {
		t.Fatalf("stream after revocation: %v", err)
	}
	// The failed call renewed the token; the next stream goes through.
	if _, err := c.UploadAgreementDocument(ctx, "res_1", onlyReader{strings.NewReader(pdf)}, int64(len(pdf))); err != nil {
		t.Fatal(err)
	}
	if n := api.mintedCount(); n != 3 {
		t.Errorf("%d token requests, want 3", n)
	}
}

// The upload streams: the server reads the first bytes before the caller
// has produced the rest. A client that buffered the body would wait for
// the end of it before sending anything, and this test would fail.
func TestDocumentUploadStreams(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/oauth2/token" {
			writeJSON(w, 200, map[string]any{"token_type": "Bearer", "access_token": "t", "expires_in": 86400})
			return
		}
		head := make([]byte, 8)
		if _, err := io.ReadFull(r.Body, head); err != nil || string(head) != "%PDF-1.7" {
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "message": "no head"})
			return
		}
		close(started)
		n, _ := io.Copy(io.Discard, r.Body)
		writeJSON(w, 200, map[string]any{"agreement": map[string]any{"id": "agr_1", "document": map[string]any{"checksum": "sha256:x", "bytes": 8 + n}}})
	}))
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("%PDF-1.7"))
		select {
		case <-started:
			pw.Write(bytes.Repeat([]byte("q"), 1<<20))
			pw.Close()
		case <-time.After(30 * time.Second):
			pw.CloseWithError(errors.New("the server saw no byte before the body ended: the client buffers"))
		}
	}()
	c := client.New(srv.URL+"/api/v1", "id", "secret")
	a, err := c.UploadAgreementDocument(context.Background(), "res_1", pr, -1)
	if err != nil || a.Document == nil || a.Document.Bytes != 8+1<<20 {
		t.Fatalf("%+v %v", a.Document, err)
	}
}

func isCode(err error, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == code
}
