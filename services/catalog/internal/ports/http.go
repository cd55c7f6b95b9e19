// Package ports serves the catalog's public routes.
package ports

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
)

// Listings reads the rendered published snapshots of the caller's
// organisation.
type Listings interface {
	// List returns the `{listings: [...]}` body.
	List(orgID string) []byte
	// Get returns the `{listing: ...}` body.
	Get(orgID, id string) ([]byte, bool)
}

// Routes installs the catalog's public routes behind authentication and its
// admin routes behind the admin token. Every other path or method answers
// the JSON 404 of pkg/httpx.
func Routes(e *gin.Engine, auth, adminAuth gin.HandlerFunc, listings Listings, svc *app.Service) {
	h := &public{listings: listings}
	api := e.Group("/api/v1", auth)
	api.GET("/listings", h.list)
	api.GET("/listings/:id", h.get)

	a := &admin{svc: svc}
	g := e.Group("/admin/v1/orgs/:orgId/properties", adminAuth, httpx.OrgFirst(svc.RequireOrg))
	g.POST("", a.create)
	g.GET("/:propertyId", a.get)
	g.PUT("/:propertyId", a.replace)
	g.DELETE("/:propertyId", a.delete)
	g.POST("/:propertyId/publish", a.publish)
	g.POST("/:propertyId/unpublish", a.unpublish)
}

type public struct{ listings Listings }

func (h *public) list(c *gin.Context) {
	c.Data(http.StatusOK, jsonType, h.listings.List(authn.FromContext(c).OrgID))
}

func (h *public) get(c *gin.Context) {
	id := c.Param("id")
	body, ok := h.listings.Get(authn.FromContext(c).OrgID, id)
	if !ok {
		httpx.Error(c, apperr.NotFoundf("No listing %s.", id))
		return
	}
	c.Data(http.StatusOK, jsonType, body)
}

const jsonType = "application/json; charset=utf-8"

// RenderListing renders one snapshot as the public Listing object.
func RenderListing(l domain.Listing) ([]byte, error) { return json.Marshal(ListingOut(l)) }

// ListingJSON is the public Listing resource.
type ListingJSON struct {
	ID           string                     `json:"id"`
	Slug         string                     `json:"slug"`
	Nickname     string                     `json:"nickname"`
	Active       bool                       `json:"active"`
	IsListed     bool                       `json:"isListed"`
	PropertyType string                     `json:"propertyType"`
	RoomType     string                     `json:"roomType"`
	Address      AddressJSON                `json:"address"`
	Accommodates int                        `json:"accommodates"`
	Rooms        []RoomJSON                 `json:"rooms"`
	Bedrooms     int                        `json:"bedrooms"`
	Beds         int                        `json:"beds"`
	Bathrooms    float64                    `json:"bathrooms"`
	SquareMeter  *int                       `json:"squareMeter"`
	Timezone     string                     `json:"timezone"`
	Pricing      PricingJSON                `json:"pricing"`
	Terms        TermsJSON                  `json:"terms"`
	Amenities    []string                   `json:"amenities"`
	Description  DescriptionJSON            `json:"description"`
	Translations map[string]DescriptionJSON `json:"translations"`
	Images       []ImageJSON                `json:"images"`
	PublishedAt  time.Time                  `json:"publishedAt"`
}

// AddressJSON is the public Address.
type AddressJSON struct {
	Street     *string  `json:"street"`
	PostalCode *string  `json:"postalCode"`
	City       string   `json:"city"`
	Country    string   `json:"country"`
	Area       *string  `json:"area"`
	Latitude   *float64 `json:"latitude"`
	Longitude  *float64 `json:"longitude"`
}

// RoomJSON is the public Room.
type RoomJSON struct {
	Kind string    `json:"kind"`
	Name string    `json:"name"`
	Beds []BedJSON `json:"beds"`
}

// BedJSON is the public Bed.
type BedJSON struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// PricingJSON is the public listing pricing, in euro-cents.
type PricingJSON struct {
	Currency         string  `json:"currency"`
	MonthlyRateCents *int64  `json:"monthlyRateCents"`
	NightlyRateCents *int64  `json:"nightlyRateCents,omitempty"`
	RateBasis        *string `json:"rateBasis,omitempty"`
	DepositCents     *int64  `json:"depositCents"`
	UtilitiesCents   *int64  `json:"utilitiesCents"`
	FurnitureCents   *int64  `json:"furnitureCents"`
}

// TermsJSON is the public stay-length terms.
type TermsJSON struct {
	MinNights *int `json:"minNights"`
	MaxNights *int `json:"maxNights"`
}

// DescriptionJSON is the public Description.
type DescriptionJSON struct {
	Title        *string `json:"title"`
	Summary      *string `json:"summary"`
	Space        *string `json:"space"`
	Neighborhood *string `json:"neighborhood"`
	Access       *string `json:"access"`
	Notes        *string `json:"notes"`
}

// ImageJSON is the public Image with its four renditions.
type ImageJSON struct {
	ID        string  `json:"id"`
	IsPrimary bool    `json:"isPrimary"`
	Caption   *string `json:"caption"`
	SortOrder int     `json:"sortOrder"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Bytes     int64   `json:"bytes"`
	Thumbnail string  `json:"thumbnail"`
	Regular   string  `json:"regular"`
	Large     string  `json:"large"`
	Original  string  `json:"original"`
}

// ListingOut renders a snapshot as the public resource: lists are never
// null, images come sorted by sortOrder, instants in UTC.
func ListingOut(l domain.Listing) ListingJSON {
	j := ListingJSON{
		ID: l.ID, Slug: l.Slug, Nickname: l.Nickname, Active: l.Active, IsListed: l.IsListed,
		PropertyType: l.PropertyType, RoomType: l.RoomType,
		Address:      AddressJSON(l.Address),
		Accommodates: l.Accommodates, Bedrooms: l.Bedrooms, Beds: l.Beds, Bathrooms: l.Bathrooms,
		SquareMeter: l.SquareMeter, Timezone: l.Timezone,
		Pricing:      PricingJSON(l.Pricing),
		Terms:        TermsJSON(l.Terms),
		Amenities:    append([]string{}, l.Amenities...),
		Description:  DescriptionJSON(l.Description),
		Translations: make(map[string]DescriptionJSON, len(l.Translations)),
		Rooms:        roomsOut(l.Rooms),
		Images:       make([]ImageJSON, 0, len(l.Images)),
		PublishedAt:  l.PublishedAt.UTC(),
	}
	if j.Pricing.Currency == "" {
		j.Pricing.Currency = "EUR"
	}
	for k, v := range l.Translations {
		j.Translations[k] = DescriptionJSON(v)
	}
	for _, im := range l.Images {
		j.Images = append(j.Images, ImageJSON(im))
	}
	sort.SliceStable(j.Images, func(a, b int) bool { return j.Images[a].SortOrder < j.Images[b].SortOrder })
	return j
}
