// Package view keeps the published listings of every organisation in memory,
// with each organisation's list response rendered once per change, so that
// reading the catalog costs no store round trip. MongoDB stays the record:
// the view is loaded from it at start, kept current by the catalog's own
// writes (write-through) and reloaded periodically as a safety net.
package view

import (
	"context"
	"sort"
	"sync"

	"quarters.dev/services/catalog/internal/domain"
)

// Render turns an organisation's listings, sorted by nickname then id, into
// the list response body.
type Render func([]domain.Listing) ([]byte, error)

// View is safe for concurrent use.
type View struct {
	render Render

	mu    sync.RWMutex
	orgs  map[string]*org
	empty []byte
	// gen counts writes; a reload that overlapped one is discarded, so that
	// it cannot bring back a state older than a write it did not see.
	gen uint64
}

type org struct {
	byID map[string]domain.Listing
	body []byte
}

// New returns an empty view.
func New(render Render) (*View, error) {
	empty, err := render(nil)
	if err != nil {
		return nil, err
	}
	return &View{render: render, orgs: map[string]*org{}, empty: empty}, nil
}

// List returns the rendered list response of an organisation.
func (v *View) List(orgID string) []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if o := v.orgs[orgID]; o != nil {
		return o.body
	}
	return v.empty
}

// Get returns one listing of an organisation.
func (v *View) Get(orgID, id string) (domain.Listing, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	o := v.orgs[orgID]
	if o == nil {
		return domain.Listing{}, false
	}
	l, ok := o.byID[id]
	return l, ok
}

// Put adds or replaces a listing.
func (v *View) Put(l domain.Listing) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	o := v.orgs[l.OrgID]
	byID := map[string]domain.Listing{}
	if o != nil {
		for k, x := range o.byID {
			byID[k] = x
		}
	}
	byID[l.ID] = l
	return v.setOrg(l.OrgID, byID)
}

// Delete removes a listing; removing an absent one is a no-op.
func (v *View) Delete(orgID, id string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	o := v.orgs[orgID]
	if o == nil {
		return nil
	}
	if _, ok := o.byID[id]; !ok {
		return nil
	}
	byID := make(map[string]domain.Listing, len(o.byID))
	for k, x := range o.byID {
		if k != id {
			byID[k] = x
		}
	}
	return v.setOrg(orgID, byID)
}

// setOrg renders and installs an organisation's listings; v.mu is held.
func (v *View) setOrg(orgID string, byID map[string]domain.Listing) error {
	if len(byID) == 0 {
		delete(v.orgs, orgID)
		return nil
	}
	o, err := v.build(byID)
	if err != nil {
		return err
	}
	v.orgs[orgID] = o
	return nil
}

func (v *View) build(byID map[string]domain.Listing) (*org, error) {
	sorted := make([]domain.Listing, 0, len(byID))
	for _, l := range byID {
		sorted = append(sorted, l)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Nickname != sorted[j].Nickname {
			return sorted[i].Nickname < sorted[j].Nickname
		}
		return sorted[i].ID < sorted[j].ID
	})
	body, err := v.render(sorted)
	if err != nil {
		return nil, err
	}
	return &org{byID: byID, body: body}, nil
}

// Source reads every published listing from the record.
type Source interface {
	All(ctx context.Context) ([]domain.Listing, error)
}

// Reload replaces the view with the record's current state. It reports false
// when a write happened while it read, in which case the view is left as it
// is and the caller tries again later.
func (v *View) Reload(ctx context.Context, src Source) (bool, error) {
	v.mu.RLock()
	gen := v.gen
	v.mu.RUnlock()
	all, err := src.All(ctx)
	if err != nil {
		return false, err
	}
	grouped := map[string]map[string]domain.Listing{}
	for _, l := range all {
		if grouped[l.OrgID] == nil {
			grouped[l.OrgID] = map[string]domain.Listing{}
		}
		grouped[l.OrgID][l.ID] = l
	}
	next := make(map[string]*org, len(grouped))
	for id, byID := range grouped {
		o, err := v.build(byID)
		if err != nil {
			return false, err
		}
		next[id] = o
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gen != gen {
		return false, nil
	}
	v.orgs = next
	return true, nil
}
