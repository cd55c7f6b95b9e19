package ports

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/catalog/internal/domain"
)

// DecodeDraft reads a PropertyDraft from a decoded JSON value (numbers as
// json.Number). It refuses unknown fields and values of the wrong type,
// naming the field path (`rooms[2].beds[0].type`), and trims text; the
// draft's rules are checked by domain.Draft.Validate.
func DecodeDraft(v any) (domain.Draft, error) {
	var d domain.Draft
	r := &reader{}
	o := r.object("", v, draftFields...)
	if r.err != nil {
		return d, r.err
	}
	d.Nickname = r.str("nickname", o["nickname"])
	d.Slug = r.str("slug", o["slug"])
	d.Active = r.boolean("active", o["active"])
	d.IsListed = r.boolean("isListed", o["isListed"])
	d.PropertyType = r.str("propertyType", o["propertyType"])
	d.RoomType = r.str("roomType", o["roomType"])
	if a, ok := o["address"]; ok && a != nil {
		d.Address = r.address("address", a)
	} else if r.err == nil {
		r.err = apperr.Invalid("Field address is required (with city and country).")
	}
	d.Accommodates = r.integer("accommodates", o["accommodates"])
	for i, rv := range r.array("rooms", o["rooms"]) {
		d.Rooms = append(d.Rooms, r.room(fmt.Sprintf("rooms[%d]", i), rv))
	}
	d.SquareMeter = r.optInt("squareMeter", o["squareMeter"])
	d.Timezone = r.str("timezone", o["timezone"])
	d.Pricing = r.pricing("pricing", o["pricing"])
	d.Terms = r.terms("terms", o["terms"])
	for i, av := range r.array("amenities", o["amenities"]) {
		d.Amenities = append(d.Amenities, r.str(fmt.Sprintf("amenities[%d]", i), av))
	}
	d.Description = r.description("description", o["description"])
	if tv, ok := o["translations"]; ok && tv != nil {
		t := r.object("translations", tv)
		d.Translations = make(map[string]domain.Description, len(t))
		for _, lang := range sortedKeys(t) {
			d.Translations[lang] = r.description("translations."+lang, t[lang])
		}
	}
	for i, iv := range r.array("images", o["images"]) {
		d.Images = append(d.Images, r.image(fmt.Sprintf("images[%d]", i), iv))
	}
	d.OwnerName = r.optStr("ownerName", o["ownerName"])
	if r.err != nil {
		return domain.Draft{}, r.err
	}
	return d, nil
}

var (
	draftFields = []string{
		"nickname", "slug", "active", "isListed", "propertyType", "roomType", "address", "accommodates",
		"rooms", "squareMeter", "timezone", "pricing", "terms", "amenities", "description", "translations",
		"images", "ownerName",
	}
	addressFields     = []string{"street", "postalCode", "city", "country", "area", "latitude", "longitude"}
	roomFields        = []string{"kind", "name", "beds"}
	bedFields         = []string{"type", "count"}
	pricingFields     = []string{"currency", "monthlyRateCents", "nightlyRateCents", "rateBasis", "depositCents", "utilitiesCents", "furnitureCents"}
	termsFields       = []string{"minNights", "maxNights"}
	descriptionFields = []string{"title", "summary", "space", "neighborhood", "access", "notes"}
	imageFields       = []string{"id", "isPrimary", "caption", "sortOrder", "width", "height", "bytes", "url"}
)

// reader keeps the first error; every method returns a zero value once an
// error is recorded, so decoding reads straight through.
type reader struct{ err error }

func (r *reader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = apperr.Invalid("Field %s %s.", field, fmt.Sprintf(format, args...))
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// object returns v as an object; with allowed names it refuses any other key.
func (r *reader) object(field string, v any, allowed ...string) map[string]any {
	if r.err != nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		if field == "" {
			r.err = apperr.Invalid("The body must be a JSON object.")
		} else {
			r.fail(field, "must be an object")
		}
		return nil
	}
	if len(allowed) > 0 {
		for _, k := range sortedKeys(m) {
			if !slices.Contains(allowed, k) {
				r.fail(join(field, k), "is not a known field")
				return nil
			}
		}
	}
	return m
}

// array returns v as an array; null or absent is empty.
func (r *reader) array(field string, v any) []any {
	if r.err != nil || v == nil {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.fail(field, "must be an array")
		return nil
	}
	return a
}

func (r *reader) str(field string, v any) string {
	if s := r.optStr(field, v); s != nil {
		return *s
	}
	return ""
}

func (r *reader) optStr(field string, v any) *string {
	if r.err != nil || v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		r.fail(field, "must be a string")
		return nil
	}
	s = strings.TrimSpace(s)
	return &s
}

func (r *reader) boolean(field string, v any) bool {
	if r.err != nil || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		r.fail(field, "must be a boolean")
	}
	return b
}

func (r *reader) optInt64(field string, v any) *int64 {
	if r.err != nil || v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		r.fail(field, "must be an integer")
		return nil
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		r.fail(field, "must be an integer")
		return nil
	}
	return &i
}

func (r *reader) optInt(field string, v any) *int {
	i := r.optInt64(field, v)
	if i == nil {
		return nil
	}
	if *i > math.MaxInt32 || *i < math.MinInt32 {
		r.fail(field, "is out of range")
		return nil
	}
	n := int(*i)
	return &n
}

func (r *reader) integer(field string, v any) int {
	if n := r.optInt(field, v); n != nil {
		return *n
	}
	return 0
}

func (r *reader) optFloat(field string, v any) *float64 {
	if r.err != nil || v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		r.fail(field, "must be a number")
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		r.fail(field, "must be a number")
		return nil
	}
	return &f
}

func (r *reader) address(field string, v any) domain.Address {
	o := r.object(field, v, addressFields...)
	return domain.Address{
		Street:     r.optStr(field+".street", o["street"]),
		PostalCode: r.optStr(field+".postalCode", o["postalCode"]),
		City:       r.str(field+".city", o["city"]),
		Country:    r.str(field+".country", o["country"]),
		Area:       r.optStr(field+".area", o["area"]),
		Latitude:   r.optFloat(field+".latitude", o["latitude"]),
		Longitude:  r.optFloat(field+".longitude", o["longitude"]),
	}
}

func (r *reader) room(field string, v any) domain.Room {
	o := r.object(field, v, roomFields...)
	room := domain.Room{
		Kind: domain.RoomKind(r.str(field+".kind", o["kind"])),
		Name: r.str(field+".name", o["name"]),
	}
	for i, bv := range r.array(field+".beds", o["beds"]) {
		bf := fmt.Sprintf("%s.beds[%d]", field, i)
		b := r.object(bf, bv, bedFields...)
		room.Beds = append(room.Beds, domain.Bed{Type: r.str(bf+".type", b["type"]), Count: r.integer(bf+".count", b["count"])})
	}
	return room
}

func (r *reader) pricing(field string, v any) domain.ListingPricing {
	p := domain.ListingPricing{Currency: domain.Currency}
	if v == nil {
		return p
	}
	o := r.object(field, v, pricingFields...)
	if c := r.optStr(field+".currency", o["currency"]); c != nil {
		p.Currency = *c
	}
	p.MonthlyRateCents = r.optInt64(field+".monthlyRateCents", o["monthlyRateCents"])
	p.NightlyRateCents = r.optInt64(field+".nightlyRateCents", o["nightlyRateCents"])
	p.RateBasis = r.optStr(field+".rateBasis", o["rateBasis"])
	p.DepositCents = r.optInt64(field+".depositCents", o["depositCents"])
	p.UtilitiesCents = r.optInt64(field+".utilitiesCents", o["utilitiesCents"])
	p.FurnitureCents = r.optInt64(field+".furnitureCents", o["furnitureCents"])
	return p
}

func (r *reader) terms(field string, v any) domain.Terms {
	if v == nil {
		return domain.Terms{}
	}
	o := r.object(field, v, termsFields...)
	return domain.Terms{
		MinNights: r.optInt(field+".minNights", o["minNights"]),
		MaxNights: r.optInt(field+".maxNights", o["maxNights"]),
	}
}

func (r *reader) description(field string, v any) domain.Description {
	if v == nil {
		return domain.Description{}
	}
	o := r.object(field, v, descriptionFields...)
	return domain.Description{
		Title:        r.optStr(field+".title", o["title"]),
		Summary:      r.optStr(field+".summary", o["summary"]),
		Space:        r.optStr(field+".space", o["space"]),
		Neighborhood: r.optStr(field+".neighborhood", o["neighborhood"]),
		Access:       r.optStr(field+".access", o["access"]),
		Notes:        r.optStr(field+".notes", o["notes"]),
	}
}

func (r *reader) image(field string, v any) domain.DraftImage {
	o := r.object(field, v, imageFields...)
	im := domain.DraftImage{
		ID:        r.str(field+".id", o["id"]),
		IsPrimary: r.boolean(field+".isPrimary", o["isPrimary"]),
		Caption:   r.optStr(field+".caption", o["caption"]),
		SortOrder: r.integer(field+".sortOrder", o["sortOrder"]),
		Width:     r.integer(field+".width", o["width"]),
		Height:    r.integer(field+".height", o["height"]),
		URL:       r.str(field+".url", o["url"]),
	}
	if b := r.optInt64(field+".bytes", o["bytes"]); b != nil {
		im.Bytes = *b
	}
	return im
}

// DraftJSON is a draft as the admin API shows it, in the shape it accepts.
type DraftJSON struct {
	Nickname     string                     `json:"nickname"`
	Slug         string                     `json:"slug"`
	Active       bool                       `json:"active"`
	IsListed     bool                       `json:"isListed"`
	PropertyType string                     `json:"propertyType"`
	RoomType     string                     `json:"roomType"`
	Address      AddressJSON                `json:"address"`
	Accommodates int                        `json:"accommodates"`
	Rooms        []RoomJSON                 `json:"rooms"`
	SquareMeter  *int                       `json:"squareMeter"`
	Timezone     string                     `json:"timezone"`
	Pricing      PricingJSON                `json:"pricing"`
	Terms        TermsJSON                  `json:"terms"`
	Amenities    []string                   `json:"amenities"`
	Description  DescriptionJSON            `json:"description"`
	Translations map[string]DescriptionJSON `json:"translations"`
	Images       []DraftImageJSON           `json:"images"`
	OwnerName    *string                    `json:"ownerName"`
}

// DraftImageJSON is a draft image; id is left out until one is given.
type DraftImageJSON struct {
	ID        *string `json:"id,omitempty"`
	IsPrimary bool    `json:"isPrimary"`
	Caption   *string `json:"caption"`
	SortOrder int     `json:"sortOrder"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Bytes     int64   `json:"bytes"`
	URL       string  `json:"url"`
}

// DraftOut renders a draft; lists and maps are never null.
func DraftOut(d domain.Draft) DraftJSON {
	j := DraftJSON{
		Nickname: d.Nickname, Slug: d.Slug, Active: d.Active, IsListed: d.IsListed,
		PropertyType: d.PropertyType, RoomType: d.RoomType, Address: AddressJSON(d.Address),
		Accommodates: d.Accommodates, Rooms: roomsOut(d.Rooms), SquareMeter: d.SquareMeter,
		Timezone: d.Timezone, Pricing: PricingJSON(d.Pricing), Terms: TermsJSON(d.Terms),
		Amenities: append([]string{}, d.Amenities...), Description: DescriptionJSON(d.Description),
		Translations: make(map[string]DescriptionJSON, len(d.Translations)),
		Images:       make([]DraftImageJSON, 0, len(d.Images)), OwnerName: d.OwnerName,
	}
	if j.Pricing.Currency == "" {
		j.Pricing.Currency = domain.Currency
	}
	for k, v := range d.Translations {
		j.Translations[k] = DescriptionJSON(v)
	}
	for _, im := range d.Images {
		ij := DraftImageJSON{IsPrimary: im.IsPrimary, Caption: im.Caption, SortOrder: im.SortOrder,
			Width: im.Width, Height: im.Height, Bytes: im.Bytes, URL: im.URL}
		if im.ID != "" {
			id := im.ID
			ij.ID = &id
		}
		j.Images = append(j.Images, ij)
	}
	return j
}

func roomsOut(rooms []domain.Room) []RoomJSON {
	out := make([]RoomJSON, 0, len(rooms))
	for _, r := range rooms {
		room := RoomJSON{Kind: string(r.Kind), Name: r.Name, Beds: make([]BedJSON, 0, len(r.Beds))}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, BedJSON(b))
		}
		out = append(out, room)
	}
	return out
}
