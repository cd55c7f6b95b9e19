package domain

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"quarters.dev/pkg/apperr"
)

// Draft is what an operator writes about a property. It never appears in the
// public API: publishing freezes it into a Listing.
type Draft struct {
	Nickname     string
	Slug         string
	Active       bool
	IsListed     bool
	PropertyType string
	RoomType     string
	Address      Address
	Accommodates int
	Rooms        []Room
	SquareMeter  *int
	Timezone     string
	Pricing      ListingPricing
	Terms        Terms
	Amenities    []string
	Description  Description
	Translations map[string]Description
	Images       []DraftImage
	OwnerName    *string
}

// DraftImage is an image as the operator gives it: URL is the original.
// ID is optional; publishing assigns one when it is empty.
type DraftImage struct {
	ID        string
	IsPrimary bool
	Caption   *string
	SortOrder int
	Width     int
	Height    int
	Bytes     int64
	URL       string
}

// Property is the catalog's aggregate: the draft, the snapshot currently
// published (if any), and what publishing needs to keep image renditions
// stable.
type Property struct {
	ID      string
	OrgID   string
	Version int64
	Draft   Draft
	// Listing is the published snapshot; nil while not published.
	Listing *Listing
	// PublishedAt is when the latest snapshot was frozen, kept after an
	// unpublish; nil if never published.
	PublishedAt *time.Time
	// Images are the images of the latest snapshot and ImageSources the
	// draft images they were made from: a publish with the same draft
	// images keeps them, ids and rendition URIs included.
	Images       []Image
	ImageSources []DraftImage
	Deleted      bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Published reports whether the property is in the public API.
func (p *Property) Published() bool { return p.Listing != nil && !p.Deleted }

// Derived counts of a listing's rooms.
type Derived struct {
	Bedrooms  int
	Beds      int
	Bathrooms float64
}

// Derive counts bedrooms, beds in every room that has them (living rooms
// included) and bathrooms, a half bathroom counting 0.5.
func Derive(rooms []Room) Derived {
	var d Derived
	for _, r := range rooms {
		switch r.Kind {
		case RoomBedroom:
			d.Bedrooms++
		case RoomFullBathroom:
			d.Bathrooms++
		case RoomHalfBathroom:
			d.Bathrooms += 0.5
		}
		for _, b := range r.Beds {
			d.Beds += b.Count
		}
	}
	return d
}

// Media makes the rendition URIs of published images.
type Media struct {
	// BaseURL is the public base of the media host, without a trailing slash.
	BaseURL string
	// NewID returns a fresh opaque id (image ids, rendition tokens).
	NewID func(prefix string) string
}

// NewID returns an opaque random id with a short prefix.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Renditions are the four URIs of one image.
func (m Media) Renditions(listingID, token, imageID, sourceURL string) (thumbnail, regular, large, original string) {
	base := fmt.Sprintf("%s/listings/%s/%s/%s", strings.TrimRight(m.BaseURL, "/"), listingID, token, imageID)
	ext := strings.ToLower(path.Ext(strings.SplitN(sourceURL, "?", 2)[0]))
	if ext == "" || len(ext) > 5 {
		ext = ".jpg"
	}
	return base + "/thumbnail.jpg", base + "/regular.jpg", base + "/large.jpg", base + "/original" + ext
}

// CheckPublishable refuses a draft that cannot be published: its images need
// exactly one primary.
func CheckPublishable(d Draft) error {
	primaries := 0
	for _, im := range d.Images {
		if im.IsPrimary {
			primaries++
		}
	}
	if primaries != 1 {
		return apperr.Invalid("Field images must have exactly one primary image to publish (found %d).", primaries)
	}
	return nil
}

// Publish freezes the draft into a new snapshot at now. The images keep
// their ids and rendition URIs when the draft's images are the ones of the
// previous publish; otherwise ids missing from the draft are assigned and
// every image gets new rendition URIs. publishedAt always moves forward.
func (p *Property) Publish(now time.Time, m Media) error {
	if err := CheckPublishable(p.Draft); err != nil {
		return err
	}
	if p.PublishedAt != nil && !now.After(*p.PublishedAt) {
		now = p.PublishedAt.Add(time.Millisecond)
	}
	d := p.Draft
	if p.Images == nil || !slices.EqualFunc(d.Images, p.ImageSources, sameImage) {
		p.Images = makeImages(p.ID, d.Images, m)
		p.ImageSources = slices.Clone(d.Images)
	}
	counts := Derive(d.Rooms)
	l := &Listing{
		ID: p.ID, OrgID: p.OrgID,
		Slug: d.Slug, Nickname: d.Nickname, Active: d.Active, IsListed: d.IsListed,
		PropertyType: d.PropertyType, RoomType: d.RoomType, Address: d.Address,
		Accommodates: d.Accommodates, Rooms: cloneRooms(d.Rooms),
		Bedrooms: counts.Bedrooms, Beds: counts.Beds, Bathrooms: counts.Bathrooms,
		SquareMeter: d.SquareMeter, Timezone: d.Timezone, Pricing: d.Pricing, Terms: d.Terms,
		Amenities: slices.Clone(d.Amenities), Description: d.Description, Translations: maps.Clone(d.Translations),
		Images: slices.Clone(p.Images), PublishedAt: now,
	}
	if l.Slug == "" {
		l.Slug = Slugify(d.Nickname)
	}
	l.Pricing.Currency = Currency
	if d.OwnerName != nil {
		l.OwnerName = *d.OwnerName
	}
	p.Listing = l
	p.PublishedAt = &now
	return nil
}

func cloneRooms(rooms []Room) []Room {
	out := slices.Clone(rooms)
	for i := range out {
		out[i].Beds = slices.Clone(out[i].Beds)
	}
	return out
}

func makeImages(listingID string, src []DraftImage, m Media) []Image {
	token := m.NewID("")[:16]
	out := make([]Image, len(src))
	for i, s := range src {
		id := s.ID
		if id == "" {
			id = m.NewID("img_")
		}
		th, re, la, or := m.Renditions(listingID, token, id, s.URL)
		out[i] = Image{
			ID: id, IsPrimary: s.IsPrimary, Caption: s.Caption, SortOrder: s.SortOrder,
			Width: s.Width, Height: s.Height, Bytes: s.Bytes,
			Thumbnail: th, Regular: re, Large: la, Original: or,
		}
	}
	// Sorted by sortOrder; the primary is not moved first. Ties keep the
	// draft's order.
	sort.SliceStable(out, func(a, b int) bool { return out[a].SortOrder < out[b].SortOrder })
	return out
}

func sameImage(a, b DraftImage) bool {
	return a.ID == b.ID && a.IsPrimary == b.IsPrimary && eqPtr(a.Caption, b.Caption) && a.SortOrder == b.SortOrder &&
		a.Width == b.Width && a.Height == b.Height && a.Bytes == b.Bytes && a.URL == b.URL
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Slugify makes a URL slug of a nickname: lowercase ASCII letters and digits
// separated by single hyphens.
func Slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	if b.Len() == 0 {
		return "listing"
	}
	return b.String()
}
