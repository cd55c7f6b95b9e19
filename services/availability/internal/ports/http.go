// Package ports serves the availability service: the calendar of a
// published listing, the admin routes of calendar blocks, and the Kafka
// consumers that keep its projections.
package ports

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/availability/internal/app"
	"quarters.dev/services/availability/internal/domain"
)

// Routes installs the availability routes: the public calendar behind auth,
// the admin block routes behind the admin token. Every other path answers
// the JSON 404 of pkg/httpx.
func Routes(e *gin.Engine, auth gin.HandlerFunc, svc *app.Service, adminToken string) {
	h := &handlers{svc: svc}
	e.GET("/api/v1/listings/:id/calendar", auth, h.calendar)

	a := e.Group("/admin/v1/orgs/:orgId/properties/:propertyId/blocks", authn.Admin(adminToken), httpx.OrgFirst(svc.RequireOrg))
	a.POST("", h.addBlock)
	a.GET("", h.listBlocks)
	a.DELETE("/:blockId", h.removeBlock)
}

type handlers struct{ svc *app.Service }

// buffers recycles the status and body buffers of calendar answers: a
// calendar of 1100 days is about 90 KB of JSON.
var buffers = sync.Pool{New: func() any { return new(calendarBuffers) }}

type calendarBuffers struct {
	days []domain.Status
	body []byte
}

func (h *handlers) calendar(c *gin.Context) {
	start, hasStart := c.GetQuery("start")
	end, hasEnd := c.GetQuery("end")
	q, err := domain.ParseRangeQuery(start, end, hasStart, hasEnd)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	bufs := buffers.Get().(*calendarBuffers)
	defer buffers.Put(bufs)
	v, err := h.svc.Calendar(c.Request.Context(), authn.FromContext(c).OrgID, c.Param("id"), q, bufs.days)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	bufs.days = v.Days
	bufs.body = AppendCalendar(bufs.body[:0], v)
	c.Data(http.StatusOK, jsonType, bufs.body)
}

const jsonType = "application/json; charset=utf-8"

// AppendCalendar appends the `{days: CalendarDay[]}` body of v to b.
func AppendCalendar(b []byte, v app.CalendarView) []byte {
	var mn [20]byte
	minNights := strconv.AppendInt(mn[:0], int64(v.MinNights), 10)
	// The longest day: {"date":"YYYY-MM-DD","status":"unavailable","minNights":N,"isBaseMinNights":true},
	perDay := len(`{"date":"","status":"unavailable","minNights":,"isBaseMinNights":true},`) + 10 + len(minNights)
	b = slices.Grow(b, len(`{"days":[]}`)+perDay*len(v.Days))
	b = append(b, `{"days":[`...)
	y, m, d := v.First.Civil()
	for i, s := range v.Days {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"date":"`...)
		b = append(b,
			byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
			byte('0'+m/10), byte('0'+m%10), '-',
			byte('0'+d/10), byte('0'+d%10))
		b = append(b, `","status":"`...)
		b = append(b, s.String()...)
		b = append(b, `","minNights":`...)
		b = append(b, minNights...)
		b = append(b, `,"isBaseMinNights":true}`...)
		// The next calendar day, without converting from the day count.
		if d++; d > domain.DaysIn(y, m) {
			d = 1
			if m++; m > 12 {
				m = 1
				y++
			}
		}
	}
	return append(b, "]}"...)
}

// blockJSON is the admin API's block.
type blockJSON struct {
	ID         string    `json:"id"`
	PropertyID string    `json:"propertyId"`
	Start      string    `json:"start"`
	End        string    `json:"end"`
	Reason     *string   `json:"reason"`
	CreatedAt  time.Time `json:"createdAt"`
}

func blockOut(propertyID string, b domain.Block) blockJSON {
	return blockJSON{ID: b.ID, PropertyID: propertyID, Start: b.Start.String(), End: b.End.String(),
		Reason: b.Reason, CreatedAt: b.CreatedAt.UTC()}
}

func (h *handlers) addBlock(c *gin.Context) {
	var in struct {
		Start  *string `json:"start"`
		End    *string `json:"end"`
		Reason *string `json:"reason"`
	}
	if err := httpx.DecodeJSON(c, &in); err != nil {
		httpx.Error(c, err)
		return
	}
	input := app.BlockInput{Reason: in.Reason}
	if in.Start != nil {
		input.Start = *in.Start
	}
	if in.End != nil {
		input.End = *in.End
	}
	propertyID := c.Param("propertyId")
	b, err := h.svc.AddBlock(c.Request.Context(), c.Param("orgId"), propertyID, input)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"block": blockOut(propertyID, b)})
}

func (h *handlers) listBlocks(c *gin.Context) {
	propertyID := c.Param("propertyId")
	bs, err := h.svc.Blocks(c.Request.Context(), c.Param("orgId"), propertyID)
	if err != nil {
		httpx.Error(c, err)
		return
	}
	out := make([]blockJSON, 0, len(bs))
	for _, b := range bs {
		out = append(out, blockOut(propertyID, b))
	}
	c.JSON(http.StatusOK, gin.H{"blocks": out})
}

func (h *handlers) removeBlock(c *gin.Context) {
	if err := h.svc.RemoveBlock(c.Request.Context(), c.Param("orgId"), c.Param("propertyId"), c.Param("blockId")); err != nil {
		httpx.Error(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
