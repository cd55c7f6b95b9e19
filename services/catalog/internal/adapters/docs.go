package adapters

import (
	"time"

	"quarters.dev/services/catalog/internal/domain"
)

type listingDoc struct {
	ID           string                    `bson:"_id"`
	OrgID        string                    `bson:"orgId"`
	Slug         string                    `bson:"slug"`
	Nickname     string                    `bson:"nickname"`
	Active       bool                      `bson:"active"`
	IsListed     bool                      `bson:"isListed"`
	PropertyType string                    `bson:"propertyType"`
	RoomType     string                    `bson:"roomType"`
	Address      addressDoc                `bson:"address"`
	Accommodates int                       `bson:"accommodates"`
	Rooms        []roomDoc                 `bson:"rooms"`
	Bedrooms     int                       `bson:"bedrooms"`
	Beds         int                       `bson:"beds"`
	Bathrooms    float64                   `bson:"bathrooms"`
	SquareMeter  *int                      `bson:"squareMeter"`
	Timezone     string                    `bson:"timezone"`
	Pricing      pricingDoc                `bson:"pricing"`
	Terms        termsDoc                  `bson:"terms"`
	Amenities    []string                  `bson:"amenities"`
	Description  descriptionDoc            `bson:"description"`
	Translations map[string]descriptionDoc `bson:"translations"`
	Images       []imageDoc                `bson:"images"`
	PublishedAt  time.Time                 `bson:"publishedAt"`
	OwnerName    string                    `bson:"ownerName"`
}

type addressDoc struct {
	Street     *string  `bson:"street"`
	PostalCode *string  `bson:"postalCode"`
	City       string   `bson:"city"`
	Country    string   `bson:"country"`
	Area       *string  `bson:"area"`
	Latitude   *float64 `bson:"latitude"`
	Longitude  *float64 `bson:"longitude"`
}

type roomDoc struct {
	Kind string   `bson:"kind"`
	Name string   `bson:"name"`
	Beds []bedDoc `bson:"beds"`
}

type bedDoc struct {
	Type  string `bson:"type"`
	Count int    `bson:"count"`
}

type pricingDoc struct {
	Currency         string  `bson:"currency"`
	MonthlyRateCents *int64  `bson:"monthlyRateCents"`
	NightlyRateCents *int64  `bson:"nightlyRateCents"`
	RateBasis        *string `bson:"rateBasis"`
	DepositCents     *int64  `bson:"depositCents"`
	UtilitiesCents   *int64  `bson:"utilitiesCents"`
	FurnitureCents   *int64  `bson:"furnitureCents"`
}

type termsDoc struct {
	MinNights *int `bson:"minNights"`
	MaxNights *int `bson:"maxNights"`
}

type descriptionDoc struct {
	Title        *string `bson:"title"`
	Summary      *string `bson:"summary"`
	Space        *string `bson:"space"`
	Neighborhood *string `bson:"neighborhood"`
	Access       *string `bson:"access"`
	Notes        *string `bson:"notes"`
}

type imageDoc struct {
	ID        string  `bson:"id"`
	IsPrimary bool    `bson:"isPrimary"`
	Caption   *string `bson:"caption"`
	SortOrder int     `bson:"sortOrder"`
	Width     int     `bson:"width"`
	Height    int     `bson:"height"`
	Bytes     int64   `bson:"bytes"`
	Thumbnail string  `bson:"thumbnail"`
	Regular   string  `bson:"regular"`
	Large     string  `bson:"large"`
	Original  string  `bson:"original"`
}

func (d *listingDoc) domain() domain.Listing {
	l := domain.Listing{
		ID: d.ID, OrgID: d.OrgID, Slug: d.Slug, Nickname: d.Nickname, Active: d.Active, IsListed: d.IsListed,
		PropertyType: d.PropertyType, RoomType: d.RoomType,
		Address:      domain.Address(d.Address),
		Accommodates: d.Accommodates, Bedrooms: d.Bedrooms, Beds: d.Beds, Bathrooms: d.Bathrooms,
		SquareMeter: d.SquareMeter, Timezone: d.Timezone,
		Pricing:     domain.ListingPricing(d.Pricing),
		Terms:       domain.Terms(d.Terms),
		Amenities:   d.Amenities,
		Description: domain.Description(d.Description),
		PublishedAt: d.PublishedAt.UTC(),
		OwnerName:   d.OwnerName,
	}
	for _, r := range d.Rooms {
		room := domain.Room{Kind: domain.RoomKind(r.Kind), Name: r.Name}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, domain.Bed(b))
		}
		l.Rooms = append(l.Rooms, room)
	}
	if len(d.Translations) > 0 {
		l.Translations = make(map[string]domain.Description, len(d.Translations))
		for k, v := range d.Translations {
			l.Translations[k] = domain.Description(v)
		}
	}
	for _, im := range d.Images {
		l.Images = append(l.Images, domain.Image(im))
	}
	return l
}

func docOf(l domain.Listing) *listingDoc {
	d := &listingDoc{
		ID: l.ID, OrgID: l.OrgID, Slug: l.Slug, Nickname: l.Nickname, Active: l.Active, IsListed: l.IsListed,
		PropertyType: l.PropertyType, RoomType: l.RoomType,
		Address:      addressDoc(l.Address),
		Accommodates: l.Accommodates, Bedrooms: l.Bedrooms, Beds: l.Beds, Bathrooms: l.Bathrooms,
		SquareMeter: l.SquareMeter, Timezone: l.Timezone,
		Pricing:     pricingDoc(l.Pricing),
		Terms:       termsDoc(l.Terms),
		Amenities:   l.Amenities,
		Description: descriptionDoc(l.Description),
		PublishedAt: l.PublishedAt,
		OwnerName:   l.OwnerName,
	}
	for _, r := range l.Rooms {
		room := roomDoc{Kind: string(r.Kind), Name: r.Name}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, bedDoc(b))
		}
		d.Rooms = append(d.Rooms, room)
	}
	if len(l.Translations) > 0 {
		d.Translations = make(map[string]descriptionDoc, len(l.Translations))
		for k, v := range l.Translations {
			d.Translations[k] = descriptionDoc(v)
		}
	}
	for _, im := range l.Images {
		d.Images = append(d.Images, imageDoc(im))
	}
	return d
}
