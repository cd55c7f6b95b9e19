// Package ports serves the webhook dispatcher: the admin routes for webhooks
// and their deliveries, and the consumer of every domain topic.
package ports

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/webhook-dispatcher/internal/app"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Routes installs the admin routes on e.
func Routes(e *gin.Engine, svc *app.Service, adminToken string) {
	h := &admin{svc: svc}
	a := e.Group("/admin/v1/orgs/:orgId/webhooks", authn.Admin(adminToken), httpx.OrgFirst(svc.RequireOrg))
	a.POST("", h.register)
	a.GET("", h.list)
	a.DELETE("/:webhookId", h.delete)
	a.POST("/:webhookId/ping", h.ping)
	a.GET("/:webhookId/deliveries", h.deliveries)
	a.POST("/:webhookId/deliveries/:deliveryId/redeliver", h.redeliver)
}

type admin struct{ svc *app.Service }

type webhookJSON struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
}

func webhookOut(ep domain.Endpoint) webhookJSON {
	return webhookJSON{ID: ep.ID, URL: ep.URL, Secret: ep.Secret, CreatedAt: ep.CreatedAt.UTC()}
}

func (h *admin) register(c *gin.Context) {
	var in struct {
		URL *string `json:"url"`
	}
	if err := httpx.DecodeJSON(c, &in); err != nil {
		httpx.Error(c, err)
		return
	}
	if in.URL == nil {
		httpx.Error(c, apperr.Invalid("Field url is required."))
		return
	}
	ep, err := h.svc.Register(c.Request.Context(), c.Param("orgId"), *in.URL)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"webhook": webhookOut(ep)})
}

func (h *admin) list(c *gin.Context) {
	eps, err := h.svc.List(c.Request.Context(), c.Param("orgId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]webhookJSON, len(eps))
	for i, ep := range eps {
		out[i] = webhookOut(ep)
	}
	c.JSON(http.StatusOK, gin.H{"webhooks": out})
}

func (h *admin) delete(c *gin.Context) {
	if err := h.svc.Delete(c.Request.Context(), c.Param("orgId"), c.Param("webhookId")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *admin) ping(c *gin.Context) {
	d, err := h.svc.Ping(c.Request.Context(), c.Param("orgId"), c.Param("webhookId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"delivery": gin.H{"id": d.DeliveryID, "event": d.Event, "createdAt": d.CreatedAt.Format(domain.TimeFormat)}})
}

func (h *admin) redeliver(c *gin.Context) {
	d, err := h.svc.Redeliver(c.Request.Context(), c.Param("orgId"), c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"delivery": gin.H{"id": d.DeliveryID, "event": d.Event, "createdAt": d.CreatedAt.Format(domain.TimeFormat)}})
}

// deliveryJSON is one row of the delivery list. Outcome is delivered or
// failed once the attempt has ended, and pending while it is under way.
type deliveryJSON struct {
	ID          string  `json:"id"`
	Event       string  `json:"event"`
	CreatedAt   string  `json:"createdAt"`
	AttemptedAt *string `json:"attemptedAt"`
	DurationMs  *int64  `json:"durationMs"`
	StatusCode  *int    `json:"statusCode"`
	Outcome     string  `json:"outcome"`
	Reason      *string `json:"reason"`
	Error       *string `json:"error"`
	Redelivery  bool    `json:"redelivery"`
}

func deliveryOut(d domain.Delivery) deliveryJSON {
	j := deliveryJSON{ID: d.DeliveryID, Event: d.Event, CreatedAt: d.CreatedAt.UTC().Format(domain.TimeFormat), Redelivery: d.Redelivery}
	if d.AttemptedAt != nil {
		s := d.AttemptedAt.UTC().Format(domain.TimeFormat)
		j.AttemptedAt = &s
	}
	switch d.Status {
	case domain.Delivered, domain.Failed:
		j.Outcome = string(d.Status)
		if d.Reason != domain.ReasonInterrupted {
			ms := d.Duration.Milliseconds()
			j.DurationMs = &ms
		}
		if d.StatusCode != 0 {
			code := d.StatusCode
			j.StatusCode = &code
		}
		if d.Reason != "" {
			r, e := string(d.Reason), d.Error
			j.Reason, j.Error = &r, &e
		}
	default:
		j.Outcome = "pending"
	}
	return j
}

func (h *admin) deliveries(c *gin.Context) {
	limit := 50
	if raw, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > app.MaxListLimit {
			httpx.Error(c, apperr.Invalid("Parameter limit must be an integer from 1 to %d.", app.MaxListLimit))
			return
		}
		limit = n
	}
	list, err := h.svc.Deliveries(c.Request.Context(), c.Param("orgId"), c.Param("webhookId"), limit)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]deliveryJSON, len(list))
	for i, d := range list {
		out[i] = deliveryOut(d)
	}
	c.JSON(http.StatusOK, gin.H{"deliveries": out})
}
