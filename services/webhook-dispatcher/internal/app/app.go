// Package app holds the webhook dispatcher's use cases: endpoints, pings,
// redeliveries and the delivery list for operators, the mapping of domain
// events to deliveries, and the dispatcher that attempts them.
package app

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Endpoints stores registered endpoints.
type Endpoints interface {
	Insert(ctx context.Context, ep domain.Endpoint) error
	// ListByOrg returns an org's endpoints, oldest first.
	ListByOrg(ctx context.Context, orgID string) ([]domain.Endpoint, error)
	// Get returns an endpoint; a not_found error when it does not exist.
	Get(ctx context.Context, id string) (domain.Endpoint, error)
	// Delete removes an endpoint of orgID; a not_found error when there is
	// none.
	Delete(ctx context.Context, orgID, id string) error
}

// Pending stores deliveries that are owed an attempt. A pending delivery is
// written before anything is sent, and removed once its record exists.
type Pending interface {
	// Add stores d unless a pending delivery with its RecordID is stored
	// already; it reports whether d was added.
	Add(ctx context.Context, d domain.Delivery) (bool, error)
	// Older returns up to limit pending deliveries stored before t, oldest
	// first.
	Older(ctx context.Context, t time.Time, limit int) ([]domain.Delivery, error)
	// Remove drops the pending deliveries with the given record ids.
	Remove(ctx context.Context, recordIDs ...string) error
}

// Records stores what happened to each delivery record. Every write is an
// insert keyed by the record id, so uniqueness is what guards each step.
type Records interface {
	// Claim notes that d is about to be sent, at the given time. It reports
	// false when d was claimed before: the delivery has been attempted, or
	// is being attempted, and must not be sent.
	Claim(ctx context.Context, d domain.Delivery, at time.Time) (bool, error)
	// Finish stores the record of a claimed delivery with its outcome.
	Finish(ctx context.Context, d domain.Delivery, at time.Time, o domain.Outcome) error
	// Get returns one record: finished, or Attempting (without a body) when
	// it is claimed and not finished; a not_found error when neither.
	Get(ctx context.Context, recordID string) (domain.Delivery, error)
	// Interrupt records a claimed delivery that never finished as failed
	// with reason interrupted; it reports false when a record exists.
	Interrupt(ctx context.Context, d domain.Delivery, at time.Time) (bool, error)
	// ListByEndpoint returns an endpoint's finished records, newest attempt
	// first.
	ListByEndpoint(ctx context.Context, endpointID string, limit int) ([]domain.Delivery, error)
}

// Orgs is the projection of the organisations that exist.
type Orgs interface {
	// Apply records an org at version; an older version changes nothing.
	Apply(ctx context.Context, orgID string, version int64) error
	Exists(ctx context.Context, orgID string) (bool, error)
}

// Service is the dispatcher's application layer.
type Service struct {
	Endpoints  Endpoints
	Pending    Pending
	Records    Records
	Orgs       Orgs
	Dispatcher *Dispatcher
	Now        func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// RequireOrg answers not found for an org the dispatcher does not know.
func (s *Service) RequireOrg(ctx context.Context, orgID string) error {
	ok, err := s.Orgs.Exists(ctx, orgID)
	if err != nil {
		return fmt.Errorf("look up org %s: %w", orgID, err)
	}
	if !ok {
		return apperr.NotFoundf("No organisation %s.", orgID)
	}
	return nil
}

// endpointOf returns an endpoint of orgID, not_found for another org's.
func (s *Service) endpointOf(ctx context.Context, orgID, id string) (domain.Endpoint, error) {
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return domain.Endpoint{}, err
	}
	ep, err := s.Endpoints.Get(ctx, id)
	if err != nil {
		return domain.Endpoint{}, err
	}
	if ep.OrgID != orgID {
		return domain.Endpoint{}, apperr.NotFoundf("No webhook %s in organisation %s.", id, orgID)
	}
	return ep, nil
}

// Register adds an endpoint with a fresh secret.
func (s *Service) Register(ctx context.Context, orgID, rawURL string) (domain.Endpoint, error) {
	u, err := domain.ValidateURL(rawURL)
	if err != nil {
		return domain.Endpoint{}, err
	}
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return domain.Endpoint{}, err
	}
	ep := domain.Endpoint{ID: domain.NewEndpointID(), OrgID: orgID, URL: u, Secret: domain.NewSecret(), CreatedAt: s.now()}
	if err := s.Endpoints.Insert(ctx, ep); err != nil {
		return domain.Endpoint{}, fmt.Errorf("store webhook: %w", err)
	}
	return ep, nil
}

// List returns an org's endpoints with their secrets.
func (s *Service) List(ctx context.Context, orgID string) ([]domain.Endpoint, error) {
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return nil, err
	}
	return s.Endpoints.ListByOrg(ctx, orgID)
}

// Delete removes an endpoint. Deliveries still owed to it are dropped.
func (s *Service) Delete(ctx context.Context, orgID, id string) error {
	if err := s.RequireOrg(ctx, orgID); err != nil {
		return err
	}
	return s.Endpoints.Delete(ctx, orgID, id)
}

// Ping sends a ping delivery to an endpoint.
func (s *Service) Ping(ctx context.Context, orgID, id string) (domain.Delivery, error) {
	ep, err := s.endpointOf(ctx, orgID, id)
	if err != nil {
		return domain.Delivery{}, err
	}
	ev := domain.Event{
		SourceID:   "ping-" + uuid.NewString(),
		OrgID:      orgID,
		Name:       domain.Ping,
		OccurredAt: s.now(),
		Data:       domain.PingData{WebhookID: ep.ID},
	}
	d, err := newDelivery(ev, ep, s.now())
	if err != nil {
		return domain.Delivery{}, err
	}
	if _, err := s.Pending.Add(ctx, d); err != nil {
		return domain.Delivery{}, fmt.Errorf("store ping delivery: %w", err)
	}
	s.Dispatcher.Enqueue(d, ep)
	return d, nil
}

// Redeliver makes a new attempt of a delivery: the same id and body, as a
// record of its own.
func (s *Service) Redeliver(ctx context.Context, orgID, id, deliveryID string) (domain.Delivery, error) {
	ep, err := s.endpointOf(ctx, orgID, id)
	if err != nil {
		return domain.Delivery{}, err
	}
	orig, err := s.Records.Get(ctx, deliveryID)
	if err != nil || orig.EndpointID != ep.ID || orig.Status == domain.Attempting {
		return domain.Delivery{}, apperr.NotFoundf("No delivery %s of webhook %s.", deliveryID, ep.ID)
	}
	now := s.now()
	d := domain.Delivery{
		RecordID:   deliveryID + "~" + uuid.NewString(),
		DeliveryID: orig.DeliveryID,
		EndpointID: ep.ID,
		OrgID:      orgID,
		Event:      orig.Event,
		Body:       orig.Body,
		CreatedAt:  orig.CreatedAt,
		RecordedAt: now,
		Redelivery: true,
		Status:     domain.Pending,
	}
	if _, err := s.Pending.Add(ctx, d); err != nil {
		return domain.Delivery{}, fmt.Errorf("store redelivery: %w", err)
	}
	s.Dispatcher.Enqueue(d, ep)
	return d, nil
}

// MaxListLimit bounds a delivery list.
const MaxListLimit = 100

// Deliveries lists an endpoint's delivery records, newest first.
func (s *Service) Deliveries(ctx context.Context, orgID, id string, limit int) ([]domain.Delivery, error) {
	ep, err := s.endpointOf(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	return s.Records.ListByEndpoint(ctx, ep.ID, limit)
}

// ApplyOrg records that an org exists.
func (s *Service) ApplyOrg(ctx context.Context, orgID string, version int64) error {
	return s.Orgs.Apply(ctx, orgID, version)
}

// Handle turns one webhook event into a pending delivery per endpoint of its
// org, stores them, and hands them to the dispatcher. When it returns nil
// every delivery is stored, so the event's offset may be committed; nothing
// is sent before that. Handling the same event again stores nothing new.
func (s *Service) Handle(ctx context.Context, ev domain.Event) error {
	eps, err := s.Endpoints.ListByOrg(ctx, ev.OrgID)
	if err != nil {
		return fmt.Errorf("endpoints of org %s: %w", ev.OrgID, err)
	}
	type job struct {
		d  domain.Delivery
		ep domain.Endpoint
	}
	jobs := make([]job, 0, len(eps))
	now := s.now()
	for _, ep := range eps {
		d, err := newDelivery(ev, ep, now)
		if err != nil {
			return err
		}
		added, err := s.Pending.Add(ctx, d)
		if err != nil {
			return fmt.Errorf("store delivery %s of %s: %w", d.DeliveryID, ev.Name, err)
		}
		if added {
			jobs = append(jobs, job{d, ep})
		}
	}
	for _, j := range jobs {
		s.Dispatcher.Enqueue(j.d, j.ep)
	}
	return nil
}

func newDelivery(ev domain.Event, ep domain.Endpoint, now time.Time) (domain.Delivery, error) {
	id := domain.DeliveryID(ev.SourceID, ep.ID)
	body, err := ev.Body(id)
	if err != nil {
		return domain.Delivery{}, err
	}
	return domain.Delivery{
		RecordID:   id,
		DeliveryID: id,
		EndpointID: ep.ID,
		OrgID:      ev.OrgID,
		Event:      ev.Name,
		Body:       body,
		CreatedAt:  ev.OccurredAt.UTC(),
		RecordedAt: now,
		Status:     domain.Pending,
	}, nil
}
