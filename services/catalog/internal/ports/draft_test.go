package ports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"quarters.dev/pkg/apperr"
)

const fullDraft = `{
  "nickname": " Canal House ", "slug": "canal-house", "active": true, "isListed": true,
  "propertyType": "Apartment", "roomType": "Entire home/apt",
  "address": {"street": "Prinsengracht 1", "postalCode": "1015 DK", "city": "Amsterdam", "country": "NL",
              "area": "Jordaan", "latitude": 52.37, "longitude": 4.88},
  "accommodates": 2,
  "rooms": [{"kind": "bedroom", "name": "Main", "beds": [{"type": "queen", "count": 1}]},
            {"kind": "half_bathroom", "name": "", "beds": []}],
  "squareMeter": 55, "timezone": "Europe/Amsterdam",
  "pricing": {"currency": "EUR", "monthlyRateCents": 250000, "depositCents": 0, "utilitiesCents": null,
              "furnitureCents": 5000, "rateBasis": "monthly", "nightlyRateCents": null},
  "terms": {"minNights": 30, "maxNights": null},
  "amenities": ["wifi", "washer"],
  "description": {"title": "Canal view", "summary": "<p>Bright</p>", "space": null, "neighborhood": null, "access": null, "notes": null},
  "translations": {"nl": {"title": "Grachtzicht"}},
  "images": [{"isPrimary": true, "caption": null, "sortOrder": 1, "width": 1600, "height": 1200, "bytes": 345678,
              "url": "https://img.example/1.jpg"}],
  "ownerName": "Canal Holdings B.V."
}`

func decode(t *testing.T, body string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("test body: %v", err)
	}
	return v
}

func TestDecodeDraftReadsEveryField(t *testing.T) {
	t.Parallel()
	d, err := DecodeDraft(decode(t, fullDraft))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Nickname != "Canal House" || *d.Address.Latitude != 52.37 || d.Rooms[0].Beds[0].Type != "queen" ||
		*d.Pricing.MonthlyRateCents != 250000 || *d.Pricing.DepositCents != 0 || d.Pricing.UtilitiesCents != nil ||
		*d.Terms.MinNights != 30 || d.Terms.MaxNights != nil || *d.Translations["nl"].Title != "Grachtzicht" ||
		d.Images[0].Bytes != 345678 || *d.OwnerName != "Canal Holdings B.V." {
		t.Fatalf("decoded %+v", d)
	}
	// The draft reads back in the shape it was written.
	out, _ := json.Marshal(DraftOut(d))
	again, err := DecodeDraft(decode(t, string(out)))
	if err != nil {
		t.Fatalf("the draft as shown does not read back: %v\n%s", err, out)
	}
	out2, _ := json.Marshal(DraftOut(again))
	if !bytes.Equal(out, out2) {
		t.Fatalf("round trip changed the draft:\n%s\n%s", out, out2)
	}
}

func TestDecodeDraftRefusesNamingTheFieldPath(t *testing.T) {
	t.Parallel()
	base := `"nickname":"N","timezone":"UTC","address":{"city":"Berlin","country":"DE"}`
	cases := []struct {
		name, body, field string
	}{
		{"unknown top-level field", `{` + base + `,"colour":"red"}`, "colour"},
		{"unknown nested field", `{` + base + `,"rooms":[{"kind":"bedroom","beds":[{"type":"single","count":1,"size":2}]}]}`, "rooms[0].beds[0].size"},
		{"unknown address field", `{"nickname":"N","timezone":"UTC","address":{"city":"B","country":"DE","zip":"1"}}`, "address.zip"},
		{"unknown description field", `{` + base + `,"description":{"headline":"x"}}`, "description.headline"},
		{"unknown translation field", `{` + base + `,"translations":{"de":{"titel":"x"}}}`, "translations.de.titel"},
		{"unknown image field", `{` + base + `,"images":[{"url":"https://i.example/a","primary":true}]}`, "images[0].primary"},
		{"string for integer", `{` + base + `,"accommodates":"2"}`, "accommodates"},
		{"fraction for cents", `{` + base + `,"pricing":{"monthlyRateCents":1999.5}}`, "pricing.monthlyRateCents"},
		{"number for string", `{` + base + `,"rooms":[{"kind":"bedroom","beds":[{"type":3,"count":1}]}]}`, "rooms[0].beds[0].type"},
		{"object for array", `{` + base + `,"rooms":{}}`, "rooms"},
		{"string for boolean", `{` + base + `,"images":[{"url":"https://i.example/a","isPrimary":"yes"}]}`, "images[0].isPrimary"},
		{"room not an object", `{` + base + `,"rooms":[{"kind":"bedroom"},"kitchen"]}`, "rooms[1]"},
	}
	for _, tc := range cases {
		_, err := DecodeDraft(decode(t, tc.body))
		if err == nil || !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(apperr.As(err).Message, "Field "+tc.field+" ") {
			t.Errorf("%s: error %v does not name %s", tc.name, err, tc.field)
		}
	}
	if _, err := DecodeDraft(decode(t, `{"nickname":"N","timezone":"UTC"}`)); err == nil || !strings.Contains(err.Error(), "address") {
		t.Errorf("missing address: %v", err)
	}
	if _, err := DecodeDraft(decode(t, `[1]`)); err == nil || !apperr.Is(err, apperr.InvalidRequest) {
		t.Errorf("array body: %v", err)
	}
}
