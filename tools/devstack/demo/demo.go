// Package demo seeds the dev stack with a demo org through the admin API on
// its first start, keeps what it created in demo.json, and prints how to use
// it. Seeding is a list of steps so that more demo data (listings, bookings)
// is one more step.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// State is what seeding created, saved as demo.json.
type State struct {
	OrgID        string `json:"orgId"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// Data keeps what later steps create (ids of listings, bookings...).
	Data map[string]any `json:"data,omitempty"`
}

// Step is one seeding step. Steps run in order and see what earlier steps
// recorded in the State.
type Step struct {
	Name string
	Run  func(ctx context.Context, c *Client, st *State) error
}

// DefaultSteps create the demo org, a credential set for it and the demo
// data of every service.
func DefaultSteps() []Step {
	steps := BaseSteps()
	steps = append(steps, CatalogSteps()...)
	steps = append(steps, AvailabilitySteps()...)
	return append(steps, BookingsSteps()...)
}

// StepsFor are the steps of DefaultSteps whose services are running: the
// base steps (auth), then those of the catalog, availability and bookings
// that are in running. Availability and bookings need published listings,
// so they follow the catalog's steps only.
func StepsFor(running map[string]bool) []Step {
	steps := BaseSteps()
	if !running["catalog"] {
		return steps
	}
	steps = append(steps, CatalogSteps()...)
	if running["availability"] {
		steps = append(steps, AvailabilitySteps()...)
	}
	if running["bookings"] {
		steps = append(steps, BookingsSteps()...)
	}
	return steps
}

// BaseSteps create the demo org and a credential set for it.
func BaseSteps() []Step {
	return []Step{
		{Name: "create the demo org", Run: createOrg},
		{Name: "create demo credentials", Run: createCredentials},
	}
}

func createOrg(ctx context.Context, c *Client, st *State) error {
	var out struct {
		Org struct {
			ID string `json:"id"`
		} `json:"org"`
	}
	if err := c.Do(ctx, http.MethodPost, "/orgs", map[string]any{"name": "Demo Rentals"}, http.StatusCreated, &out); err != nil {
		return err
	}
	if out.Org.ID == "" {
		return errors.New("the created org has no id")
	}
	st.OrgID = out.Org.ID
	return nil
}

func createCredentials(ctx context.Context, c *Client, st *State) error {
	var out struct {
		Credential struct {
			ClientID     string `json:"clientId"`
			ClientSecret string `json:"clientSecret"`
		} `json:"credential"`
	}
	if err := c.Do(ctx, http.MethodPost, "/orgs/"+st.OrgID+"/credentials", map[string]any{"name": "demo"}, http.StatusCreated, &out); err != nil {
		return err
	}
	if out.Credential.ClientID == "" || out.Credential.ClientSecret == "" {
		return errors.New("the created credential set has no client id or secret")
	}
	st.ClientID, st.ClientSecret = out.Credential.ClientID, out.Credential.ClientSecret
	return nil
}

// Client calls the admin API with the admin token.
type Client struct {
	AdminURL string
	Token    string
	HTTP     *http.Client
}

// Do sends body as JSON to AdminURL+path and decodes the answer into out,
// failing unless the status is want.
func (c *Client) Do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.AdminURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s answered %d, want %d: %s", method, path, res.StatusCode, want, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// Load reads a saved State; found is false when there is none.
func Load(file string) (st *State, found bool, err error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	st = &State{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", file, err)
	}
	return st, true, nil
}

// Seed runs steps in order and saves the result to file. Nothing is saved
// when a step fails, so the next start seeds again.
func Seed(ctx context.Context, c *Client, steps []Step, file string) (*State, error) {
	st := &State{Data: map[string]any{}}
	for _, s := range steps {
		if err := s.Run(ctx, c, st); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", s.Name, err)
		}
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("save demo credentials: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return nil, fmt.Errorf("save demo credentials: %w", err)
	}
	return st, nil
}

// Print writes the demo org and the commands that use it; apiURL ends in
// /api/v1.
func (st *State) Print(w io.Writer, apiURL string) {
	fmt.Fprintf(w, "demo org:      %s\n", st.OrgID)
	fmt.Fprintf(w, "client id:     %s\n", st.ClientID)
	fmt.Fprintf(w, "client secret: %s\n", st.ClientSecret)
	fmt.Fprintf(w, "mint a token:\n  curl -s -u %s:%s -d grant_type=client_credentials %s/oauth2/token\n", st.ClientID, st.ClientSecret, apiURL)
	fmt.Fprintf(w, "list listings with it:\n  TOKEN=$(curl -s -u %s:%s -d grant_type=client_credentials %s/oauth2/token | sed -E 's/.*\"access_token\":\"([^\"]+)\".*/\\1/')\n", st.ClientID, st.ClientSecret, apiURL)
	fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $TOKEN\" %s/listings\n", apiURL)
}
