// Package app holds the catalog's use cases: property drafts and their
// publication as immutable listing snapshots.
package app

import (
	"context"
	"fmt"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/await"
	"quarters.dev/services/catalog/internal/domain"
)

// Listing event types. listing.updated and listing.deleted are the public
// ones; property.created and property.deleted tell the other services that
// a property exists, published or not (availability takes blocks for a
// draft), and no longer does. They carry only the property's id and org.
const (
	EventUpdated = "listing.updated"
	EventDeleted = "listing.deleted"
	EventCreated = "property.created"
	EventRemoved = "property.deleted"
)

// Change is what a change to a property produced.
type Change struct {
	// Events are the listing events to emit with the change, in order.
	Events []string
	// Skip leaves the stored property as it is.
	Skip bool
}

// Properties stores properties. Create and Update write the listing events
// in the same single-document update as the state.
type Properties interface {
	// Create stores a new property with an event of eventType.
	Create(ctx context.Context, p domain.Property, eventType string) error
	// Get returns a property of the org; a deleted one, or another org's, is
	// not found.
	Get(ctx context.Context, orgID, id string) (domain.Property, error)
	// Update loads the property, lets change modify it and stores it under a
	// version guard with the version bumped, retrying on a concurrent change.
	Update(ctx context.Context, orgID, id string, change func(*domain.Property) (Change, error)) (domain.Property, error)
}

// Orgs is the catalog's projection of the organisations.
type Orgs interface {
	Known(ctx context.Context, orgID string) (bool, error)
}

// Service is the catalog's application layer.
type Service struct {
	Properties Properties
	Orgs       Orgs
	Media      domain.Media
	// OrgWait is how long creating a property for an org the catalog has
	// not heard of waits for the org's event before answering 404: an org
	// created a moment ago may still be on its way.
	OrgWait time.Duration
	// Changed is told of every stored change, so the process's own view
	// shows it before the listing event comes back.
	Changed func(domain.Property)
	Now     func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (s *Service) changed(p domain.Property) {
	if s.Changed != nil {
		s.Changed(p)
	}
}

// RequireOrg answers not found for an org the catalog does not know, after
// waiting up to OrgWait for it to arrive.
func (s *Service) RequireOrg(ctx context.Context, orgID string) error {
	_, ok, err := await.Found(ctx, s.OrgWait, func(ctx context.Context) (struct{}, bool, error) {
		ok, err := s.Orgs.Known(ctx, orgID)
		return struct{}{}, ok, err
	})
	if err != nil {
		return fmt.Errorf("look up org %s: %w", orgID, err)
	}
	if !ok {
		return apperr.NotFoundf("No organisation %s.", orgID)
	}
	return nil
}

// CreateProperty stores a new draft for an org.
func (s *Service) CreateProperty(ctx context.Context, orgID string, d domain.Draft) (domain.Property, error) {
	if err := d.Validate(); err != nil {
		return domain.Property{}, err
	}
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return domain.Property{}, err
	}
	now := s.now()
	p := domain.Property{
		ID: domain.NewID("prop_"), OrgID: orgID, Version: 1, Draft: d,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := s.Properties.Create(ctx, p, EventCreated); err != nil {
		return domain.Property{}, fmt.Errorf("create property: %w", err)
	}
	return p, nil
}

// GetProperty returns a property with its draft.
func (s *Service) GetProperty(ctx context.Context, orgID, id string) (domain.Property, error) {
	return s.Properties.Get(ctx, orgID, id)
}

// ReplaceDraft replaces a property's draft. The published snapshot stays as
// it is until the next publish.
func (s *Service) ReplaceDraft(ctx context.Context, orgID, id string, d domain.Draft) (domain.Property, error) {
	if err := d.Validate(); err != nil {
		return domain.Property{}, err
	}
	now := s.now()
	return s.Properties.Update(ctx, orgID, id, func(p *domain.Property) (Change, error) {
		p.Draft = d
		p.UpdatedAt = now
		return Change{}, nil
	})
}

// Publish freezes the draft into a new snapshot and emits listing.updated.
func (s *Service) Publish(ctx context.Context, orgID, id string) (domain.Listing, error) {
	now := s.now()
	p, err := s.Properties.Update(ctx, orgID, id, func(p *domain.Property) (Change, error) {
		if err := p.Publish(now, s.Media); err != nil {
			return Change{}, err
		}
		p.UpdatedAt = now
		return Change{Events: []string{EventUpdated}}, nil
	})
	if err != nil {
		return domain.Listing{}, err
	}
	s.changed(p)
	return *p.Listing, nil
}

// Unpublish takes the listing out of the public API and emits
// listing.deleted; unpublishing a property that is not published changes
// nothing.
func (s *Service) Unpublish(ctx context.Context, orgID, id string) error {
	now := s.now()
	p, err := s.Properties.Update(ctx, orgID, id, func(p *domain.Property) (Change, error) {
		if p.Listing == nil {
			return Change{Skip: true}, nil
		}
		p.Listing = nil
		p.UpdatedAt = now
		return Change{Events: []string{EventDeleted}}, nil
	})
	if err != nil {
		return err
	}
	s.changed(p)
	return nil
}

// DeleteProperty deletes a property, emitting property.deleted and, if it
// was published, listing.deleted. It is kept as a tombstone so that its
// version keeps ordering the listing events.
func (s *Service) DeleteProperty(ctx context.Context, orgID, id string) error {
	now := s.now()
	p, err := s.Properties.Update(ctx, orgID, id, func(p *domain.Property) (Change, error) {
		// Both carry the same version: a consumer that orders by version
		// applies the first, property.deleted, and skips the second.
		ch := Change{Events: []string{EventRemoved}}
		if p.Listing != nil {
			ch.Events = append(ch.Events, EventDeleted)
		}
		p.Deleted = true
		p.UpdatedAt = now
		return ch, nil
	})
	if err != nil {
		return err
	}
	s.changed(p)
	return nil
}
