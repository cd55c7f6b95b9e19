// Package ports serves the agreements service: the public agreement and
// document endpoints, the admin contract request and quarters-issued
// agreements, and the consumer of org and reservation events.
package ports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/domain"
)

// Route templates.
const (
	AgreementPath = "/api/v1/reservations/:id/agreement"
	DocumentPath  = AgreementPath + "/document"
)

// BodyLimits lets a document body reach the spec's 25 MB; every other body
// keeps the default bound.
var BodyLimits = map[string]int64{"PUT " + DocumentPath: app.MaxDocumentBytes}

// Routes installs the agreements service's routes on e. Every other path and
// method answers the JSON 404 of pkg/httpx.
func Routes(e *gin.Engine, svc *app.Service, tokens *authn.Store, adminToken string) {
	h := &handlers{svc: svc}
	pub := e.Group("", authn.Middleware(tokens))
	pub.GET(AgreementPath, h.get)
	pub.PUT(AgreementPath, h.report)
	pub.PUT(DocumentPath, h.putDocument)
	pub.GET(DocumentPath, h.getDocument)

	a := e.Group("/admin/v1/orgs/:orgId/reservations/:id", authn.Admin(adminToken), httpx.OrgFirst(svc.RequireOrg))
	a.POST("/request-contract", h.requestContract)
	a.POST("/agreements", h.issue)
}

type handlers struct{ svc *app.Service }

func org(c *gin.Context) string { return authn.FromContext(c).OrgID }

func (h *handlers) get(c *gin.Context) {
	a, err := h.svc.Current(c.Request.Context(), org(c), c.Param("id"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	if a == nil {
		c.JSON(http.StatusOK, gin.H{"agreement": nil})
		return
	}
	c.JSON(http.StatusOK, gin.H{"agreement": AgreementJSON(*a)})
}

func (h *handlers) report(c *gin.Context) {
	r, err := decodeReport(c)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	a, created, err := h.svc.Report(c.Request.Context(), org(c), c.Param("id"), r)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, gin.H{"agreement": AgreementJSON(a)})
}

func (h *handlers) putDocument(c *gin.Context) {
	a, err := h.svc.Archive(c.Request.Context(), org(c), c.Param("id"), c.GetHeader("Content-Type"), c.Request.Body)
	if err != nil {
		if apperr.Is(err, apperr.PayloadTooLarge) || apperr.Is(err, apperr.UnsupportedMediaType) {
			// The rest of the body is not read: close the connection
			// rather than drain it.
			c.Header("Connection", "close")
		}
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"agreement": AgreementJSON(a)})
}

func (h *handlers) getDocument(c *gin.Context) {
	d, err := h.svc.Document(c.Request.Context(), org(c), c.Param("id"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	defer d.Close()
	hdr := c.Writer.Header()
	hdr.Set("Content-Type", app.PDFContentType)
	hdr.Set("Content-Length", strconv.FormatInt(d.Document.Bytes, 10))
	c.Status(http.StatusOK)
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(c.Writer, d, buf); err != nil {
		// The status line is out: all that is left is to cut the
		// response short so the client sees a truncated body.
		httpx.Logger(c).WarnContext(c.Request.Context(), "stream document", "error", err, "request_id", httpx.RequestID(c))
		panic(http.ErrAbortHandler)
	}
}

func (h *handlers) requestContract(c *gin.Context) {
	req, err := h.svc.RequestContract(c.Request.Context(), c.Param("orgId"), c.Param("id"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"contractRequest": gin.H{
		"reservationId": req.ReservationID,
		"propertyId":    req.PropertyID,
		"requestedAt":   req.RequestedAt.UTC(),
	}})
}

func (h *handlers) issue(c *gin.Context) {
	var in struct {
		TemplateName json.RawMessage `json:"templateName"`
		Signers      json.RawMessage `json:"signers"`
	}
	if err := httpx.DecodeJSON(c, &in); err != nil {
		httpx.Error(c, err)
		return
	}
	name, err := str(in.TemplateName, "templateName", maxTemplateName)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	if !name.Set || name.Value == nil || *name.Value == "" {
		httpx.Error(c, apperr.Invalid("Field templateName is required."))
		return
	}
	var signers []domain.SignerInput
	err = eachObject(in.Signers, "signers", func(i int, f map[string]json.RawMessage) error {
		var s domain.SignerInput
		for key, dst := range map[string]*string{"role": &s.Role, "name": &s.Name, "email": &s.Email} {
			v, err := str(f[key], fmt.Sprintf("signers[%d].%s", i, key), maxShort)
			if err != nil {
				return err
			}
			if v.Value != nil {
				*dst = *v.Value
			}
		}
		signers = append(signers, s)
		return nil
	})
	if err != nil {
		httpx.Error(c, err)
		return
	}
	a, err := h.svc.Issue(c.Request.Context(), c.Param("orgId"), c.Param("id"), *name.Value, signers)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"agreement": AgreementJSON(a)})
}

// Bounds on reported text.
const (
	maxShort        = 200
	maxExternalID   = 200
	maxTemplateName = 200
	maxURL          = 2048
	maxError        = 2000
	maxSigners      = 20
)

// decodeReport reads an AgreementInput. Fields beyond those the spec names
// are ignored.
func decodeReport(c *gin.Context) (domain.Report, error) {
	var in struct {
		ExternalID  json.RawMessage `json:"externalId"`
		Status      json.RawMessage `json:"status"`
		Error       json.RawMessage `json:"error"`
		DocumentURL json.RawMessage `json:"documentUrl"`
		Signers     json.RawMessage `json:"signers"`
	}
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return domain.Report{}, err
	}
	var r domain.Report
	ext, err := str(in.ExternalID, "externalId", maxExternalID)
	if err != nil {
		return r, err
	}
	r.ExternalID = ext.Value
	st, err := str(in.Status, "status", maxShort)
	if err != nil {
		return r, err
	}
	if st.Value != nil {
		r.Status = domain.Status(*st.Value)
	}
	if r.Error, err = str(in.Error, "error", maxError); err != nil {
		return r, err
	}
	if r.DocumentURL, err = str(in.DocumentURL, "documentUrl", maxURL); err != nil {
		return r, err
	}
	err = eachObject(in.Signers, "signers", func(i int, f map[string]json.RawMessage) error {
		var s domain.SignerReport
		role, err := str(f["role"], fmt.Sprintf("signers[%d].role", i), maxShort)
		if err != nil {
			return err
		}
		if role.Value != nil {
			s.Role = *role.Value
		}
		for key, dst := range map[string]*domain.Opt[string]{
			"name": &s.Name, "email": &s.Email, "status": &s.Status, "declineReason": &s.DeclineReason,
		} {
			if *dst, err = str(f[key], fmt.Sprintf("signers[%d].%s", i, key), maxShort); err != nil {
				return err
			}
		}
		if s.SigningURL, err = str(f["signingUrl"], fmt.Sprintf("signers[%d].signingUrl", i), maxURL); err != nil {
			return err
		}
		r.Signers = append(r.Signers, s)
		return nil
	})
	return r, err
}

// str reads an optional string field: absent, null or a string of at most
// limit characters.
func str(raw json.RawMessage, path string, limit int) (domain.Opt[string], error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return domain.Opt[string]{}, nil
	}
	if string(raw) == "null" {
		return domain.Opt[string]{Set: true}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return domain.Opt[string]{}, apperr.Invalid("Field %s must be a string.", path)
	}
	if n := len([]rune(s)); n > limit {
		return domain.Opt[string]{}, apperr.Invalid("Field %s must be at most %d characters.", path, limit)
	}
	return domain.Of(s), nil
}

// eachObject walks an optional array of objects.
func eachObject(raw json.RawMessage, path string, fn func(i int, fields map[string]json.RawMessage) error) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return apperr.Invalid("Field %s must be an array.", path)
	}
	if len(items) > maxSigners {
		return apperr.Invalid("Field %s may list at most %d entries.", path, maxSigners)
	}
	for i, it := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(it, &fields); err != nil || fields == nil {
			return apperr.Invalid("Field %s[%d] must be an object.", path, i)
		}
		if err := fn(i, fields); err != nil {
			return err
		}
	}
	return nil
}

// Agreement is the public API's Agreement.
type Agreement struct {
	ID           string     `json:"id"`
	Version      int        `json:"version"`
	Provider     string     `json:"provider"`
	ExternalID   *string    `json:"externalId"`
	Status       string     `json:"status"`
	TemplateName *string    `json:"templateName"`
	SentAt       *time.Time `json:"sentAt"`
	CompletedAt  *time.Time `json:"completedAt"`
	DeclinedAt   *time.Time `json:"declinedAt"`
	VoidedAt     *time.Time `json:"voidedAt"`
	Error        *string    `json:"error"`
	DocumentURL  *string    `json:"documentUrl"`
	Document     *Document  `json:"document"`
	Signers      []Signer   `json:"signers"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
}

// Document is the public API's archived PDF description: its checksum
// (`sha256:` and lowercase hex), size, type and when it was archived.
type Document struct {
	Checksum    string    `json:"checksum"`
	Bytes       int64     `json:"bytes"`
	ContentType string    `json:"contentType"`
	ArchivedAt  time.Time `json:"archivedAt"`
}

// Signer is the public API's Signer.
type Signer struct {
	Role          string     `json:"role"`
	Name          string     `json:"name"`
	Email         string     `json:"email"`
	Status        string     `json:"status"`
	SigningURL    *string    `json:"signingUrl"`
	ViewedAt      *time.Time `json:"viewedAt"`
	CompletedAt   *time.Time `json:"completedAt"`
	DeclinedAt    *time.Time `json:"declinedAt"`
	DeclineReason *string    `json:"declineReason"`
}

// AgreementJSON renders one version. A quarters agreement's signers never
// show a signing link.
func AgreementJSON(a domain.Agreement) Agreement {
	out := Agreement{
		ID: a.ID, Version: a.Version, Provider: string(a.Provider), ExternalID: a.ExternalID,
		Status: string(a.Status), TemplateName: a.TemplateName,
		SentAt: a.SentAt, CompletedAt: a.CompletedAt, DeclinedAt: a.DeclinedAt, VoidedAt: a.VoidedAt,
		Error: a.Error, DocumentURL: a.DocumentURL, Signers: make([]Signer, 0, len(a.Signers)),
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
	}
	if d := a.Document; d != nil {
		out.Document = &Document{Checksum: "sha256:" + d.SHA256, Bytes: d.Bytes, ContentType: d.ContentType, ArchivedAt: d.UploadedAt.UTC()}
	}
	for _, s := range a.Signers {
		j := Signer{
			Role: s.Role, Name: s.Name, Email: s.Email, Status: s.Status,
			ViewedAt: s.ViewedAt, CompletedAt: s.CompletedAt, DeclinedAt: s.DeclinedAt, DeclineReason: s.DeclineReason,
		}
		if a.Provider == domain.ProviderExternal {
			j.SigningURL = s.SigningURL
		}
		out.Signers = append(out.Signers, j)
	}
	return out
}
