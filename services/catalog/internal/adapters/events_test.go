package adapters

import (
	"context"
	"reflect"
	"testing"
	"time"

	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
)

func TestListingEventsCarryTheWholeSnapshot(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	n := func(v int) *int { return &v }
	c := func(v int64) *int64 { return &v }
	lat := 52.37
	l := domain.Listing{
		ID: "p1", OrgID: "o1", Slug: "canal", Nickname: "Canal", Active: true, PropertyType: "Apartment", RoomType: "Entire home/apt",
		Address:      domain.Address{Street: s("Prinsengracht 1"), City: "Amsterdam", Country: "NL", Latitude: &lat},
		Accommodates: 3,
		Rooms: []domain.Room{{Kind: domain.RoomLivingRoom, Name: "", Beds: []domain.Bed{{Type: "sofa_bed", Count: 1}}},
			{Kind: domain.RoomHalfBathroom, Name: "WC"}},
		Bedrooms: 0, Beds: 1, Bathrooms: 0.5, SquareMeter: n(40), Timezone: "Europe/Amsterdam",
		Pricing: domain.ListingPricing{Currency: "EUR", MonthlyRateCents: c(180000), DepositCents: c(0),
			RateBasis: s("nightly"), NightlyRateCents: c(9000)},
		Terms:        domain.Terms{MinNights: n(30)},
		Amenities:    []string{"wifi"},
		Description:  domain.Description{Title: s("Canal"), Notes: s("")},
		Translations: map[string]domain.Description{"nl": {Title: s("Gracht")}},
		Images: []domain.Image{{ID: "i1", IsPrimary: true, Caption: s("x"), SortOrder: 1, Width: 2, Height: 3, Bytes: 4,
			Thumbnail: "https://m/t", Regular: "https://m/r", Large: "https://m/l", Original: "https://m/o"}},
		PublishedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		OwnerName:   "Owner B.V.",
	}
	p := domain.Property{ID: "p1", OrgID: "o1", Version: 7, Listing: &l, UpdatedAt: l.PublishedAt}
	ev, err := ListingEvents("t.listings")(context.Background(), p, app.EventUpdated)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Topic != "t.listings" || ev.Key != "p1" {
		t.Fatalf("event %s %s", ev.Topic, ev.Key)
	}
	st, err := DecodeListingEvent(ev.Value)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "p1" || st.OrgID != "o1" || st.Version != 7 || st.Listing == nil {
		t.Fatalf("state %+v", st)
	}
	if !reflect.DeepEqual(*st.Listing, l) {
		t.Fatalf("snapshot changed in transit:\n%+v\n%+v", *st.Listing, l)
	}

	p.Listing = nil
	p.Version = 8
	ev, _ = ListingEvents("t.listings")(context.Background(), p, app.EventDeleted)
	st, err = DecodeListingEvent(ev.Value)
	if err != nil || st.Listing != nil || st.Version != 8 || st.OrgID != "o1" {
		t.Fatalf("deleted: %+v %v", st, err)
	}
}
