// Package ports serves the bookings service: the public reservation reads and
// inquiry submission, the operator routes, and the consumers of org, listing
// and agreement events.
package ports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/bookings/internal/app"
	"quarters.dev/services/bookings/internal/domain"
)

// Routes installs the public routes behind auth and the admin routes behind
// the admin token. Every other path under /api/v1/reservations and
// /api/v1/inquiries falls to the engine's JSON 404.
func Routes(e *gin.Engine, svc *app.Service, auth gin.HandlerFunc, adminToken, dashboardURL string) {
	h := &handlers{svc: svc, dashboard: strings.TrimRight(dashboardURL, "/")}
	api := e.Group("/api/v1", auth)
	api.GET("/reservations", h.list)
	api.GET("/reservations/:id", h.get)
	api.POST("/inquiries", h.createInquiry)

	a := e.Group("/admin/v1/orgs/:orgId", authn.Admin(adminToken), httpx.OrgFirst(svc.CheckOrg))
	a.POST("/reservations", h.createReservation)
	a.PATCH("/reservations/:id", h.updateReservation)
	a.DELETE("/reservations/:id", h.deleteReservation)
	a.GET("/inquiries", h.listInquiries)
	a.POST("/inquiries/:inquiryId/convert", h.convert)
}

type handlers struct {
	svc       *app.Service
	dashboard string
}

func (h *handlers) list(c *gin.Context) {
	q, err := domain.ParseListQuery(authn.FromContext(c).OrgID, c.Request.URL.Query())
	if err != nil {
		httpx.Error(c, err)
		return
	}
	page, err := h.svc.ListReservations(c.Request.Context(), q)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]ReservationJSON, len(page.Reservations))
	for i, v := range page.Reservations {
		out[i] = h.reservation(v)
	}
	c.JSON(http.StatusOK, gin.H{"reservations": out, "total": page.Total, "limit": q.Limit, "skip": q.Skip})
}

func (h *handlers) get(c *gin.Context) {
	v, err := h.svc.GetReservation(c.Request.Context(), authn.FromContext(c).OrgID, c.Param("id"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"reservation": h.reservation(v)})
}

// body reads the request body as one JSON object.
func body(c *gin.Context, optional bool) (*fields, error) {
	var raw json.RawMessage
	decode := httpx.DecodeJSON
	if optional {
		decode = httpx.DecodeOptionalJSON
	}
	if err := decode(c, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		raw = json.RawMessage("{}")
	}
	return object(raw, "")
}

func (h *handlers) createInquiry(c *gin.Context) {
	var raw json.RawMessage
	if err := httpx.DecodeJSON(c, &raw); err != nil {
		httpx.Error(c, err)
		return
	}
	f, err := object(raw, "")
	if err != nil {
		httpx.Error(c, err)
		return
	}
	in, err := inquiryInput(f)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	orgID := authn.FromContext(c).OrgID
	var id string
	if key, ok := c.Request.Header["Idempotency-Key"]; ok {
		k, kerr := idempotencyKey(key, raw)
		if kerr != nil {
			httpx.Error(c, kerr)
			return
		}
		id, err = h.svc.CreateInquiryOnce(c.Request.Context(), orgID, in, k)
	} else {
		id, err = h.svc.CreateInquiry(c.Request.Context(), orgID, in)
	}
	if err != nil {
		var rl *app.RateLimitedError
		if errors.As(err, &rl) {
			c.Header("Retry-After", strconv.Itoa(rl.RetryAfterSeconds()))
		}
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"id": id})
}

// idempotencyKey checks the Idempotency-Key header: one printable ASCII
// value of at most 255 characters. The body is hashed in its compact form.
func idempotencyKey(values []string, raw json.RawMessage) (app.IdempotencyKey, error) {
	if len(values) != 1 || values[0] == "" || len(values[0]) > 255 {
		return app.IdempotencyKey{}, apperr.Invalid("Header Idempotency-Key must be one value of 1 to 255 characters.")
	}
	for _, r := range values[0] {
		if r < 0x21 || r > 0x7e {
			return app.IdempotencyKey{}, apperr.Invalid("Header Idempotency-Key must be printable ASCII without spaces.")
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		b.Write(raw)
	}
	sum := sha256.Sum256(b.Bytes())
	return app.IdempotencyKey{Key: values[0], BodyHash: hex.EncodeToString(sum[:])}, nil
}

func (h *handlers) createReservation(c *gin.Context) {
	f, err := body(c, false)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	in, err := reservationInput(f)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	v, err := h.svc.CreateReservation(c.Request.Context(), c.Param("orgId"), in)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"reservation": h.adminReservation(v)})
}

func (h *handlers) updateReservation(c *gin.Context) {
	f, err := body(c, false)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	in, err := reservationInput(f)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	v, err := h.svc.UpdateReservation(c.Request.Context(), c.Param("orgId"), c.Param("id"), in)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"reservation": h.adminReservation(v)})
}

func (h *handlers) deleteReservation(c *gin.Context) {
	if err := h.svc.DeleteReservation(c.Request.Context(), c.Param("orgId"), c.Param("id")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *handlers) listInquiries(c *gin.Context) {
	qs, err := h.svc.ListInquiries(c.Request.Context(), c.Param("orgId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]InquiryJSON, len(qs))
	for i, q := range qs {
		out[i] = inquiryOut(q)
	}
	c.JSON(http.StatusOK, gin.H{"inquiries": out})
}

func (h *handlers) convert(c *gin.Context) {
	f, err := body(c, true)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	in, err := reservationInput(f)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	v, err := h.svc.ConvertInquiry(c.Request.Context(), c.Param("orgId"), c.Param("inquiryId"), in)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"reservation": h.adminReservation(v)})
}

// ReservationJSON is the public Reservation.
type ReservationJSON struct {
	ID               string         `json:"id"`
	Status           string         `json:"status"`
	PropertyID       string         `json:"propertyId"`
	Property         *PropertyJSON  `json:"property"`
	Guest            GuestJSON      `json:"guest"`
	CheckIn          string         `json:"checkIn"`
	CheckOut         string         `json:"checkOut"`
	Nights           int            `json:"nights"`
	Adults           *int           `json:"adults"`
	Children         *int           `json:"children"`
	Infants          *int           `json:"infants"`
	Pets             bool           `json:"pets"`
	Pricing          PricingJSON    `json:"pricing"`
	RequiresContract bool           `json:"requiresContract"`
	InvoicePaid      bool           `json:"invoicePaid"`
	Agreement        *AgreementJSON `json:"agreement"`
	OnContract       *ContactJSON   `json:"onContract,omitempty"`
	Staying          *ContactJSON   `json:"staying,omitempty"`
	DashboardURL     string         `json:"dashboardUrl"`
	InquiredAt       *time.Time     `json:"inquiredAt"`
	ReservedAt       *time.Time     `json:"reservedAt"`
	ConfirmedAt      *time.Time     `json:"confirmedAt"`
	CancelledAt      *time.Time     `json:"cancelledAt"`
	CreatedAt        time.Time      `json:"createdAt"`
	UpdatedAt        time.Time      `json:"updatedAt"`
}

// AdminReservationJSON is the admin API's booking: the public shape plus
// the inquiry it came from and the operator's notes.
type AdminReservationJSON struct {
	ReservationJSON
	InquiryID *string `json:"inquiryId"`
	Notes     *string `json:"notes"`
}

// PropertyJSON is the public PropertyIdentity.
type PropertyJSON struct {
	ID        string      `json:"id"`
	Nickname  string      `json:"nickname"`
	Slug      string      `json:"slug"`
	Address   AddressJSON `json:"address"`
	OwnerName *string     `json:"ownerName"`
	Timezone  string      `json:"timezone"`
}

// AddressJSON is a PropertyIdentity's address.
type AddressJSON struct {
	Street     *string `json:"street"`
	PostalCode *string `json:"postalCode"`
	City       string  `json:"city"`
	Country    string  `json:"country"`
}

// GuestJSON is the public Guest.
type GuestJSON struct {
	ID        string  `json:"id"`
	FirstName *string `json:"firstName"`
	LastName  *string `json:"lastName"`
	Name      string  `json:"name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	Company   *string `json:"company"`
}

// ContactJSON is an onContract or staying block.
type ContactJSON struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Phone   *string `json:"phone"`
	Company *string `json:"company"`
}

// PricingJSON is a booking's pricing snapshot.
type PricingJSON struct {
	Currency       string  `json:"currency"`
	RentCents      *int64  `json:"rentCents"`
	UtilitiesCents *int64  `json:"utilitiesCents"`
	FurnitureCents *int64  `json:"furnitureCents"`
	MonthlyCents   *int64  `json:"monthlyCents"`
	DepositCents   *int64  `json:"depositCents"`
	MinStayMonths  *int    `json:"minStayMonths"`
	RateBasis      *string `json:"rateBasis"`
}

// AgreementJSON is the public Agreement.
type AgreementJSON struct {
	ID           string        `json:"id"`
	Version      int           `json:"version"`
	Provider     string        `json:"provider"`
	ExternalID   *string       `json:"externalId"`
	Status       string        `json:"status"`
	TemplateName *string       `json:"templateName"`
	SentAt       *time.Time    `json:"sentAt"`
	CompletedAt  *time.Time    `json:"completedAt"`
	DeclinedAt   *time.Time    `json:"declinedAt"`
	VoidedAt     *time.Time    `json:"voidedAt"`
	Error        *string       `json:"error"`
	DocumentURL  *string       `json:"documentUrl"`
	Document     *DocumentJSON `json:"document"`
	Signers      []SignerJSON  `json:"signers"`
	CreatedAt    time.Time     `json:"createdAt"`
	UpdatedAt    time.Time     `json:"updatedAt"`
}

// DocumentJSON describes the archived PDF.
type DocumentJSON struct {
	Checksum    string     `json:"checksum"`
	ContentType string     `json:"contentType"`
	Bytes       int64      `json:"bytes"`
	ArchivedAt  *time.Time `json:"archivedAt,omitempty"`
}

// SignerJSON is the public Signer.
type SignerJSON struct {
	Role          string     `json:"role"`
	Name          *string    `json:"name"`
	Email         *string    `json:"email"`
	Status        string     `json:"status"`
	SigningURL    *string    `json:"signingUrl"`
	ViewedAt      *time.Time `json:"viewedAt"`
	CompletedAt   *time.Time `json:"completedAt"`
	DeclinedAt    *time.Time `json:"declinedAt"`
	DeclineReason *string    `json:"declineReason"`
}

func contactOut(c *domain.Contact) *ContactJSON {
	if c == nil {
		return nil
	}
	return &ContactJSON{Name: c.Name, Email: c.Email, Phone: c.Phone, Company: c.Company}
}

func (h *handlers) reservation(v app.ReservationView) ReservationJSON {
	r := v.Reservation
	basis := string(r.Pricing.Basis)
	if basis == "" {
		basis = string(domain.BasisMonthly)
	}
	j := ReservationJSON{
		ID: r.ID, Status: string(r.Status), PropertyID: r.PropertyID,
		Guest: GuestJSON{ID: r.Guest.ID, FirstName: r.Guest.FirstName, LastName: r.Guest.LastName, Name: r.Guest.Name(),
			Email: r.Guest.Email, Phone: r.Guest.Phone, Company: r.Guest.Company},
		CheckIn: r.CheckIn.String(), CheckOut: r.CheckOut.String(), Nights: r.Nights(),
		Adults: r.Adults, Children: r.Children, Infants: r.Infants, Pets: r.Pets,
		Pricing: PricingJSON{Currency: "EUR", RentCents: r.Pricing.RentCents, UtilitiesCents: r.Pricing.UtilitiesCents,
			FurnitureCents: r.Pricing.FurnitureCents, MonthlyCents: r.Pricing.MonthlyCents(), DepositCents: r.Pricing.DepositCents,
			MinStayMonths: r.Pricing.MinStayMonths, RateBasis: &basis},
		RequiresContract: r.RequiresContract, InvoicePaid: r.InvoicePaid,
		OnContract: contactOut(r.OnContract), Staying: contactOut(r.Staying),
		DashboardURL: h.dashboard + "/reservations/" + r.ID,
		InquiredAt:   r.InquiredAt, ReservedAt: r.ReservedAt, ConfirmedAt: r.ConfirmedAt, CancelledAt: r.CancelledAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if p := v.Property; p != nil {
		j.Property = &PropertyJSON{ID: p.ID, Nickname: p.Nickname, Slug: p.Slug, OwnerName: p.OwnerName, Timezone: p.Timezone,
			Address: AddressJSON{Street: p.Street, PostalCode: p.PostalCode, City: p.City, Country: p.Country}}
	}
	if a := v.Agreement; a != nil {
		j.Agreement = agreementOut(*a)
	}
	return j
}

func (h *handlers) adminReservation(v app.ReservationView) AdminReservationJSON {
	return AdminReservationJSON{ReservationJSON: h.reservation(v), InquiryID: v.InquiryID, Notes: v.Notes}
}

func agreementOut(a domain.Agreement) *AgreementJSON {
	j := &AgreementJSON{ID: a.ID, Version: a.Version, Provider: a.Provider, ExternalID: a.ExternalID, Status: a.Status,
		TemplateName: a.TemplateName, SentAt: a.SentAt, CompletedAt: a.CompletedAt, DeclinedAt: a.DeclinedAt, VoidedAt: a.VoidedAt,
		Error: a.Error, DocumentURL: a.DocumentURL, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		Signers: make([]SignerJSON, 0, len(a.Signers))}
	if d := a.Document; d != nil {
		j.Document = &DocumentJSON{Checksum: "sha256:" + d.SHA256, ContentType: "application/pdf", Bytes: d.Bytes, ArchivedAt: d.ArchivedAt}
	}
	for _, s := range a.Signers {
		sj := SignerJSON{Role: s.Role, Name: s.Name, Email: s.Email, Status: s.Status, SigningURL: s.SigningURL,
			ViewedAt: s.ViewedAt, CompletedAt: s.CompletedAt, DeclinedAt: s.DeclinedAt, DeclineReason: s.DeclineReason}
		if a.Provider == "quarters" {
			// The service's own signing links never leave it.
			sj.SigningURL = nil
		}
		j.Signers = append(j.Signers, sj)
	}
	return j
}

// InquiryJSON is the admin API's inquiry: every stored field.
type InquiryJSON struct {
	ID               string          `json:"id"`
	PropertyID       string          `json:"propertyId"`
	FirstName        *string         `json:"firstName"`
	LastName         string          `json:"lastName"`
	Email            string          `json:"email"`
	Phone            *string         `json:"phone"`
	CheckIn          *string         `json:"checkIn"`
	CheckOut         *string         `json:"checkOut"`
	Adults           *int            `json:"adults"`
	Children         *int            `json:"children"`
	Infants          *int            `json:"infants"`
	Pets             *bool           `json:"pets"`
	GuestCount       *int            `json:"guestCount"`
	Message          *string         `json:"message"`
	Locale           *string         `json:"locale"`
	Source           string          `json:"source"`
	Metadata         json.RawMessage `json:"metadata"`
	SendConfirmation *bool           `json:"sendConfirmation"`
	Form             *string         `json:"form"`
	ReservationID    *string         `json:"reservationId"`
	ConvertedAt      *time.Time      `json:"convertedAt"`
	CreatedAt        time.Time       `json:"createdAt"`
}

func inquiryOut(q domain.Inquiry) InquiryJSON {
	j := InquiryJSON{ID: q.ID, PropertyID: q.PropertyID, FirstName: q.FirstName, LastName: q.LastName, Email: q.Email,
		Phone: q.Phone, Adults: q.Adults, Children: q.Children, Infants: q.Infants, Pets: q.Pets, GuestCount: q.GuestCount,
		Message: q.Message, Locale: q.Locale, Source: q.Source, Metadata: q.Metadata, SendConfirmation: q.SendConfirmation,
		Form: q.Form, ReservationID: q.ReservationID, ConvertedAt: q.ConvertedAt, CreatedAt: q.CreatedAt}
	if q.CheckIn != nil {
		s := q.CheckIn.String()
		j.CheckIn = &s
	}
	if q.CheckOut != nil {
		s := q.CheckOut.String()
		j.CheckOut = &s
	}
	if len(j.Metadata) == 0 {
		j.Metadata = json.RawMessage("null")
	}
	return j
}
