package adapters

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/outbox"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/catalog/internal/app"
	"quarters.dev/services/catalog/internal/domain"
)

// EventFunc turns a property's state into a listing event of eventType.
type EventFunc func(ctx context.Context, p domain.Property, eventType string) (outbox.Event, error)

// ListingEvents returns the EventFunc that encodes listing events for topic,
// keyed by the listing id: listing.updated carries the whole snapshot (owner
// name included); listing.deleted, property.created and property.deleted
// carry only the id and org.
func ListingEvents(topic string) EventFunc {
	return func(ctx context.Context, p domain.Property, eventType string) (outbox.Event, error) {
		id := outbox.NewID()
		ev := &eventsv1.ListingEvent{
			Envelope: &eventsv1.Envelope{
				EventId:          id,
				Type:             eventType,
				OrgId:            p.OrgID,
				AggregateId:      p.ID,
				AggregateVersion: p.Version,
				OccurredAt:       timestamppb.New(p.UpdatedAt),
			},
			Listing: &eventsv1.Listing{Id: p.ID, OrgId: p.OrgID},
		}
		if eventType == app.EventUpdated && p.Listing != nil {
			ev.Listing = ListingProto(*p.Listing)
		}
		value, err := proto.Marshal(ev)
		if err != nil {
			return outbox.Event{}, fmt.Errorf("encode %s for listing %s: %w", eventType, p.ID, err)
		}
		return outbox.NewEvent(ctx, id, topic, p.ID, value), nil
	}
}

// ListingProto is the event form of a snapshot.
func ListingProto(l domain.Listing) *eventsv1.Listing {
	m := &eventsv1.Listing{
		Id: l.ID, OrgId: l.OrgID, Slug: l.Slug, Nickname: l.Nickname, Active: l.Active, IsListed: l.IsListed,
		PropertyType: l.PropertyType, RoomType: l.RoomType,
		Address: &eventsv1.Address{
			Street: l.Address.Street, PostalCode: l.Address.PostalCode, City: l.Address.City,
			Country: l.Address.Country, Area: l.Address.Area, Latitude: l.Address.Latitude, Longitude: l.Address.Longitude,
		},
		Accommodates: int32(l.Accommodates),
		Bedrooms:     int32(l.Bedrooms), Beds: int32(l.Beds), Bathrooms: l.Bathrooms,
		SquareMeter: int32Ptr(l.SquareMeter),
		Timezone:    l.Timezone,
		Pricing: &eventsv1.ListingPricing{
			Currency: l.Pricing.Currency, MonthlyRateCents: l.Pricing.MonthlyRateCents,
			DepositCents: l.Pricing.DepositCents, UtilitiesCents: l.Pricing.UtilitiesCents,
			FurnitureCents: l.Pricing.FurnitureCents, NightlyRateCents: l.Pricing.NightlyRateCents,
			RateBasis: rateBasisProto(l.Pricing.RateBasis),
		},
		Terms:       &eventsv1.ListingTerms{MinNights: int32Ptr(l.Terms.MinNights), MaxNights: int32Ptr(l.Terms.MaxNights)},
		Amenities:   slices.Clone(l.Amenities),
		Description: descriptionProto(l.Description),
		PublishedAt: timestamppb.New(l.PublishedAt),
		OwnerName:   l.OwnerName,
	}
	for _, r := range l.Rooms {
		room := &eventsv1.Room{Kind: roomKindProto(r.Kind), Name: r.Name}
		for _, b := range r.Beds {
			room.Beds = append(room.Beds, &eventsv1.Bed{Type: bedTypeProto(b.Type), Count: int32(b.Count)})
		}
		m.Rooms = append(m.Rooms, room)
	}
	if len(l.Translations) > 0 {
		m.Translations = make(map[string]*eventsv1.Description, len(l.Translations))
		for k, v := range l.Translations {
			m.Translations[k] = descriptionProto(v)
		}
	}
	for _, im := range l.Images {
		m.Images = append(m.Images, &eventsv1.Image{
			Id: im.ID, IsPrimary: im.IsPrimary, Caption: im.Caption, SortOrder: int32(im.SortOrder),
			Width: int32(im.Width), Height: int32(im.Height), Bytes: im.Bytes,
			Thumbnail: im.Thumbnail, Regular: im.Regular, Large: im.Large, Original: im.Original,
		})
	}
	return m
}

// DecodeListingEvent reads a listing event.
func DecodeListingEvent(value []byte) (domain.ListingState, error) {
	var ev eventsv1.ListingEvent
	if err := proto.Unmarshal(value, &ev); err != nil {
		return domain.ListingState{}, fmt.Errorf("decode listing event: %w", err)
	}
	env := ev.GetEnvelope()
	st := domain.ListingState{ID: env.GetAggregateId(), OrgID: env.GetOrgId(), Version: env.GetAggregateVersion()}
	if st.ID == "" {
		return domain.ListingState{}, fmt.Errorf("listing event %s without aggregate id", env.GetEventId())
	}
	if env.GetType() == app.EventUpdated && ev.GetListing() != nil {
		l := listingOf(ev.GetListing())
		st.Listing = &l
	}
	return st, nil
}

func listingOf(m *eventsv1.Listing) domain.Listing {
	a := m.GetAddress()
	p := m.GetPricing()
	l := domain.Listing{
		ID: m.GetId(), OrgID: m.GetOrgId(), Slug: m.GetSlug(), Nickname: m.GetNickname(),
		Active: m.GetActive(), IsListed: m.GetIsListed(), PropertyType: m.GetPropertyType(), RoomType: m.GetRoomType(),
		Address: domain.Address{
			Street: a.Street, PostalCode: a.PostalCode, City: a.GetCity(), Country: a.GetCountry(),
			Area: a.Area, Latitude: a.Latitude, Longitude: a.Longitude,
		},
		Accommodates: int(m.GetAccommodates()), Bedrooms: int(m.GetBedrooms()), Beds: int(m.GetBeds()),
		Bathrooms: m.GetBathrooms(), SquareMeter: intPtr(m.SquareMeter), Timezone: m.GetTimezone(),
		Pricing: domain.ListingPricing{
			Currency: p.GetCurrency(), MonthlyRateCents: p.MonthlyRateCents, NightlyRateCents: p.NightlyRateCents,
			RateBasis: rateBasisOf(p.GetRateBasis()), DepositCents: p.DepositCents,
			UtilitiesCents: p.UtilitiesCents, FurnitureCents: p.FurnitureCents,
		},
		Terms:       domain.Terms{MinNights: intPtr(m.GetTerms().MinNights), MaxNights: intPtr(m.GetTerms().MaxNights)},
		Amenities:   m.GetAmenities(),
		Description: descriptionOf(m.GetDescription()),
		PublishedAt: m.GetPublishedAt().AsTime().UTC(),
		OwnerName:   m.GetOwnerName(),
	}
	if a == nil {
		l.Address = domain.Address{}
	}
	for _, r := range m.GetRooms() {
		room := domain.Room{Kind: roomKindOf(r.GetKind()), Name: r.GetName()}
		for _, b := range r.GetBeds() {
			room.Beds = append(room.Beds, domain.Bed{Type: bedTypeOf(b.GetType()), Count: int(b.GetCount())})
		}
		l.Rooms = append(l.Rooms, room)
	}
	if len(m.GetTranslations()) > 0 {
		l.Translations = make(map[string]domain.Description, len(m.GetTranslations()))
		for k, v := range m.GetTranslations() {
			l.Translations[k] = descriptionOf(v)
		}
	}
	for _, im := range m.GetImages() {
		l.Images = append(l.Images, domain.Image{
			ID: im.GetId(), IsPrimary: im.GetIsPrimary(), Caption: im.Caption, SortOrder: int(im.GetSortOrder()),
			Width: int(im.GetWidth()), Height: int(im.GetHeight()), Bytes: im.GetBytes(),
			Thumbnail: im.GetThumbnail(), Regular: im.GetRegular(), Large: im.GetLarge(), Original: im.GetOriginal(),
		})
	}
	return l
}

func descriptionProto(d domain.Description) *eventsv1.Description {
	return &eventsv1.Description{Title: d.Title, Summary: d.Summary, Space: d.Space, Neighborhood: d.Neighborhood, Access: d.Access, Notes: d.Notes}
}

func descriptionOf(d *eventsv1.Description) domain.Description {
	if d == nil {
		return domain.Description{}
	}
	return domain.Description{Title: d.Title, Summary: d.Summary, Space: d.Space, Neighborhood: d.Neighborhood, Access: d.Access, Notes: d.Notes}
}

func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func rateBasisProto(r *string) eventsv1.RateBasis {
	switch {
	case r == nil:
		return eventsv1.RateBasis_RATE_BASIS_UNSPECIFIED
	case *r == domain.RateMonthly:
		return eventsv1.RateBasis_RATE_BASIS_MONTHLY
	case *r == domain.RateNightly:
		return eventsv1.RateBasis_RATE_BASIS_NIGHTLY
	}
	return eventsv1.RateBasis_RATE_BASIS_UNSPECIFIED
}

func rateBasisOf(r eventsv1.RateBasis) *string {
	var s string
	switch r {
	case eventsv1.RateBasis_RATE_BASIS_MONTHLY:
		s = domain.RateMonthly
	case eventsv1.RateBasis_RATE_BASIS_NIGHTLY:
		s = domain.RateNightly
	default:
		return nil
	}
	return &s
}

func roomKindProto(k domain.RoomKind) eventsv1.RoomKind {
	if v, ok := eventsv1.RoomKind_value["ROOM_KIND_"+strings.ToUpper(string(k))]; ok {
		return eventsv1.RoomKind(v)
	}
	return eventsv1.RoomKind_ROOM_KIND_UNSPECIFIED
}

func roomKindOf(k eventsv1.RoomKind) domain.RoomKind {
	if k == eventsv1.RoomKind_ROOM_KIND_UNSPECIFIED {
		return domain.RoomOther
	}
	return domain.RoomKind(strings.ToLower(strings.TrimPrefix(k.String(), "ROOM_KIND_")))
}

func bedTypeProto(t string) eventsv1.BedType {
	if v, ok := eventsv1.BedType_value["BED_TYPE_"+strings.ToUpper(t)]; ok {
		return eventsv1.BedType(v)
	}
	return eventsv1.BedType_BED_TYPE_UNSPECIFIED
}

func bedTypeOf(t eventsv1.BedType) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "BED_TYPE_"))
}
