package ports

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/bookings/internal/app"
	"quarters.dev/services/bookings/internal/domain"
)

// Topics names the topics the bookings service reads.
type Topics struct {
	Orgs, Listings, Agreements string
}

// EventHandler applies org, listing and agreement events to the
// projections. A message that cannot be decoded is skipped (it would fail
// the same way forever); a store error is returned so the consumer retries.
func EventHandler(svc *app.Service, topics Topics, onSkip func(topic, reason string)) func(ctx context.Context, msg kafka.Message) error {
	return func(ctx context.Context, msg kafka.Message) error {
		var err error
		switch msg.Topic {
		case topics.Orgs:
			err = handleOrg(ctx, svc, msg.Value)
		case topics.Listings:
			err = handleListing(ctx, svc, msg.Value)
		case topics.Agreements:
			err = handleAgreement(ctx, svc, msg.Value)
		default:
			return nil
		}
		if se, ok := err.(skipError); ok {
			if onSkip != nil {
				onSkip(msg.Topic, string(se))
			}
			return nil
		}
		return err
	}
}

type skipError string

func (e skipError) Error() string { return string(e) }

func handleOrg(ctx context.Context, svc *app.Service, value []byte) error {
	var ev eventsv1.OrgEvent
	if err := proto.Unmarshal(value, &ev); err != nil || ev.GetEnvelope() == nil || ev.GetOrg() == nil {
		return skipError(fmt.Sprintf("undecodable org event: %v", err))
	}
	o := ev.GetOrg()
	provider := "quarters"
	if o.GetContractProvider() == eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL {
		provider = "external"
	}
	return svc.ApplyOrg(ctx, domain.Org{ID: o.GetId(), Name: o.GetName(), ContractProvider: provider,
		InquiryDailyLimit: int(o.GetInquiryDailyLimit()), Version: ev.GetEnvelope().GetAggregateVersion()})
}

func handleListing(ctx context.Context, svc *app.Service, value []byte) error {
	var ev eventsv1.ListingEvent
	if err := proto.Unmarshal(value, &ev); err != nil || ev.GetEnvelope() == nil {
		return skipError(fmt.Sprintf("undecodable listing event: %v", err))
	}
	env := ev.GetEnvelope()
	l := ev.GetListing()
	id := env.GetAggregateId()
	if id == "" && l != nil {
		id = l.GetId()
	}
	orgID := env.GetOrgId()
	switch env.GetType() {
	case "listing.deleted":
		return svc.ApplyUnpublished(ctx, id, orgID, env.GetAggregateVersion())
	case "listing.updated":
		if l == nil {
			return skipError("listing.updated without a listing")
		}
	default:
		return nil
	}
	a := l.GetAddress()
	p := domain.Property{ID: id, OrgID: orgID, Published: true, Version: env.GetAggregateVersion(),
		Identity: &domain.PropertyIdentity{ID: id, Nickname: l.GetNickname(), Slug: l.GetSlug(),
			Street: a.Street, PostalCode: a.PostalCode, City: a.GetCity(), Country: a.GetCountry(),
			Timezone: l.GetTimezone()}}
	if l.GetOwnerName() != "" {
		owner := l.GetOwnerName()
		p.Identity.OwnerName = &owner
	}
	if pr := l.GetPricing(); pr != nil {
		p.Pricing = domain.ListingPricing{MonthlyRateCents: pr.MonthlyRateCents, NightlyRateCents: pr.NightlyRateCents,
			DepositCents: pr.DepositCents, UtilitiesCents: pr.UtilitiesCents, FurnitureCents: pr.FurnitureCents}
		switch pr.GetRateBasis() {
		case eventsv1.RateBasis_RATE_BASIS_NIGHTLY:
			p.Pricing.Basis = domain.BasisNightly
		case eventsv1.RateBasis_RATE_BASIS_MONTHLY:
			p.Pricing.Basis = domain.BasisMonthly
		}
	}
	return svc.ApplyListing(ctx, p)
}

func handleAgreement(ctx context.Context, svc *app.Service, value []byte) error {
	var ev eventsv1.AgreementEvent
	if err := proto.Unmarshal(value, &ev); err != nil || ev.GetEnvelope() == nil {
		return skipError(fmt.Sprintf("undecodable agreement event: %v", err))
	}
	env := ev.GetEnvelope()
	if env.GetType() != "agreement.updated" {
		return nil
	}
	resID := env.GetAggregateId()
	if ev.GetAgreement() != nil && !ev.GetCurrent() {
		// A superseded version, or a late report on one: only the
		// agreements service's history records it; the booking keeps its
		// current agreement.
		return nil
	}
	var a *domain.Agreement
	if pa := ev.GetAgreement(); pa != nil {
		if resID == "" {
			resID = pa.GetReservationId()
		}
		d := agreementOf(pa)
		a = &d
	}
	return svc.ApplyAgreement(ctx, resID, env.GetOrgId(), env.GetAggregateVersion(), a)
}

func tp(t *timestamppb.Timestamp) *time.Time {
	if t == nil {
		return nil
	}
	v := t.AsTime().UTC()
	return &v
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

var agreementStatuses = map[eventsv1.AgreementStatus]string{
	eventsv1.AgreementStatus_AGREEMENT_STATUS_SENT:       "sent",
	eventsv1.AgreementStatus_AGREEMENT_STATUS_COMPLETED:  "completed",
	eventsv1.AgreementStatus_AGREEMENT_STATUS_DECLINED:   "declined",
	eventsv1.AgreementStatus_AGREEMENT_STATUS_FAILED:     "failed",
	eventsv1.AgreementStatus_AGREEMENT_STATUS_SUPERSEDED: "superseded",
	eventsv1.AgreementStatus_AGREEMENT_STATUS_VOIDED:     "voided",
}

func agreementOf(pa *eventsv1.Agreement) domain.Agreement {
	provider := "quarters"
	if pa.GetProvider() == eventsv1.AgreementProvider_AGREEMENT_PROVIDER_EXTERNAL {
		provider = "external"
	}
	a := domain.Agreement{
		ID: pa.GetId(), Version: int(pa.GetVersion()), Provider: provider, ExternalID: pa.ExternalId,
		Status: agreementStatuses[pa.GetStatus()], TemplateName: pa.TemplateName,
		SentAt: tp(pa.GetSentAt()), CompletedAt: tp(pa.GetCompletedAt()), DeclinedAt: tp(pa.GetDeclinedAt()), VoidedAt: tp(pa.GetVoidedAt()),
		Error: pa.Error, DocumentURL: pa.DocumentUrl, Signers: make([]domain.Signer, 0, len(pa.GetSigners())),
	}
	if c := tp(pa.GetCreatedAt()); c != nil {
		a.CreatedAt = *c
	}
	if u := tp(pa.GetUpdatedAt()); u != nil {
		a.UpdatedAt = *u
	}
	if d := pa.GetDocument(); d != nil && d.GetSha256() != "" {
		a.Document = &domain.AgreementDocument{SHA256: d.GetSha256(), Bytes: d.GetSizeBytes(), ArchivedAt: tp(d.GetArchivedAt())}
	}
	if a.Status == "" {
		a.Status = "sent"
	}
	for _, s := range pa.GetSigners() {
		sg := domain.Signer{Role: s.GetRole(), Name: nonEmpty(s.GetName()), Email: nonEmpty(s.GetEmail()), Status: s.GetStatus(),
			ViewedAt: tp(s.GetViewedAt()), CompletedAt: tp(s.GetCompletedAt()), DeclinedAt: tp(s.GetDeclinedAt()),
			DeclineReason: s.DeclineReason}
		if provider == "external" {
			sg.SigningURL = s.SigningUrl
		}
		if sg.Status == "" {
			sg.Status = "pending"
		}
		a.Signers = append(a.Signers, sg)
	}
	return a
}
