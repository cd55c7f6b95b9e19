package domain

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"quarters.dev/pkg/apperr"
)

// Bounds of draft fields.
const (
	MaxNameLength = 200
	MaxTextLength = 100_000
	MaxRooms      = 100
	MaxImages     = 200
	MaxCount      = 1000
)

var (
	slugPattern     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	countryPattern  = regexp.MustCompile(`^[A-Z]{2}$`)
	languagePattern = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
)

// invalid names the field at fault.
func invalid(field, format string, args ...any) error {
	return apperr.Invalid("Field %s %s.", field, fmt.Sprintf(format, args...))
}

// Validate checks a draft's rules and returns the first violation, naming
// its field path (for example `rooms[2].beds[0].type`). Text is expected
// trimmed by the caller.
func (d Draft) Validate() error {
	if err := text("nickname", d.Nickname, true, MaxNameLength); err != nil {
		return err
	}
	if d.Slug != "" && (!slugPattern.MatchString(d.Slug) || len(d.Slug) > MaxNameLength) {
		return invalid("slug", "must be lowercase letters and digits separated by hyphens")
	}
	if err := text("propertyType", d.PropertyType, false, MaxNameLength); err != nil {
		return err
	}
	if err := text("roomType", d.RoomType, false, MaxNameLength); err != nil {
		return err
	}
	if err := d.Address.validate("address"); err != nil {
		return err
	}
	if d.Accommodates < 0 || d.Accommodates > MaxCount {
		return invalid("accommodates", "must be an integer from 0 to %d", MaxCount)
	}
	if len(d.Rooms) > MaxRooms {
		return invalid("rooms", "must hold at most %d rooms", MaxRooms)
	}
	for i, r := range d.Rooms {
		if err := r.validate(fmt.Sprintf("rooms[%d]", i)); err != nil {
			return err
		}
	}
	if d.SquareMeter != nil && (*d.SquareMeter < 1 || *d.SquareMeter > 100_000) {
		return invalid("squareMeter", "must be a positive integer or null")
	}
	if err := ValidTimezone(d.Timezone); err != nil {
		return err
	}
	if err := d.Pricing.validate("pricing"); err != nil {
		return err
	}
	if err := d.Terms.validate("terms"); err != nil {
		return err
	}
	for i, a := range d.Amenities {
		if err := text(fmt.Sprintf("amenities[%d]", i), a, true, MaxNameLength); err != nil {
			return err
		}
	}
	if err := d.Description.validate("description"); err != nil {
		return err
	}
	langs := make([]string, 0, len(d.Translations))
	for lang := range d.Translations {
		langs = append(langs, lang)
	}
	slices.Sort(langs)
	for _, lang := range langs {
		field := "translations." + lang
		if !languagePattern.MatchString(lang) {
			return invalid(field, "is not a language code (for example de or pt-BR)")
		}
		if err := d.Translations[lang].validate(field); err != nil {
			return err
		}
	}
	if len(d.Images) > MaxImages {
		return invalid("images", "must hold at most %d images", MaxImages)
	}
	ids := map[string]int{}
	for i, im := range d.Images {
		field := fmt.Sprintf("images[%d]", i)
		if err := im.validate(field); err != nil {
			return err
		}
		if im.ID != "" {
			if j, dup := ids[im.ID]; dup {
				return invalid(field+".id", "repeats the id of images[%d]", j)
			}
			ids[im.ID] = i
		}
	}
	if d.OwnerName != nil {
		if err := text("ownerName", *d.OwnerName, false, MaxNameLength); err != nil {
			return err
		}
	}
	return nil
}

// ValidTimezone accepts an IANA zone name ("Europe/Amsterdam", "UTC").
func ValidTimezone(tz string) error {
	if tz == "" {
		return invalid("timezone", "is required (an IANA zone such as Europe/Amsterdam)")
	}
	if tz == "Local" {
		return invalid("timezone", "must be an IANA zone such as Europe/Amsterdam")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return invalid("timezone", "must be an IANA zone such as Europe/Amsterdam, not %q", tz)
	}
	return nil
}

func text(field, s string, required bool, maxLen int) error {
	if required && s == "" {
		return invalid(field, "is required")
	}
	if utf8.RuneCountInString(s) > maxLen {
		return invalid(field, "must be at most %d characters", maxLen)
	}
	return nil
}

func optText(field string, s *string, maxLen int) error {
	if s == nil {
		return nil
	}
	return text(field, *s, false, maxLen)
}

func (a Address) validate(field string) error {
	if err := optText(field+".street", a.Street, MaxNameLength); err != nil {
		return err
	}
	if err := optText(field+".postalCode", a.PostalCode, 20); err != nil {
		return err
	}
	if err := text(field+".city", a.City, true, MaxNameLength); err != nil {
		return err
	}
	if !countryPattern.MatchString(a.Country) {
		if a.Country == "" {
			return invalid(field+".country", "is required")
		}
		return invalid(field+".country", "must be an ISO 3166-1 alpha-2 code such as NL")
	}
	if err := optText(field+".area", a.Area, MaxNameLength); err != nil {
		return err
	}
	if a.Latitude != nil && (*a.Latitude < -90 || *a.Latitude > 90) {
		return invalid(field+".latitude", "must be from -90 to 90")
	}
	if a.Longitude != nil && (*a.Longitude < -180 || *a.Longitude > 180) {
		return invalid(field+".longitude", "must be from -180 to 180")
	}
	return nil
}

func (r Room) validate(field string) error {
	if !slices.Contains(RoomKinds, r.Kind) {
		return invalid(field+".kind", "must be one of %s", joinKinds())
	}
	if err := text(field+".name", r.Name, false, MaxNameLength); err != nil {
		return err
	}
	if (r.Kind == RoomFullBathroom || r.Kind == RoomHalfBathroom) && len(r.Beds) > 0 {
		return invalid(field+".beds", "must be empty: a bathroom has no beds")
	}
	for i, b := range r.Beds {
		bf := fmt.Sprintf("%s.beds[%d]", field, i)
		if !slices.Contains(BedTypes, b.Type) {
			return invalid(bf+".type", "must be one of %s", strings.Join(BedTypes, ", "))
		}
		if b.Count < 1 || b.Count > MaxCount {
			return invalid(bf+".count", "must be an integer from 1 to %d", MaxCount)
		}
	}
	return nil
}

func joinKinds() string {
	s := make([]string, len(RoomKinds))
	for i, k := range RoomKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func (p ListingPricing) validate(field string) error {
	if p.Currency != "" && p.Currency != Currency {
		return invalid(field+".currency", "must be %s", Currency)
	}
	for _, c := range []struct {
		name string
		v    *int64
	}{
		{"monthlyRateCents", p.MonthlyRateCents}, {"nightlyRateCents", p.NightlyRateCents},
		{"depositCents", p.DepositCents}, {"utilitiesCents", p.UtilitiesCents}, {"furnitureCents", p.FurnitureCents},
	} {
		if c.v != nil && (*c.v < 0 || *c.v > 1_000_000_000_00) {
			return invalid(field+"."+c.name, "must be a non-negative integer amount of euro-cents or null")
		}
	}
	if p.RateBasis != nil && *p.RateBasis != RateMonthly && *p.RateBasis != RateNightly {
		return invalid(field+".rateBasis", "must be %s, %s or null", RateMonthly, RateNightly)
	}
	return nil
}

func (t Terms) validate(field string) error {
	if t.MinNights != nil && (*t.MinNights < 1 || *t.MinNights > 3660) {
		return invalid(field+".minNights", "must be an integer from 1 to 3660 or null")
	}
	if t.MaxNights != nil && (*t.MaxNights < 1 || *t.MaxNights > 3660) {
		return invalid(field+".maxNights", "must be an integer from 1 to 3660 or null")
	}
	if t.MinNights != nil && t.MaxNights != nil && *t.MaxNights < *t.MinNights {
		return invalid(field+".maxNights", "must not be less than minNights")
	}
	return nil
}

func (d Description) validate(field string) error {
	if err := optText(field+".title", d.Title, MaxNameLength); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"summary", d.Summary}, {"space", d.Space}, {"neighborhood", d.Neighborhood}, {"access", d.Access}, {"notes", d.Notes}} {
		if err := optText(field+"."+f.name, f.v, MaxTextLength); err != nil {
			return err
		}
	}
	return nil
}

func (im DraftImage) validate(field string) error {
	if err := text(field+".id", im.ID, false, 100); err != nil {
		return err
	}
	if err := optText(field+".caption", im.Caption, 1000); err != nil {
		return err
	}
	if im.Width < 0 {
		return invalid(field+".width", "must be a non-negative integer")
	}
	if im.Height < 0 {
		return invalid(field+".height", "must be a non-negative integer")
	}
	if im.Bytes < 0 {
		return invalid(field+".bytes", "must be a non-negative integer")
	}
	u, err := url.Parse(im.URL)
	if im.URL == "" {
		return invalid(field+".url", "is required (the original image)")
	}
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return invalid(field+".url", "must be an absolute http(s) URL")
	}
	return nil
}
