// Package app holds the agreements service's use cases: reading and reporting
// a reservation's agreement, archiving and serving its executed PDF, and the
// operator's contract request and quarters-issued agreements.
package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/agreements/internal/domain"
)

// MaxDocumentBytes bounds an archived PDF: 25 MB (MiB).
const MaxDocumentBytes = 25 << 20

// PDFContentType is the only media type a document is accepted and served as.
const PDFContentType = "application/pdf"

// Histories stores reservations' agreement histories, one document each.
type Histories interface {
	// Get returns the history of a reservation; a reservation without one
	// gets an empty history.
	Get(ctx context.Context, reservationID string) (domain.History, error)
	// Update loads the history (empty if there is none), lets change modify
	// it and stores it with the events of the effect under a compare-and-set,
	// retrying on a concurrent change. An effect that changes nothing writes
	// nothing. It returns the history as stored.
	Update(ctx context.Context, reservationID, orgID string, change func(*domain.History) (domain.Effect, error)) (domain.History, error)
}

// Org is the projection of an organisation's contract setting.
type Org struct {
	ID       string
	Provider domain.Provider
	Version  int64
}

// Reservation is the projection of a booking: whose it is and its property.
type Reservation struct {
	ID         string
	OrgID      string
	PropertyID string
	Deleted    bool
	Version    int64
}

// Orgs reads the org projection.
type Orgs interface {
	// Get reports found false for an org no event has named yet.
	Get(ctx context.Context, id string) (org Org, found bool, err error)
}

// Reservations reads the reservation projection.
type Reservations interface {
	Get(ctx context.Context, id string) (r Reservation, found bool, err error)
}

// Upload is a document being written to the file store.
type Upload interface {
	io.Writer
	// Close stores the file; FileID names it afterwards.
	Close() error
	// Abort deletes what was written.
	Abort() error
	FileID() string
}

// FileMeta says what a stored document belongs to.
type FileMeta struct {
	ReservationID string
	AgreementID   string
	ContentType   string
}

// Documents stores PDFs.
type Documents interface {
	Create(ctx context.Context, m FileMeta) (Upload, error)
	Open(ctx context.Context, fileID string) (io.ReadCloser, error)
	Delete(ctx context.Context, fileID string) error
}

// Service is the agreements service's application layer.
type Service struct {
	Histories    Histories
	Orgs         Orgs
	Reservations Reservations
	Documents    Documents
	Log          *slog.Logger
	Now          func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// NewID returns an opaque random id with a short prefix.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func newAgreementID() string { return NewID("agr_") }
func newSigningToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// reservation returns the org's reservation, or not_found for an unknown,
// deleted or foreign one.
func (s *Service) reservation(ctx context.Context, orgID, id string) (Reservation, error) {
	r, found, err := s.Reservations.Get(ctx, id)
	if err != nil {
		return Reservation{}, fmt.Errorf("read reservation %s: %w", id, err)
	}
	if !found || r.Deleted || r.OrgID != orgID {
		return Reservation{}, apperr.NotFoundf("No reservation %s.", id)
	}
	return r, nil
}

// provider returns the org's contract provider; an org no event has named
// yet is taken as the default, quarters.
func (s *Service) provider(ctx context.Context, orgID string) (domain.Provider, error) {
	o, found, err := s.Orgs.Get(ctx, orgID)
	if err != nil {
		return "", fmt.Errorf("read org %s: %w", orgID, err)
	}
	if !found {
		return domain.ProviderQuarters, nil
	}
	return o.Provider, nil
}

// RequireOrg answers not found for an org agreements do not know.
func (s *Service) RequireOrg(ctx context.Context, orgID string) error {
	_, err := s.adminOrg(ctx, orgID)
	return err
}

// adminOrg returns the org's provider, or not_found for an unknown org.
func (s *Service) adminOrg(ctx context.Context, orgID string) (domain.Provider, error) {
	o, found, err := s.Orgs.Get(ctx, orgID)
	if err != nil {
		return "", fmt.Errorf("read org %s: %w", orgID, err)
	}
	if !found {
		return "", apperr.NotFoundf("No organisation %s.", orgID)
	}
	return o.Provider, nil
}

func (s *Service) requireExternal(ctx context.Context, orgID string) error {
	p, err := s.provider(ctx, orgID)
	if err != nil {
		return err
	}
	if p != domain.ProviderExternal {
		return apperr.Conflictf("Agreements are written through the API only when the organisation's contract provider is external (Settings > Contracts).")
	}
	return nil
}

// Current returns the reservation's current agreement, nil when none was
// issued.
func (s *Service) Current(ctx context.Context, orgID, reservationID string) (*domain.Agreement, error) {
	if _, err := s.reservation(ctx, orgID, reservationID); err != nil {
		return nil, err
	}
	h, err := s.Histories.Get(ctx, reservationID)
	if err != nil {
		return nil, err
	}
	return h.Current(), nil
}

// Report records an external provider's report. It returns the version that
// recorded it and whether the report issued a new version.
func (s *Service) Report(ctx context.Context, orgID, reservationID string, r domain.Report) (domain.Agreement, bool, error) {
	if err := r.Validate(); err != nil {
		return domain.Agreement{}, false, err
	}
	if _, err := s.reservation(ctx, orgID, reservationID); err != nil {
		return domain.Agreement{}, false, err
	}
	if err := s.requireExternal(ctx, orgID); err != nil {
		return domain.Agreement{}, false, err
	}
	var out domain.Outcome
	h, err := s.Histories.Update(ctx, reservationID, orgID, func(h *domain.History) (domain.Effect, error) {
		var err error
		out, err = domain.ApplyReport(h, r, newAgreementID, s.now())
		return out.Effect, err
	})
	if err != nil {
		return domain.Agreement{}, false, err
	}
	return h.Versions[out.Index], out.Created, nil
}

// Issue issues a quarters agreement from a template (admin).
func (s *Service) Issue(ctx context.Context, orgID, reservationID, templateName string, signers []domain.SignerInput) (domain.Agreement, error) {
	p, err := s.adminOrg(ctx, orgID)
	if err != nil {
		return domain.Agreement{}, err
	}
	if _, err := s.reservation(ctx, orgID, reservationID); err != nil {
		return domain.Agreement{}, err
	}
	if p == domain.ProviderExternal {
		return domain.Agreement{}, apperr.Conflictf("The organisation's contract provider is external: its agreements are reported through the public API.")
	}
	var out domain.Outcome
	h, err := s.Histories.Update(ctx, reservationID, orgID, func(h *domain.History) (domain.Effect, error) {
		var err error
		out, err = domain.Issue(h, templateName, signers, newAgreementID, newSigningToken, s.now())
		return out.Effect, err
	})
	if err != nil {
		return domain.Agreement{}, err
	}
	return h.Versions[out.Index], nil
}

// RequestContract asks the org's external provider for an agreement: it
// emits agreement.requested (admin).
func (s *Service) RequestContract(ctx context.Context, orgID, reservationID string) (domain.ContractRequest, error) {
	p, err := s.adminOrg(ctx, orgID)
	if err != nil {
		return domain.ContractRequest{}, err
	}
	res, err := s.reservation(ctx, orgID, reservationID)
	if err != nil {
		return domain.ContractRequest{}, err
	}
	if p != domain.ProviderExternal {
		return domain.ContractRequest{}, apperr.Conflictf("A contract is requested from the provider only when the organisation's contract provider is external.")
	}
	req := domain.ContractRequest{ReservationID: res.ID, PropertyID: res.PropertyID, RequestedAt: s.now()}
	_, err = s.Histories.Update(ctx, reservationID, orgID, func(h *domain.History) (domain.Effect, error) {
		t := req.RequestedAt
		h.ContractRequestedAt = &t
		return domain.Effect{Requested: &req}, nil
	})
	return req, err
}

// Archive streams an executed PDF into the file store and puts it next to
// the current agreement, replacing an earlier copy. The body is never held
// in memory: it is hashed, counted and checked (a %PDF- header, a %%EOF
// trailer) while it is written.
func (s *Service) Archive(ctx context.Context, orgID, reservationID, contentType string, body io.Reader) (domain.Agreement, error) {
	if _, err := s.reservation(ctx, orgID, reservationID); err != nil {
		return domain.Agreement{}, err
	}
	h, err := s.Histories.Get(ctx, reservationID)
	if err != nil {
		return domain.Agreement{}, err
	}
	cur := h.Current()
	if cur == nil {
		return domain.Agreement{}, apperr.NotFoundf("The reservation has no agreement.")
	}
	if err := s.requireExternal(ctx, orgID); err != nil {
		return domain.Agreement{}, err
	}
	if err := domain.CheckArchivable(cur); err != nil {
		return domain.Agreement{}, err
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != PDFContentType {
		return domain.Agreement{}, apperr.New(apperr.UnsupportedMediaType, "The document must be sent as Content-Type: application/pdf.")
	}

	doc, fileID, err := s.store(ctx, body, FileMeta{ReservationID: reservationID, AgreementID: cur.ID, ContentType: PDFContentType})
	if err != nil {
		return domain.Agreement{}, err
	}
	doc.FileID = fileID
	doc.UploadedAt = s.now()
	var replaced *domain.Document
	stored, err := s.Histories.Update(ctx, reservationID, orgID, func(h *domain.History) (domain.Effect, error) {
		var eff domain.Effect
		var err error
		replaced, eff, err = domain.Archive(h, cur.ID, doc, doc.UploadedAt)
		return eff, err
	})
	if err != nil {
		s.deleteFile(ctx, fileID)
		return domain.Agreement{}, err
	}
	if replaced != nil && replaced.FileID != fileID {
		s.deleteFile(ctx, replaced.FileID)
	}
	return *stored.Current(), nil
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// deleteFile removes a file nothing refers to; a failure leaves it to the
// periodic sweep.
func (s *Service) deleteFile(ctx context.Context, fileID string) {
	if err := s.Documents.Delete(context.WithoutCancel(ctx), fileID); err != nil {
		s.log().Warn("delete unreferenced document; the sweep will retry", "file", fileID, "error", err)
	}
}

var (
	pdfHeader  = []byte("%PDF-")
	pdfTrailer = []byte("%%EOF")
)

// trailerWindow is how far from the end the %%EOF marker may sit (PDF
// readers look in the last 1024 bytes).
const trailerWindow = 1024

// store writes body to a new file, checking it on the way. Anything that
// fails leaves no file behind.
func (s *Service) store(ctx context.Context, body io.Reader, meta FileMeta) (domain.Document, string, error) {
	notPDF := apperr.New(apperr.UnsupportedMediaType, "The body is not a PDF: it must start with %%PDF- and end with %%%%EOF.")
	head := make([]byte, len(pdfHeader))
	n, err := io.ReadFull(body, head)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Document{}, "", notPDF
	case err != nil:
		return domain.Document{}, "", bodyError(err)
	case !bytes.Equal(head[:n], pdfHeader):
		return domain.Document{}, "", notPDF
	}
	up, err := s.Documents.Create(ctx, meta)
	if err != nil {
		return domain.Document{}, "", err
	}
	w := &checker{dst: up, hash: sha256.New()}
	if _, err := w.Write(head); err != nil {
		_ = up.Abort()
		return domain.Document{}, "", err
	}
	buf := make([]byte, 32<<10)
	_, err = io.CopyBuffer(w, io.LimitReader(body, MaxDocumentBytes+1-int64(len(head))), buf)
	switch {
	case err != nil && w.writeErr == nil:
		err = bodyError(err)
	case err == nil && w.n > MaxDocumentBytes:
		err = tooLarge()
	case err == nil && !bytes.Contains(w.tail, pdfTrailer):
		err = notPDF
	}
	if err != nil {
		if aerr := up.Abort(); aerr != nil {
			s.log().Warn("abort document upload; the sweep will remove it", "error", aerr)
		}
		return domain.Document{}, "", err
	}
	if err := up.Close(); err != nil {
		_ = up.Abort()
		return domain.Document{}, "", fmt.Errorf("store document: %w", err)
	}
	return domain.Document{
		SHA256:      hex.EncodeToString(w.hash.Sum(nil)),
		Bytes:       w.n,
		ContentType: PDFContentType,
	}, up.FileID(), nil
}

func tooLarge() error {
	return apperr.New(apperr.PayloadTooLarge, "The document is larger than 25 MB (%d bytes).", MaxDocumentBytes)
}

// bodyError maps a failure reading the request body: an oversized body is
// payload_too_large, anything else is the client's broken request.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	return apperr.Wrap(apperr.InvalidRequest, err, "The body could not be read in full.")
}

// checker passes bytes on while hashing and counting them and keeping the
// last trailerWindow bytes.
type checker struct {
	dst      io.Writer
	hash     hash.Hash
	n        int64
	tail     []byte
	writeErr error
}

func (c *checker) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.n > MaxDocumentBytes {
		// The limit reader lets one byte past the limit through, so that an
		// oversized body is told apart from one of exactly the limit.
		return len(p), nil
	}
	c.hash.Write(p)
	if len(p) >= trailerWindow {
		c.tail = append(c.tail[:0], p[len(p)-trailerWindow:]...)
	} else {
		c.tail = append(c.tail, p...)
		if over := len(c.tail) - trailerWindow; over > 0 {
			c.tail = append(c.tail[:0], c.tail[over:]...)
		}
	}
	if _, err := c.dst.Write(p); err != nil {
		c.writeErr = fmt.Errorf("store document: %w", err)
		return 0, c.writeErr
	}
	return len(p), nil
}

// DocumentReader is an archived PDF being read.
type DocumentReader struct {
	Document domain.Document
	io.ReadCloser
}

// Document opens the archived PDF of the current agreement.
func (s *Service) Document(ctx context.Context, orgID, reservationID string) (DocumentReader, error) {
	cur, err := s.Current(ctx, orgID, reservationID)
	if err != nil {
		return DocumentReader{}, err
	}
	if cur == nil || cur.Document == nil {
		return DocumentReader{}, apperr.NotFoundf("No document is archived for the current agreement.")
	}
	rc, err := s.Documents.Open(ctx, cur.Document.FileID)
	if err != nil {
		return DocumentReader{}, err
	}
	return DocumentReader{Document: *cur.Document, ReadCloser: rc}, nil
}

// StoredFile is an archived file as the sweep sees it.
type StoredFile struct {
	ID            string
	ReservationID string
	UploadedAt    time.Time
}

// Sweepable is the part of the document store the sweep needs.
type Sweepable interface {
	FilesBefore(ctx context.Context, t time.Time) ([]StoredFile, error)
	DeleteStrayChunks(ctx context.Context, t time.Time) (int, error)
}

// SweepDocuments deletes files that no agreement version refers to and
// chunks without a file, once they are older than age: what a process that
// stopped between an upload and its bookkeeping leaves behind. Younger ones
// may belong to an upload in progress.
func (s *Service) SweepDocuments(ctx context.Context, store Sweepable, age time.Duration) (int, error) {
	cutoff := s.now().Add(-age)
	files, err := store.FilesBefore(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, f := range files {
		h, err := s.Histories.Get(ctx, f.ReservationID)
		if err != nil {
			return removed, err
		}
		if referenced(h, f.ID) {
			continue
		}
		if err := s.Documents.Delete(ctx, f.ID); err != nil {
			return removed, err
		}
		removed++
	}
	n, err := store.DeleteStrayChunks(ctx, cutoff)
	return removed + n, err
}

func referenced(h domain.History, fileID string) bool {
	for _, a := range h.Versions {
		if a.Document != nil && a.Document.FileID == fileID {
			return true
		}
	}
	return false
}
