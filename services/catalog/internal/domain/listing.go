// Package domain holds the catalog's types: the published listing snapshot
// that the public API serves.
package domain

import "time"

// Listing is the frozen snapshot of a property taken when the operator
// publishes it. The public API serves only snapshots; drafts never appear.
type Listing struct {
	ID           string
	OrgID        string
	Slug         string
	Nickname     string
	Active       bool
	IsListed     bool
	PropertyType string
	RoomType     string
	Address      Address
	Accommodates int
	Rooms        []Room
	Bedrooms     int
	Beds         int
	Bathrooms    float64
	SquareMeter  *int
	Timezone     string
	Pricing      ListingPricing
	Terms        Terms
	Amenities    []string
	Description  Description
	Translations map[string]Description
	Images       []Image
	PublishedAt  time.Time
	// OwnerName is the lessor agreements name. It travels with the listing
	// events for the property identity on reservations and is never part of
	// the public Listing.
	OwnerName string
}

// Address of a listing.
type Address struct {
	Street     *string
	PostalCode *string
	City       string
	Country    string
	Area       *string
	Latitude   *float64
	Longitude  *float64
}

// RoomKind classifies a room.
type RoomKind string

// The room kinds.
const (
	RoomBedroom      RoomKind = "bedroom"
	RoomLivingRoom   RoomKind = "living_room"
	RoomFullBathroom RoomKind = "full_bathroom"
	RoomHalfBathroom RoomKind = "half_bathroom"
	RoomOther        RoomKind = "other"
)

// RoomKinds lists every room kind, in the spec's order.
var RoomKinds = []RoomKind{RoomBedroom, RoomLivingRoom, RoomFullBathroom, RoomHalfBathroom, RoomOther}

// BedTypes lists every bed type, in the spec's order.
var BedTypes = []string{"unspecified", "single", "double", "queen", "king", "bunk_bed", "sofa_bed", "crib"}

// Rate bases of listing pricing.
const (
	RateMonthly = "monthly"
	RateNightly = "nightly"
)

// Currency is the only currency listings are priced in.
const Currency = "EUR"

// Room of a listing.
type Room struct {
	Kind RoomKind
	Name string
	Beds []Bed
}

// Bed in a room.
type Bed struct {
	Type  string
	Count int
}

// ListingPricing is in euro-cents; nil means not set, which differs from 0.
type ListingPricing struct {
	Currency         string
	MonthlyRateCents *int64
	NightlyRateCents *int64
	RateBasis        *string
	DepositCents     *int64
	UtilitiesCents   *int64
	FurnitureCents   *int64
}

// Terms bound the length of a stay.
type Terms struct {
	MinNights *int
	MaxNights *int
}

// Description is the editorial text of a listing.
type Description struct {
	Title        *string
	Summary      *string
	Space        *string
	Neighborhood *string
	Access       *string
	Notes        *string
}

// Image with its four renditions.
type Image struct {
	ID        string
	IsPrimary bool
	Caption   *string
	SortOrder int
	Width     int
	Height    int
	Bytes     int64
	Thumbnail string
	Regular   string
	Large     string
	Original  string
}

// ListingState is what the public view needs of a property: its version and
// its published snapshot.
type ListingState struct {
	ID      string
	OrgID   string
	Version int64
	// Listing is nil when the property is not published (never, unpublished
	// or deleted).
	Listing *Listing
}
