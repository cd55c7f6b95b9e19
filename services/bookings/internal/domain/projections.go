package domain

import "time"

// DefaultInquiryDailyLimit applies to an org whose settings have not arrived.
const DefaultInquiryDailyLimit = 500

// Org is what bookings keep of an organisation, from org events.
type Org struct {
	ID                string
	Name              string
	ContractProvider  string
	InquiryDailyLimit int
	Version           int64
}

// Property is what bookings keep of a property, from listing events: the
// identity of its latest published snapshot (kept after unpublishing, so
// that bookings keep naming it) and the snapshot's prices.
type Property struct {
	ID        string
	OrgID     string
	Published bool
	// Identity is nil for a property never published.
	Identity *PropertyIdentity
	Pricing  ListingPricing
	Version  int64
}

// PropertyIdentity names a property on its bookings.
type PropertyIdentity struct {
	ID         string
	Nickname   string
	Slug       string
	Street     *string
	PostalCode *string
	City       string
	Country    string
	OwnerName  *string
	Timezone   string
}

// ListingPricing is a published listing's prices, in euro-cents.
type ListingPricing struct {
	MonthlyRateCents *int64
	NightlyRateCents *int64
	DepositCents     *int64
	UtilitiesCents   *int64
	FurnitureCents   *int64
	Basis            RateBasis
}

// Snapshot is the booking pricing a listing's prices give.
func (lp ListingPricing) Snapshot() Pricing {
	p := Pricing{
		UtilitiesCents: lp.UtilitiesCents,
		FurnitureCents: lp.FurnitureCents,
		DepositCents:   lp.DepositCents,
		Basis:          lp.Basis,
	}
	if p.Basis == "" {
		p.Basis = BasisMonthly
	}
	if p.Basis == BasisNightly {
		p.RentCents = lp.NightlyRateCents
	} else {
		p.RentCents = lp.MonthlyRateCents
	}
	return p
}

// Agreement is the current agreement of a booking, from agreement events.
type Agreement struct {
	ID           string
	Version      int
	Provider     string
	ExternalID   *string
	Status       string
	TemplateName *string
	SentAt       *time.Time
	CompletedAt  *time.Time
	DeclinedAt   *time.Time
	VoidedAt     *time.Time
	Error        *string
	DocumentURL  *string
	Document     *AgreementDocument
	Signers      []Signer
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// AgreementDocument describes the archived executed PDF.
type AgreementDocument struct {
	SHA256     string
	Bytes      int64
	ArchivedAt *time.Time
}

// Signer is one party of an agreement.
type Signer struct {
	Role          string
	Name          *string
	Email         *string
	Status        string
	SigningURL    *string
	ViewedAt      *time.Time
	CompletedAt   *time.Time
	DeclinedAt    *time.Time
	DeclineReason *string
}

// AgreementCompleted is the status that confirms a reserved booking.
const AgreementCompleted = "completed"
