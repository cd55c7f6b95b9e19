package domain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
)

func TestDeriveCountsRooms(t *testing.T) {
	t.Parallel()
	bed := func(typ string, n int) []Bed { return []Bed{{Type: typ, Count: n}} }
	cases := []struct {
		name  string
		rooms []Room
		want  Derived
	}{
		{"no rooms", nil, Derived{}},
		{"one bedroom with a double", []Room{{Kind: RoomBedroom, Beds: bed("double", 1)}}, Derived{Bedrooms: 1, Beds: 1}},
		{"half bathroom counts a half", []Room{{Kind: RoomFullBathroom}, {Kind: RoomHalfBathroom}}, Derived{Bathrooms: 1.5}},
		{"two half bathrooms make one", []Room{{Kind: RoomHalfBathroom}, {Kind: RoomHalfBathroom}}, Derived{Bathrooms: 1}},
		{"beds in a living room count", []Room{
			{Kind: RoomBedroom, Beds: []Bed{{Type: "single", Count: 2}, {Type: "crib", Count: 1}}},
			{Kind: RoomLivingRoom, Beds: bed("sofa_bed", 1)},
		}, Derived{Bedrooms: 1, Beds: 4}},
		{"a bedroom without beds is still a bedroom", []Room{{Kind: RoomBedroom}}, Derived{Bedrooms: 1}},
		{"other rooms count nothing but their beds", []Room{{Kind: RoomOther, Beds: bed("bunk_bed", 2)}}, Derived{Beds: 2}},
	}
	for _, tc := range cases {
		if got := Derive(tc.rooms); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func testMedia() Media {
	n := 0
	return Media{BaseURL: "https://media.example", NewID: func(prefix string) string {
		n++
		return fmt.Sprintf("%s%016d", prefix, n)
	}}
}

func draftWithImages(images ...DraftImage) Draft {
	return Draft{Nickname: "Canal House", Timezone: "Europe/Amsterdam",
		Address: Address{City: "Amsterdam", Country: "NL"}, Images: images}
}

func TestPublishRefusesWithoutExactlyOnePrimary(t *testing.T) {
	t.Parallel()
	img := func(primary bool) DraftImage { return DraftImage{IsPrimary: primary, URL: "https://x.example/a.jpg"} }
	cases := []struct {
		name   string
		images []DraftImage
		ok     bool
	}{
		{"no images", nil, false},
		{"none primary", []DraftImage{img(false), img(false)}, false},
		{"two primaries", []DraftImage{img(true), img(true)}, false},
		{"one primary", []DraftImage{img(false), img(true)}, true},
	}
	for _, tc := range cases {
		p := Property{ID: "p1", OrgID: "o1", Draft: draftWithImages(tc.images...)}
		err := p.Publish(time.Now(), testMedia())
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v", tc.name, err)
			continue
		}
		if err != nil && (!apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(err.Error(), "Field images ")) {
			t.Errorf("%s: error does not name images: %v", tc.name, err)
		}
		if err != nil && p.Listing != nil {
			t.Errorf("%s: refused publish left a snapshot", tc.name)
		}
	}
}

func TestPublishFreezesASnapshot(t *testing.T) {
	t.Parallel()
	m := testMedia()
	d := draftWithImages(
		DraftImage{SortOrder: 2, IsPrimary: true, URL: "https://x.example/b.png", Width: 10, Height: 20, Bytes: 30},
		DraftImage{SortOrder: 1, URL: "https://x.example/a.jpg"},
		DraftImage{ID: "given", SortOrder: 3, URL: "https://x.example/c.jpg"},
	)
	d.Rooms = []Room{{Kind: RoomBedroom, Beds: []Bed{{Type: "double", Count: 1}}}, {Kind: RoomHalfBathroom}}
	owner := "J. Lessor"
	d.OwnerName = &owner
	p := Property{ID: "p1", OrgID: "o1", Draft: d}
	t1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if err := p.Publish(t1, m); err != nil {
		t.Fatal(err)
	}
	l := p.Listing
	if l.Bedrooms != 1 || l.Beds != 1 || l.Bathrooms != 0.5 || l.Slug != "canal-house" || l.Pricing.Currency != "EUR" || l.OwnerName != owner {
		t.Fatalf("derived fields: %+v", l)
	}
	if !l.PublishedAt.Equal(t1) || !p.PublishedAt.Equal(t1) {
		t.Fatalf("publishedAt %v", l.PublishedAt)
	}
	if l.Images[0].SortOrder != 1 || l.Images[1].SortOrder != 2 || !l.Images[1].IsPrimary || l.Images[2].ID != "given" {
		t.Fatalf("images not sorted by sortOrder with the primary in place: %+v", l.Images)
	}
	for _, im := range l.Images {
		if im.ID == "" || !strings.HasPrefix(im.Thumbnail, "https://media.example/listings/p1/") ||
			!strings.Contains(im.Regular, im.ID) || im.Large == im.Regular || im.Original == im.Large {
			t.Fatalf("renditions of %+v", im)
		}
	}
	if !strings.HasSuffix(l.Images[1].Original, "/original.png") {
		t.Fatalf("original keeps the source's type: %s", l.Images[1].Original)
	}

	// Editing the draft changes nothing published.
	p.Draft.Nickname = "Renamed"
	p.Draft.Rooms[0].Kind = RoomOther
	if p.Listing.Nickname != "Canal House" || p.Listing.Rooms[0].Kind != RoomBedroom {
		t.Fatal("draft edit reached the snapshot")
	}

	// Republishing with the same images keeps ids and URIs; publishedAt
	// moves forward even when the clock does not.
	before := p.Listing.Images
	if err := p.Publish(t1, m); err != nil {
		t.Fatal(err)
	}
	if !p.Listing.PublishedAt.After(t1) || p.Listing.Nickname != "Renamed" {
		t.Fatalf("republish: %v %s", p.Listing.PublishedAt, p.Listing.Nickname)
	}
	for i := range before {
		if before[i] != p.Listing.Images[i] {
			t.Fatalf("unchanged images got new renditions: %+v vs %+v", before[i], p.Listing.Images[i])
		}
	}

	// Changed images get new rendition URIs.
	p.Draft.Images[1].Caption = &owner
	if err := p.Publish(t1.Add(time.Hour), m); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if before[i].Thumbnail == p.Listing.Images[i].Thumbnail {
			t.Fatalf("changed images kept their renditions: %s", before[i].Thumbnail)
		}
	}
	if p.Listing.Images[2].ID != "given" {
		t.Fatal("a given image id was not kept")
	}
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Canal House":           "canal-house",
		"  Loft #3 — Kreuzberg": "loft-3-kreuzberg",
		"Åre":                   "re",
		"!!!":                   "listing",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}
