// Package ports serves the auth service over HTTP: the token exchange, the
// JSON 404 for every unmatched public path, and the admin routes for
// organisations and credential sets.
package ports

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/pkg/openapi"
	"quarters.dev/services/auth/internal/app"
	"quarters.dev/services/auth/internal/domain"
)

// TokenPath is the token exchange route.
const TokenPath = "/api/v1/oauth2/token"

// The OpenAPI documents' routes: the public one needs no credentials, the
// admin one the admin token.
const (
	PublicDocumentPath = "/api/v1/openapi.json"
	AdminDocumentPath  = "/admin/v1/openapi.json"
)

// Routes installs the auth service's routes on e.
func Routes(e *gin.Engine, svc *app.Service, adminToken string) {
	e.POST(TokenPath, tokenHandler(svc))
	e.GET(PublicDocumentPath, gin.WrapH(openapi.MustPublic()))

	h := &admin{svc: svc}
	a := e.Group("/admin/v1", authn.Admin(adminToken))
	a.GET("/openapi.json", gin.WrapH(openapi.MustAdmin()))
	a.POST("/orgs", h.createOrg)
	o := a.Group("/orgs/:orgId", httpx.OrgFirst(svc.CheckOrg))
	o.GET("", h.getOrg)
	o.PATCH("", h.updateOrg)
	o.POST("/credentials", h.createCredential)
	o.GET("/credentials", h.listCredentials)
	o.DELETE("/credentials/:clientId", h.revokeCredential)
}

// BodyLimits lets the token handler bound its own body, so that an oversized
// one is answered in the token endpoint's error shape.
var BodyLimits = map[string]int64{"POST " + TokenPath: 1 << 62}

type admin struct{ svc *app.Service }

// orgJSON is the admin API's org.
type orgJSON struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	ContractProvider  string    `json:"contractProvider"`
	InquiryDailyLimit int       `json:"inquiryDailyLimit"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

func orgOut(o domain.Org) gin.H {
	return gin.H{"org": orgJSON{
		ID: o.ID, Name: o.Name, ContractProvider: string(o.ContractProvider),
		InquiryDailyLimit: o.InquiryDailyLimit, CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(),
	}}
}

// orgInput accepts every org setting. An absent field is left alone (or
// takes its default on create); null is the same as absent on create, and
// refused on a change, where it would mean clearing a setting every org has.
type orgInput struct {
	Name              json.RawMessage `json:"name"`
	ContractProvider  json.RawMessage `json:"contractProvider"`
	InquiryDailyLimit json.RawMessage `json:"inquiryDailyLimit"`
}

// decodeOrg reads an org body into the settings it changes; patch says
// whether it changes an existing org.
func decodeOrg(c *gin.Context, patch bool) (domain.OrgChanges, error) {
	var in orgInput
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return domain.OrgChanges{}, err
	}
	return in.changes(patch)
}

func (in orgInput) changes(patch bool) (domain.OrgChanges, error) {
	var c domain.OrgChanges
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  **string
	}{{"name", in.Name, &c.Name}, {"contractProvider", in.ContractProvider, &c.ContractProvider}} {
		switch raw := strings.TrimSpace(string(f.raw)); {
		case raw == "":
		case raw == "null":
			if patch {
				return c, apperr.Invalid("Field %s cannot be null.", f.name)
			}
		default:
			var s string
			if err := json.Unmarshal(f.raw, &s); err != nil {
				return c, apperr.Invalid("Field %s must be a string.", f.name)
			}
			*f.dst = &s
		}
	}
	switch raw := strings.TrimSpace(string(in.InquiryDailyLimit)); {
	case raw == "":
	case raw == "null":
		if patch {
			return c, apperr.Invalid("Field inquiryDailyLimit cannot be null.")
		}
	default:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return c, apperr.Invalid("Field inquiryDailyLimit must be an integer.")
		}
		c.InquiryDailyLimit = &n
	}
	return c, nil
}

func (h *admin) createOrg(c *gin.Context) {
	changes, err := decodeOrg(c, false)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	o, err := h.svc.CreateOrg(c.Request.Context(), changes)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, orgOut(o))
}

func (h *admin) getOrg(c *gin.Context) {
	o, err := h.svc.GetOrg(c.Request.Context(), c.Param("orgId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, orgOut(o))
}

func (h *admin) updateOrg(c *gin.Context) {
	changes, err := decodeOrg(c, true)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	o, err := h.svc.UpdateOrg(c.Request.Context(), c.Param("orgId"), changes)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, orgOut(o))
}

type credentialJSON struct {
	ClientID     string     `json:"clientId"`
	ClientSecret string     `json:"clientSecret,omitempty"`
	Name         string     `json:"name"`
	CreatedAt    time.Time  `json:"createdAt"`
	RevokedAt    *time.Time `json:"revokedAt"`
}

func (h *admin) createCredential(c *gin.Context) {
	var in struct {
		Name *string `json:"name"`
	}
	// The body is optional: a set needs no settings.
	if err := httpx.DecodeOptionalJSON(c, &in); err != nil {
		httpx.Error(c, err)
		return
	}
	cred, err := h.svc.CreateCredential(c.Request.Context(), c.Param("orgId"), in.Name)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"credential": gin.H{
		"clientId":     cred.ClientID,
		"clientSecret": cred.Secret,
		"name":         cred.Name,
		"createdAt":    cred.CreatedAt.UTC(),
	}})
}

func (h *admin) listCredentials(c *gin.Context) {
	creds, err := h.svc.ListCredentials(c.Request.Context(), c.Param("orgId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]credentialJSON, 0, len(creds))
	for _, cr := range creds {
		j := credentialJSON{ClientID: cr.ClientID, Name: cr.Name, CreatedAt: cr.CreatedAt.UTC()}
		if cr.RevokedAt != nil {
			t := cr.RevokedAt.UTC()
			j.RevokedAt = &t
		}
		out = append(out, j)
	}
	c.JSON(http.StatusOK, gin.H{"credentials": out})
}

func (h *admin) revokeCredential(c *gin.Context) {
	if err := h.svc.RevokeCredential(c.Request.Context(), c.Param("orgId"), c.Param("clientId")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
