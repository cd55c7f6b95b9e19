package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CatalogSteps create the demo org's properties: published listings in
// Amsterdam, Berlin and Lisbon, and one draft that is never published. The
// ids are kept in State.Data: "listings" (the published ones, in the order
// created) and "draft".
func CatalogSteps() []Step {
	return []Step{{Name: "create and publish the demo listings", Run: createListings}}
}

// orgWait bounds how long seeding waits for the catalog to learn of the
// demo org just created (the org reaches it as an event).
const orgWait = 90 * time.Second

func createListings(ctx context.Context, c *Client, st *State) error {
	var published []string
	for i, p := range demoProperties() {
		id, err := createProperty(ctx, c, st.OrgID, p.draft)
		if err != nil {
			return fmt.Errorf("property %d (%s): %w", i, p.draft["nickname"], err)
		}
		if !p.publish {
			st.Data["draft"] = id
			continue
		}
		if err := c.Do(ctx, http.MethodPost, "/orgs/"+st.OrgID+"/properties/"+id+"/publish", nil, http.StatusOK, nil); err != nil {
			return err
		}
		published = append(published, id)
	}
	st.Data["listings"] = published
	return nil
}

// createProperty creates a property, retrying while the catalog does not
// know the org yet.
func createProperty(ctx context.Context, c *Client, orgID string, draft map[string]any) (string, error) {
	var out struct {
		Property struct {
			ID string `json:"id"`
		} `json:"property"`
	}
	deadline := time.Now().Add(orgWait)
	for {
		err := c.Do(ctx, http.MethodPost, "/orgs/"+orgID+"/properties", draft, http.StatusCreated, &out)
		if err == nil {
			if out.Property.ID == "" {
				return "", errors.New("the created property has no id")
			}
			return out.Property.ID, nil
		}
		if !strings.Contains(err.Error(), "No organisation") || time.Now().After(deadline) {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type demoProperty struct {
	draft   map[string]any
	publish bool
}

func desc(title, summary, space, neighborhood any) map[string]any {
	return map[string]any{"title": title, "summary": summary, "space": space, "neighborhood": neighborhood,
		"access": nil, "notes": nil}
}

func images(slug string, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range n {
		out[i] = map[string]any{
			"isPrimary": i == 1%n, "caption": nil, "sortOrder": i + 1,
			"width": 2400, "height": 1600, "bytes": 850_000 + 12_345*i,
			"url": fmt.Sprintf("https://uploads.quarters.dev/demo/%s/%d.jpg", slug, i+1),
		}
	}
	out[0]["caption"] = "Living room"
	return out
}

func bedroom(name string, beds ...map[string]any) map[string]any {
	return map[string]any{"kind": "bedroom", "name": name, "beds": beds}
}

func bed(typ string, n int) map[string]any { return map[string]any{"type": typ, "count": n} }

func room(kind string) map[string]any {
	return map[string]any{"kind": kind, "name": "", "beds": []any{}}
}

func demoProperties() []demoProperty {
	return []demoProperty{
		{publish: true, draft: map[string]any{
			"nickname": "AMS Jordaan Canal Loft", "slug": "amsterdam-jordaan-canal-loft", "active": true, "isListed": true,
			"propertyType": "Apartment", "roomType": "Entire home/apt",
			"address": map[string]any{"street": "Prinsengracht 187", "postalCode": "1015 DT", "city": "Amsterdam",
				"country": "NL", "area": "Jordaan", "latitude": 52.3751, "longitude": 4.8835},
			"accommodates": 2, "squareMeter": 58, "timezone": "Europe/Amsterdam",
			"rooms": []any{bedroom("Canal bedroom", bed("queen", 1)), room("living_room"), room("full_bathroom")},
			"pricing": map[string]any{"monthlyRateCents": 265000, "depositCents": 530000, "utilitiesCents": 15000,
				"furnitureCents": 0, "rateBasis": "monthly"},
			"terms":     map[string]any{"minNights": 30, "maxNights": 365},
			"amenities": []string{"wifi", "washer", "dishwasher", "workspace"},
			"description": desc("Canal-side loft in the Jordaan",
				"<p>A bright loft on the Prinsengracht with a view over the water.</p>",
				"<p>Open living space, a queen bed under the beams, a desk by the window.</p>",
				"<p>Cafés, the Noordermarkt on Saturdays, Central Station 15 minutes on foot.</p>"),
			"translations": map[string]any{
				"nl": desc("Grachtenloft in de Jordaan", "<p>Lichte loft aan de Prinsengracht met uitzicht op het water.</p>", nil, nil),
				"de": desc("Loft an der Gracht im Jordaan", "<p>Helles Loft an der Prinsengracht mit Blick aufs Wasser.</p>", nil, nil),
			},
			"images":    images("ams-jordaan", 4),
			"ownerName": "Grachtenpand Beheer B.V.",
		}},
		{publish: true, draft: map[string]any{
			"nickname": "AMS Oost Family Home", "slug": "amsterdam-oost-family-home", "active": true, "isListed": true,
			"propertyType": "House", "roomType": "Entire home/apt",
			"address": map[string]any{"street": "Javaplein 12", "postalCode": "1095 CJ", "city": "Amsterdam",
				"country": "NL", "area": "Indische Buurt", "latitude": 52.3631, "longitude": 4.9418},
			"accommodates": 5, "squareMeter": 104, "timezone": "Europe/Amsterdam",
			"rooms": []any{bedroom("Main bedroom", bed("king", 1)), bedroom("Kids' room", bed("bunk_bed", 1), bed("crib", 1)),
				map[string]any{"kind": "living_room", "name": "Living", "beds": []any{bed("sofa_bed", 1)}},
				room("full_bathroom"), room("half_bathroom")},
			"pricing": map[string]any{"monthlyRateCents": 395000, "depositCents": 790000, "utilitiesCents": 22500,
				"furnitureCents": 10000, "rateBasis": "monthly"},
			"terms":     map[string]any{"minNights": 90, "maxNights": nil},
			"amenities": []string{"wifi", "washer", "dishwasher", "garden", "bicycles"},
			"description": desc("Family house by the Javaplein",
				"<p>Three floors with a garden, two bedrooms and room for five.</p>", nil,
				"<p>Markets, playgrounds and the Flevopark around the corner.</p>"),
			"translations": map[string]any{
				"nl": desc("Gezinswoning aan het Javaplein", "<p>Drie verdiepingen met tuin.</p>", nil, nil),
			},
			"images":    images("ams-oost", 5),
			"ownerName": "M. de Vries",
		}},
		{publish: true, draft: map[string]any{
			"nickname": "BER Kreuzberg Altbau", "slug": "berlin-kreuzberg-altbau", "active": true, "isListed": true,
			"propertyType": "Apartment", "roomType": "Entire home/apt",
			"address": map[string]any{"street": "Graefestraße 71", "postalCode": "10967", "city": "Berlin",
				"country": "DE", "area": "Graefekiez", "latitude": 52.4916, "longitude": 13.4201},
			"accommodates": 3, "squareMeter": 78, "timezone": "Europe/Berlin",
			"rooms": []any{bedroom("Schlafzimmer", bed("double", 1)), bedroom("Arbeitszimmer", bed("single", 1)), room("full_bathroom")},
			"pricing": map[string]any{"monthlyRateCents": 189000, "depositCents": 378000, "utilitiesCents": 18000,
				"furnitureCents": nil, "rateBasis": "monthly"},
			"terms":     map[string]any{"minNights": 60, "maxNights": 540},
			"amenities": []string{"wifi", "washer", "balcony", "workspace"},
			"description": desc("High-ceilinged Altbau in Kreuzberg",
				"<p>Stucco, wooden floors and a balcony over a quiet courtyard.</p>", nil,
				"<p>Landwehr Canal, Maybachufer market and the U8 two minutes away.</p>"),
			"translations": map[string]any{
				"de": desc("Altbauwohnung in Kreuzberg", "<p>Stuck, Dielen und ein Balkon zum ruhigen Hof.</p>", nil, nil),
			},
			"images":    images("ber-kreuzberg", 3),
			"ownerName": "Hausverwaltung Graefe GmbH",
		}},
		{publish: true, draft: map[string]any{
			"nickname": "BER Prenzlauer Berg Studio", "slug": "berlin-prenzlauer-berg-studio", "active": true, "isListed": true,
			"propertyType": "Apartment", "roomType": "Entire home/apt",
			"address": map[string]any{"street": "Kastanienallee 33", "postalCode": "10435", "city": "Berlin",
				"country": "DE", "area": nil, "latitude": 52.5381, "longitude": 13.4101},
			"accommodates": 1, "squareMeter": 32, "timezone": "Europe/Berlin",
			"rooms": []any{map[string]any{"kind": "living_room", "name": "Studio", "beds": []any{bed("double", 1)}}, room("full_bathroom")},
			"pricing": map[string]any{"monthlyRateCents": 129000, "depositCents": 258000, "utilitiesCents": nil,
				"furnitureCents": nil, "rateBasis": "nightly", "nightlyRateCents": 6500},
			"terms":       map[string]any{"minNights": 30, "maxNights": nil},
			"amenities":   []string{"wifi", "elevator"},
			"description": desc("Compact studio on Kastanienallee", "<p>One room, well laid out, for one.</p>", nil, nil),
			"images":      images("ber-prenzlberg", 2),
			"ownerName":   "K. Hoffmann",
		}},
		{publish: true, draft: map[string]any{
			"nickname": "LIS Alfama Terrace", "slug": "lisbon-alfama-terrace", "active": true, "isListed": true,
			"propertyType": "Apartment", "roomType": "Entire home/apt",
			"address": map[string]any{"street": "Rua de São Miguel 24", "postalCode": "1100-544", "city": "Lisboa",
				"country": "PT", "area": "Alfama", "latitude": 38.7115, "longitude": -9.1290},
			"accommodates": 4, "squareMeter": 85, "timezone": "Europe/Lisbon",
			"rooms": []any{bedroom("Quarto principal", bed("queen", 1)), bedroom("Quarto", bed("single", 2)),
				room("full_bathroom"), room("half_bathroom"), room("other")},
			"pricing": map[string]any{"monthlyRateCents": 210000, "depositCents": 210000, "utilitiesCents": 12000,
				"furnitureCents": 0, "rateBasis": "monthly"},
			"terms":     map[string]any{"minNights": 30, "maxNights": 330},
			"amenities": []string{"wifi", "washer", "terrace", "air_conditioning"},
			"description": desc("Terrace over the Tagus in Alfama",
				"<p>Two bedrooms and a roof terrace looking over the river.</p>", nil,
				"<p>Fado houses, the Feira da Ladra and tram 28 outside the door.</p>"),
			"translations": map[string]any{
				"pt-PT": desc("Terraço sobre o Tejo em Alfama", "<p>Dois quartos e um terraço com vista para o rio.</p>", nil, nil),
				"en":    desc("Terrace over the Tagus in Alfama", nil, nil, nil),
			},
			"images":    images("lis-alfama", 4),
			"ownerName": "Casas de Alfama, Lda.",
		}},
		{publish: false, draft: map[string]any{
			"nickname": "LIS Príncipe Real Penthouse", "active": false, "isListed": false,
			"propertyType": "Apartment", "roomType": "Entire home/apt",
			"address":      map[string]any{"city": "Lisboa", "country": "PT", "area": "Príncipe Real"},
			"accommodates": 4, "timezone": "Europe/Lisbon",
			"rooms":       []any{bedroom("Suite", bed("king", 1)), room("full_bathroom")},
			"pricing":     map[string]any{"monthlyRateCents": nil, "depositCents": nil},
			"description": desc("Penthouse (being furnished)", nil, nil, nil),
			"images":      []any{},
			"ownerName":   "Casas de Alfama, Lda.",
		}},
	}
}
