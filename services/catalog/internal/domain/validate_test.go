package domain

import (
	"strings"
	"testing"

	"quarters.dev/pkg/apperr"
)

func validDraft() Draft {
	return Draft{
		Nickname: "Canal House", Timezone: "Europe/Amsterdam",
		Address: Address{City: "Amsterdam", Country: "NL"},
		Rooms:   []Room{{Kind: RoomBedroom, Beds: []Bed{{Type: "double", Count: 1}}}, {Kind: RoomFullBathroom}},
		Images:  []DraftImage{{IsPrimary: true, URL: "https://img.example/1.jpg"}},
	}
}

func TestValidateNamesTheFieldPath(t *testing.T) {
	t.Parallel()
	ptr := func(n int) *int { return &n }
	cents := func(n int64) *int64 { return &n }
	str := func(s string) *string { return &s }
	cases := []struct {
		name   string
		change func(*Draft)
		field  string // "" means valid
	}{
		{"valid", func(*Draft) {}, ""},
		{"zero money is valid", func(d *Draft) { d.Pricing.DepositCents = cents(0) }, ""},
		{"nightly basis", func(d *Draft) { d.Pricing.RateBasis = str("nightly"); d.Pricing.NightlyRateCents = cents(9500) }, ""},
		{"UTC is a zone", func(d *Draft) { d.Timezone = "UTC" }, ""},
		{"missing nickname", func(d *Draft) { d.Nickname = "" }, "nickname"},
		{"bad slug", func(d *Draft) { d.Slug = "Canal House" }, "slug"},
		{"missing city", func(d *Draft) { d.Address.City = "" }, "address.city"},
		{"missing country", func(d *Draft) { d.Address.Country = "" }, "address.country"},
		{"country not alpha-2", func(d *Draft) { d.Address.Country = "NLD" }, "address.country"},
		{"latitude out of range", func(d *Draft) { l := 91.0; d.Address.Latitude = &l }, "address.latitude"},
		{"negative accommodates", func(d *Draft) { d.Accommodates = -1 }, "accommodates"},
		{"unknown room kind", func(d *Draft) { d.Rooms[1].Kind = "kitchen" }, "rooms[1].kind"},
		{"unknown bed type", func(d *Draft) { d.Rooms[0].Beds = append(d.Rooms[0].Beds, Bed{Type: "hammock", Count: 1}) }, "rooms[0].beds[1].type"},
		{"zero beds", func(d *Draft) { d.Rooms[0].Beds[0].Count = 0 }, "rooms[0].beds[0].count"},
		{"bed in a bathroom", func(d *Draft) { d.Rooms[1].Beds = []Bed{{Type: "single", Count: 1}} }, "rooms[1].beds"},
		{"zero square meters", func(d *Draft) { d.SquareMeter = ptr(0) }, "squareMeter"},
		{"missing timezone", func(d *Draft) { d.Timezone = "" }, "timezone"},
		{"unknown timezone", func(d *Draft) { d.Timezone = "Europe/Atlantis" }, "timezone"},
		{"Local is no zone", func(d *Draft) { d.Timezone = "Local" }, "timezone"},
		{"other currency", func(d *Draft) { d.Pricing.Currency = "USD" }, "pricing.currency"},
		{"negative rent", func(d *Draft) { d.Pricing.MonthlyRateCents = cents(-1) }, "pricing.monthlyRateCents"},
		{"unknown rate basis", func(d *Draft) { d.Pricing.RateBasis = str("weekly") }, "pricing.rateBasis"},
		{"zero min nights", func(d *Draft) { d.Terms.MinNights = ptr(0) }, "terms.minNights"},
		{"max below min", func(d *Draft) { d.Terms.MinNights = ptr(30); d.Terms.MaxNights = ptr(10) }, "terms.maxNights"},
		{"empty amenity", func(d *Draft) { d.Amenities = []string{"wifi", ""} }, "amenities[1]"},
		{"bad language code", func(d *Draft) { d.Translations = map[string]Description{"German": {}} }, "translations.German"},
		{"overlong translated title", func(d *Draft) {
			d.Translations = map[string]Description{"de": {Title: str(strings.Repeat("x", 201))}}
		}, "translations.de.title"},
		{"image without url", func(d *Draft) { d.Images[0].URL = "" }, "images[0].url"},
		{"relative image url", func(d *Draft) { d.Images = append(d.Images, DraftImage{URL: "/a.jpg"}) }, "images[1].url"},
		{"negative height", func(d *Draft) { d.Images[0].Height = -1 }, "images[0].height"},
		{"repeated image id", func(d *Draft) {
			d.Images = []DraftImage{{ID: "a", URL: "https://i.example/a"}, {ID: "a", URL: "https://i.example/b"}}
		}, "images[1].id"},
		{"no primary is fine in a draft", func(d *Draft) { d.Images[0].IsPrimary = false }, ""},
	}
	for _, tc := range cases {
		d := validDraft()
		tc.change(&d)
		err := d.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.field != "" && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.field != "" && (!apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(apperr.As(err).Message, "Field "+tc.field+" ")):
			t.Errorf("%s: error %q does not name %s", tc.name, err, tc.field)
		}
	}
}
