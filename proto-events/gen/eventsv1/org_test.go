package eventsv1_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/proto-events/gen/eventsv1"
)

func TestOrgEventRoundTrip(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	updated := created.Add(90 * time.Minute)
	in := &eventsv1.OrgEvent{
		Envelope: &eventsv1.Envelope{
			EventId:          "0193f5a2-7c1e-7d3a-9b2f-4e5d6c7b8a90",
			Type:             "org.updated",
			OrgId:            "org_123",
			AggregateId:      "org_123",
			AggregateVersion: 4,
			OccurredAt:       timestamppb.New(updated),
		},
		Org: &eventsv1.Org{
			Id:                "org_123",
			Name:              "Acme Rentals",
			ContractProvider:  eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL,
			InquiryDailyLimit: 500,
			CreatedAt:         timestamppb.New(created),
			UpdatedAt:         timestamppb.New(updated),
		},
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out eventsv1.OrgEvent
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, &out) {
		t.Fatalf("round trip changed the event:\n in %v\nout %v", in, &out)
	}
	if got := out.GetOrg().GetUpdatedAt().AsTime(); !got.Equal(updated) {
		t.Fatalf("updated_at %v, want %v", got, updated)
	}
	if out.GetEnvelope().GetAggregateVersion() != 4 || out.GetOrg().GetContractProvider() != eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL {
		t.Fatalf("decoded %v", &out)
	}
}

func TestUnsetAmountsStayDistinctFromZero(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	in := &eventsv1.ListingEvent{
		Envelope: &eventsv1.Envelope{EventId: "e1", Type: "listing.updated", OrgId: "org_1", AggregateId: "prop_1", AggregateVersion: 2},
		Listing: &eventsv1.Listing{
			Id:           "prop_1",
			Pricing:      &eventsv1.ListingPricing{Currency: "EUR", DepositCents: &zero},
			Translations: map[string]*eventsv1.Description{"de": {Title: proto.String("Wohnung")}},
		},
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out eventsv1.ListingEvent
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	p := out.GetListing().GetPricing()
	if p.DepositCents == nil || *p.DepositCents != 0 {
		t.Fatalf("deposit %v, want an explicit zero", p.DepositCents)
	}
	if p.MonthlyRateCents != nil {
		t.Fatalf("monthly rate %v, want unset", *p.MonthlyRateCents)
	}
	if got := out.GetListing().GetTranslations()["de"].GetTitle(); got != "Wohnung" {
		t.Fatalf("translation title %q", got)
	}
}
