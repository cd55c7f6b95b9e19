// Package view keeps the published listings of every organisation in memory,
// each listing's response and each organisation's list response rendered once
// per change, so that reading the catalog costs no store round trip.
//
// MongoDB stays the record: the view is loaded from it at start and then kept
// current by the catalog's own listing events, which every process reads in
// full, and by the process's own writes. The view knows the version of every
// property, published or not, and applies a state only when it is newer, so
// the order in which a write and its event arrive does not matter.
package view

import (
	"bytes"
	"sort"
	"sync"

	"quarters.dev/services/catalog/internal/domain"
)

// Render returns the JSON object of one listing as the public API shows it.
type Render func(domain.Listing) ([]byte, error)

// View is safe for concurrent use.
type View struct {
	render Render

	mu       sync.RWMutex
	versions map[string]int64
	orgs     map[string]*org
}

type entry struct {
	listing domain.Listing
	json    []byte // the listing object
	body    []byte // {"listing": ...}
}

type org struct {
	byID map[string]*entry
	body []byte // {"listings": [...]}
}

var emptyList = []byte(`{"listings":[]}`)

// New returns an empty view.
func New(render Render) *View {
	return &View{render: render, versions: map[string]int64{}, orgs: map[string]*org{}}
}

// List returns the rendered list response of an organisation.
func (v *View) List(orgID string) []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if o := v.orgs[orgID]; o != nil {
		return o.body
	}
	return emptyList
}

// Get returns the rendered response of one listing of an organisation.
func (v *View) Get(orgID, id string) ([]byte, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if o := v.orgs[orgID]; o != nil {
		if e := o.byID[id]; e != nil {
			return e.body, true
		}
	}
	return nil, false
}

// Apply takes the states that are newer than what the view holds and
// reports how many it took. Each organisation touched is rendered once.
func (v *View) Apply(states ...domain.ListingState) (int, error) {
	// Render outside the lock: the snapshots are immutable.
	type change struct {
		st    domain.ListingState
		entry *entry
	}
	var changes []change
	v.mu.RLock()
	for _, st := range states {
		if st.Version > v.versions[st.ID] {
			changes = append(changes, change{st: st})
		}
	}
	v.mu.RUnlock()
	for i := range changes {
		l := changes[i].st.Listing
		if l == nil {
			continue
		}
		js, err := v.render(*l)
		if err != nil {
			return 0, err
		}
		body := make([]byte, 0, len(js)+12)
		body = append(append(append(body, `{"listing":`...), js...), '}')
		changes[i].entry = &entry{listing: *l, json: js, body: body}
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	dirty := map[string]bool{}
	n := 0
	for _, c := range changes {
		st := c.st
		if st.Version <= v.versions[st.ID] { // a newer state won meanwhile
			continue
		}
		n++
		v.versions[st.ID] = st.Version
		o := v.orgs[st.OrgID]
		if c.entry == nil {
			if o != nil && o.byID[st.ID] != nil {
				delete(o.byID, st.ID)
				dirty[st.OrgID] = true
			}
			continue
		}
		if o == nil {
			o = &org{byID: map[string]*entry{}}
			v.orgs[st.OrgID] = o
		}
		o.byID[st.ID] = c.entry
		dirty[st.OrgID] = true
	}
	for id := range dirty {
		o := v.orgs[id]
		if len(o.byID) == 0 {
			delete(v.orgs, id)
			continue
		}
		o.body = renderList(o.byID)
	}
	return n, nil
}

// renderList joins the rendered listings, sorted by nickname and then id so
// the order is stable.
func renderList(byID map[string]*entry) []byte {
	sorted := make([]*entry, 0, len(byID))
	size := len(emptyList)
	for _, e := range byID {
		sorted = append(sorted, e)
		size += len(e.json) + 1
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := &sorted[i].listing, &sorted[j].listing
		if a.Nickname != b.Nickname {
			return a.Nickname < b.Nickname
		}
		return a.ID < b.ID
	})
	var buf bytes.Buffer
	buf.Grow(size)
	buf.WriteString(`{"listings":[`)
	for i, e := range sorted {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(e.json)
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}
