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
	"quarters.dev/services/catalog/internal/domain"
)

// Listings reads published snapshots of the caller's organisation.
type Listings interface {
	// List returns the rendered `{listings: [...]}` body.
	List(orgID string) []byte
	Get(orgID, id string) (domain.Listing, bool)
}

// Routes installs the catalog's public routes behind authentication.
func Routes(e *gin.Engine, auth gin.HandlerFunc, listings Listings) {
	h := &public{listings: listings}
	api := e.Group("/api/v1", auth)
	api.GET("/listings", h.list)
	api.GET("/listings/:id", h.get)
}

type public struct{ listings Listings }

func (h *public) list(c *gin.Context) {
	c.Data(http.StatusOK, jsonType, h.listings.List(authn.FromContext(c).OrgID))
}

func (h *public) get(c *gin.Context) {
	id := c.Param("id")
	l, ok := h.listings.Get(authn.FromContext(c).OrgID, id)
	if !ok {
		httpx.Error(c, apperr.NotFoundf("No listing %s.", id))
		return
	}
	c.JSON(http.StatusOK, gin.H{"listing": ListingOut(l)})
}

const jsonType = "application/json; charset=utf-8"

// RenderList renders the list response of an organisation's listings.
func RenderList(ls []domain.Listing) ([]byte, error) {
	out := make([]ListingJSON, len(ls))
	for i := range ls {
		out[i] = ListingOut(ls[i])
	}
	return json.Marshal(struct {
		Listings []ListingJSON `json:"listings"`
	}{out})
}

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
	NightlyRateCents *int64  `json:"nightlyRateCents"`
	RateBasis        *string `json:"rateBasis"`
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
		Rooms:        make([]RoomJSON, 0, len(l.Rooms)),
		Images:       make([]ImageJSON, 0, len(l.Images)),
		PublishedAt:  l.PublishedAt.UTC(),
	}
	if j.Pricing.Currency == "" {
		j.Pricing.Currency = "EUR"
	}
	for _, r := range l.Rooms {
		room := RoomJSON{Kind: string(r.Kind), Name: r.Name, Beds: make([]BedJSON, 0, len(r.Beds))}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, BedJSON(b))
		}
		j.Rooms = append(j.Rooms, room)
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
