package ports

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/httpx"
	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
)

type admin struct{ svc *app.Service }

// PropertyJSON is the admin API's property.
type PropertyJSON struct {
	ID          string     `json:"id"`
	Draft       DraftJSON  `json:"draft"`
	PublishedAt *time.Time `json:"publishedAt"`
	Published   bool       `json:"published"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

func propertyOut(p domain.Property) gin.H {
	j := PropertyJSON{
		ID: p.ID, Draft: DraftOut(p.Draft), Published: p.Published(),
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(),
	}
	if p.PublishedAt != nil {
		t := p.PublishedAt.UTC()
		j.PublishedAt = &t
	}
	return gin.H{"property": j}
}

// decodeDraft reads the request body as a PropertyDraft.
func decodeDraft(c *gin.Context) (domain.Draft, error) {
	var raw any
	if err := httpx.DecodeJSON(c, &raw); err != nil {
		return domain.Draft{}, err
	}
	return DecodeDraft(raw)
}

func (h *admin) create(c *gin.Context) {
	d, err := decodeDraft(c)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	p, err := h.svc.CreateProperty(c.Request.Context(), c.Param("orgId"), d)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, propertyOut(p))
}

func (h *admin) get(c *gin.Context) {
	p, err := h.svc.GetProperty(c.Request.Context(), c.Param("orgId"), c.Param("propertyId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, propertyOut(p))
}

func (h *admin) replace(c *gin.Context) {
	d, err := decodeDraft(c)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	p, err := h.svc.ReplaceDraft(c.Request.Context(), c.Param("orgId"), c.Param("propertyId"), d)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, propertyOut(p))
}

func (h *admin) publish(c *gin.Context) {
	l, err := h.svc.Publish(c.Request.Context(), c.Param("orgId"), c.Param("propertyId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	js, err := RenderListing(l)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"listing": json.RawMessage(js)})
}

func (h *admin) unpublish(c *gin.Context) {
	if err := h.svc.Unpublish(c.Request.Context(), c.Param("orgId"), c.Param("propertyId")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *admin) delete(c *gin.Context) {
	if err := h.svc.DeleteProperty(c.Request.Context(), c.Param("orgId"), c.Param("propertyId")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
