package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"testing"

	"quarters.dev/pkg/client"
)

// pdfStream produces an n-byte PDF-looking body on the fly, hashing what
// it hands out; it is a plain reader, as a network stream is.
type pdfStream struct {
	n, off int
	sum    hash.Hash
}

func newPDFStream(n int) *pdfStream { return &pdfStream{n: n, sum: sha256.New()} }

func (p *pdfStream) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	const head, tail = "%PDF-1.7\n", "\n%%EOF\n"
	k := 0
	for k < len(b) && p.off < p.n {
		switch {
		case p.off < len(head):
			b[k] = head[p.off]
		case p.off >= p.n-len(tail):
			b[k] = tail[p.off-(p.n-len(tail))]
		default:
			b[k] = byte('a' + p.off%26)
		}
		k++
		p.off++
	}
	p.sum.Write(b[:k])
	return k, nil
}

// TestClientAgreementDocumentRoundTrip reports an external agreement and
// uploads and downloads its executed PDF through the client, as an
// integrator does.
func TestClientAgreementDocumentRoundTrip(t *testing.T) {
	orgID, creds := newOrg(t, "Client Documents Rentals", 1)
	if a := admin(t, "PATCH", "/orgs/"+orgID, `{"contractProvider":"external"}`); a.status != 200 {
		t.Fatalf("set provider: %d %s", a.status, a.raw)
	}
	ctx := tctx(t)
	// No client timeout: a context bounds the transfers instead.
	c := client.New(st.BaseURL, creds[0].id, creds[0].secret, client.WithHTTPClient(&http.Client{}))

	a := admin(t, "POST", "/orgs/"+orgID+"/reservations", `{"propertyId":"prop_cdoc","status":"reserved",
		"guest":{"firstName":"Ann","lastName":"Tenant","email":"ann@example.com"},"checkIn":"2027-03-01","checkOut":"2027-06-01","requiresContract":true}`)
	if a.status == http.StatusServiceUnavailable {
		t.Skipf("the bookings service is not running: %s", a.raw)
	}
	if a.status != 201 {
		t.Fatalf("create reservation: %d %s", a.status, a.raw)
	}
	res := obj(a.body["reservation"])["id"].(string)
	eventually(t, "the agreements service knows reservation "+res, func() (bool, string) {
		ag, err := c.Agreement(ctx, res)
		return err == nil && ag == nil, errString(err)
	})

	var apiErr *client.Error
	if _, err := c.DownloadAgreementDocument(ctx, res, io.Discard); !errors.As(err, &apiErr) || apiErr.Code != client.CodeNotFound {
		t.Fatalf("download before any upload: %v", err)
	}
	in := client.AgreementInput{ExternalID: "env-cdoc-1", Status: client.AgreementCompleted,
		Signers: []client.SignerInput{{Role: "lessee", Name: client.Ptr("Ann Tenant"), Status: "completed"}}}
	ag, created, err := c.ReportAgreement(ctx, res, in)
	if err != nil || !created || ag.Status != client.AgreementCompleted || ag.ExternalID == nil || *ag.ExternalID != "env-cdoc-1" {
		t.Fatalf("report: %+v created=%v %v", ag, created, err)
	}
	if again, created, err := c.ReportAgreement(ctx, res, in); err != nil || created || again.ID != ag.ID || again.Version != ag.Version {
		t.Fatalf("the same report again: %+v created=%v %v", again, created, err)
	}

	const size = 6 << 20
	body := newPDFStream(size)
	up, err := c.UploadAgreementDocument(ctx, res, body, size)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	want := hex.EncodeToString(body.sum.Sum(nil))
	if up.Document == nil || up.Document.Bytes != size {
		t.Fatalf("uploaded document: %+v, want %d bytes", up.Document, size)
	}
	if up.Document.Checksum != "sha256:"+want {
		t.Errorf("uploaded document: checksum %q, want sha256:%s", up.Document.Checksum, want)
	}

	got := sha256.New()
	n, err := c.DownloadAgreementDocument(ctx, res, got)
	if err != nil || n != size || hex.EncodeToString(got.Sum(nil)) != want {
		t.Fatalf("download: %d bytes, sha256 %x, %v", n, got.Sum(nil), err)
	}
	// The completed report confirms the booking, which learns of it from
	// an event.
	eventually(t, "the booking is confirmed", func() (bool, string) {
		r, err := c.Reservation(ctx, res)
		return err == nil && r.Status == client.StatusConfirmed, r.Status + " " + errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
