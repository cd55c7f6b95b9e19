package domain

// Listing is what availability keeps of a property from the catalog's
// listing events: whose it is, whether it is published, and the terms the
// calendar shows. A property is known from its creation, so blocks can be
// managed before it is first published, and stays known after it is
// unpublished; once deleted it is kept only as a tombstone.
type Listing struct {
	ID        string
	OrgID     string
	Published bool
	// Deleted is set once the property is deleted.
	Deleted bool
	// Timezone is the IANA zone the listing's dates are local to.
	Timezone string
	// MinNights is the listing's terms.minNights; nil when not set.
	MinNights *int
	// Version is the listing's aggregate version.
	Version int64
}

// BaseMinNights is the minimum stay every calendar day shows: the listing's
// terms.minNights, or 1 when it is not set.
func (l Listing) BaseMinNights() int {
	if l.MinNights == nil || *l.MinNights < 1 {
		return 1
	}
	return *l.MinNights
}
