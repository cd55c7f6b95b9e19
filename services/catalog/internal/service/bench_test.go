package service_test

import (
	"fmt"
	"testing"
	"time"

	"quarters.dev/services/catalog/internal/domain"
	"quarters.dev/services/catalog/internal/ports"
	"quarters.dev/services/catalog/internal/view"
)

func benchListing(i int) domain.Listing {
	s := func(v string) *string { return &v }
	c := func(v int64) *int64 { return &v }
	n := func(v int) *int { return &v }
	var images []domain.Image
	for j := range 2 {
		base := fmt.Sprintf("https://media.quarters.dev/listings/prop_%d/0123456789abcdef/img_%d", i, j)
		images = append(images, domain.Image{ID: fmt.Sprintf("img_%d", j), IsPrimary: j == 0, SortOrder: j + 1,
			Width: 2400, Height: 1600, Bytes: 800000, Thumbnail: base + "/thumbnail.jpg", Regular: base + "/regular.jpg",
			Large: base + "/large.jpg", Original: base + "/original.jpg"})
	}
	return domain.Listing{
		ID: fmt.Sprintf("prop_%06d", i), OrgID: "org_bench", Slug: fmt.Sprintf("listing-%d", i), Nickname: fmt.Sprintf("AMS %03d", i),
		Active: true, IsListed: true, PropertyType: "Apartment", RoomType: "Entire home/apt",
		Address:      domain.Address{Street: s("Teststraat 1"), City: "Amsterdam", Country: "NL"},
		Accommodates: 2,
		Rooms: []domain.Room{{Kind: domain.RoomBedroom, Name: "Bedroom", Beds: []domain.Bed{{Type: "double", Count: 1}}},
			{Kind: domain.RoomFullBathroom}},
		Bedrooms: 1, Beds: 1, Bathrooms: 1, SquareMeter: n(50), Timezone: "Europe/Amsterdam",
		Pricing:     domain.ListingPricing{Currency: "EUR", MonthlyRateCents: c(180000), DepositCents: c(360000)},
		Terms:       domain.Terms{MinNights: n(30)},
		Amenities:   []string{"wifi", "washer"},
		Description: domain.Description{Title: s("A furnished apartment"), Summary: s("<p>Bright and quiet.</p>")},
		Images:      images, PublishedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
}

// BenchmarkPublishIntoAnOrgOf500 is what a publish (or its event arriving
// at another replica) costs the view: the listing rendered once and the
// org's list body of 500 listings joined again.
func BenchmarkPublishIntoAnOrgOf500(b *testing.B) {
	v := view.New(ports.RenderListing)
	var states []domain.ListingState
	for i := range 500 {
		l := benchListing(i)
		states = append(states, domain.ListingState{ID: l.ID, OrgID: l.OrgID, Version: 1, Listing: &l})
	}
	if _, err := v.Apply(states...); err != nil {
		b.Fatal(err)
	}
	l := benchListing(7)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.Nickname = fmt.Sprintf("AMS %03d", i%1000)
		if _, err := v.Apply(domain.ListingState{ID: l.ID, OrgID: l.OrgID, Version: int64(i + 2), Listing: &l}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(v.List("org_bench"))), "list-bytes")
}

// BenchmarkReadOneListing is the view's share of GET /listings/{id}.
func BenchmarkReadOneListing(b *testing.B) {
	v := view.New(ports.RenderListing)
	l := benchListing(1)
	_, _ = v.Apply(domain.ListingState{ID: l.ID, OrgID: l.OrgID, Version: 1, Listing: &l})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := v.Get("org_bench", l.ID); !ok {
				b.Fatal("missing")
			}
		}
	})
}
