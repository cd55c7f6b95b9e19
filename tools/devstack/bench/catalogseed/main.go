// Command catalogseed creates an org with a credential set and N published
// listings through the admin API, for load benchmarks of the catalog. It
// prints "ORG_ID CLIENT_ID CLIENT_SECRET FIRST_LISTING_ID".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"quarters.dev/tools/devstack/demo"
)

func main() {
	admin := flag.String("admin", "http://127.0.0.1:8080/admin/v1", "admin API base URL")
	token := flag.String("token", "dev-admin-token", "admin token")
	n := flag.Int("n", 500, "published listings to create")
	workers := flag.Int("workers", 2, "concurrent requests")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c := &demo.Client{AdminURL: *admin, Token: *token}
	st := &demo.State{Data: map[string]any{}}
	for _, s := range demo.BaseSteps() {
		if err := s.Run(ctx, c, st); err != nil {
			log.Fatalf("%s: %v", s.Name, err)
		}
	}
	ids := make([]string, *n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range *workers {
		wg.Go(func() {
			for i := range jobs {
				id, err := createAndPublish(ctx, c, st.OrgID, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ids[i] = id
				mu.Unlock()
			}
		})
	}
	for i := range *n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		log.Fatal(firstErr)
	}
	fmt.Println(st.OrgID, st.ClientID, st.ClientSecret, ids[0])
}

func createAndPublish(ctx context.Context, c *demo.Client, orgID string, i int) (string, error) {
	cities := []struct{ city, country, tz string }{
		{"Amsterdam", "NL", "Europe/Amsterdam"}, {"Berlin", "DE", "Europe/Berlin"}, {"Lisboa", "PT", "Europe/Lisbon"},
	}
	loc := cities[i%len(cities)]
	draft := map[string]any{
		"nickname": fmt.Sprintf("%s %03d", strings.ToUpper(loc.city[:3]), i), "active": true, "isListed": true,
		"propertyType": "Apartment", "roomType": "Entire home/apt",
		"address": map[string]any{"street": fmt.Sprintf("Teststraat %d", i), "postalCode": "1000", "city": loc.city,
			"country": loc.country, "area": "Centre", "latitude": 52.1, "longitude": 4.9},
		"accommodates": 2 + i%4, "squareMeter": 40 + i%60, "timezone": loc.tz,
		"rooms": []any{
			map[string]any{"kind": "bedroom", "name": "Bedroom", "beds": []any{map[string]any{"type": "double", "count": 1}}},
			map[string]any{"kind": "living_room", "name": "", "beds": []any{}},
			map[string]any{"kind": "full_bathroom", "name": "", "beds": []any{}},
		},
		"pricing":   map[string]any{"monthlyRateCents": 150000 + 1000*i, "depositCents": 300000, "utilitiesCents": 15000, "furnitureCents": nil, "rateBasis": "monthly"},
		"terms":     map[string]any{"minNights": 30, "maxNights": nil},
		"amenities": []string{"wifi", "washer", "dishwasher"},
		"description": map[string]any{"title": "A furnished apartment", "summary": "<p>Bright, quiet and close to everything.</p>",
			"space": "<p>One bedroom, a living room and a bathroom.</p>", "neighborhood": nil, "access": nil, "notes": nil},
		"translations": map[string]any{"de": map[string]any{"title": "Eine möblierte Wohnung"}},
		"images": []any{
			map[string]any{"isPrimary": true, "caption": nil, "sortOrder": 1, "width": 2400, "height": 1600, "bytes": 800000, "url": fmt.Sprintf("https://uploads.example/%d/1.jpg", i)},
			map[string]any{"isPrimary": false, "caption": "Bedroom", "sortOrder": 2, "width": 2400, "height": 1600, "bytes": 700000, "url": fmt.Sprintf("https://uploads.example/%d/2.jpg", i)},
		},
		"ownerName": "Bench Owner",
	}
	var out struct {
		Property struct {
			ID string `json:"id"`
		} `json:"property"`
	}
	err := retry(func() error {
		return c.Do(ctx, http.MethodPost, "/orgs/"+orgID+"/properties", draft, http.StatusCreated, &out)
	})
	if err != nil {
		return "", err
	}
	id := out.Property.ID
	return id, retry(func() error {
		return c.Do(ctx, http.MethodPost, "/orgs/"+orgID+"/properties/"+id+"/publish", nil, http.StatusOK, nil)
	})
}

// retry repeats a call while the org is not yet known to the catalog or the
// store is too busy to answer (5xx), for up to two minutes. Creating twice
// after a timed-out answer only adds a listing; publishing is idempotent.
func retry(call func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := call()
		if err == nil {
			return nil
		}
		msg := err.Error()
		transient := strings.Contains(msg, "No organisation") || strings.Contains(msg, "answered 5")
		if !transient || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}
