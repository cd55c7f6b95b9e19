package client

import (
	"encoding/json"
	"time"
)

// The types of this file mirror the component schemas of the OpenAPI
// document (pkg/openapi/openapi.yaml) field for field; a test keeps them in
// step. A nullable field is a pointer (nil for null); money is euro-cents
// in an *int64, where nil means "not set", which differs from zero. Dates
// (YYYY-MM-DD, local to the property) are strings; instants are time.Time.

// Rate bases of ListingPricing.RateBasis and ReservationPricing.RateBasis.
const (
	RateMonthly = "monthly"
	RateNightly = "nightly"
)

// Listing is a published snapshot of a property, frozen when the operator
// pressed Publish.
type Listing struct {
	// ID is opaque; it equals the PropertyID of the listing's reservations.
	ID       string `json:"id"`
	Slug     string `json:"slug"`
	Nickname string `json:"nickname"`
	Active   bool   `json:"active"`
	IsListed bool   `json:"isListed"`
	// PropertyType and RoomType are the operator's classification
	// ("Apartment", "Entire home/apt").
	PropertyType string  `json:"propertyType"`
	RoomType     string  `json:"roomType"`
	Address      Address `json:"address"`
	// Accommodates is how many people it sleeps.
	Accommodates int    `json:"accommodates"`
	Rooms        []Room `json:"rooms"`
	// Bedrooms, Beds and Bathrooms are derived from Rooms; Bathrooms is
	// fractional for half bathrooms.
	Bedrooms    int     `json:"bedrooms"`
	Beds        int     `json:"beds"`
	Bathrooms   float64 `json:"bathrooms"`
	SquareMeter *int    `json:"squareMeter"`
	// Timezone is the IANA zone the listing's dates are local to.
	Timezone string         `json:"timezone"`
	Pricing  ListingPricing `json:"pricing"`
	Terms    Terms          `json:"terms"`
	// Amenities are amenity keys ("wifi", "washer").
	Amenities   []string    `json:"amenities"`
	Description Description `json:"description"`
	// Translations maps a language code to a Description in it; fall back
	// to Description for a missing or null field (see LocalDescription).
	Translations map[string]Translation `json:"translations"`
	// Images are sorted by SortOrder; the primary one is not necessarily
	// first (see PrimaryImage).
	Images []Image `json:"images"`
	// PublishedAt is when Publish froze the content.
	PublishedAt time.Time `json:"publishedAt"`
	// Raw is the listing as the API sent it, with any field this version
	// of the client does not know.
	Raw json.RawMessage `json:"-"`
}

// PrimaryImage returns the listing's primary image, if it has one.
func (l Listing) PrimaryImage() (Image, bool) {
	for _, im := range l.Images {
		if im.IsPrimary {
			return im, true
		}
	}
	return Image{}, false
}

// LocalDescription returns the description in language lang, each field
// falling back to the base description where the translation lacks it.
func (l Listing) LocalDescription(lang string) Description {
	d := l.Description
	t, ok := l.Translations[lang]
	if !ok {
		return d
	}
	pick := func(tr, base *string) *string {
		if tr != nil {
			return tr
		}
		return base
	}
	return Description{
		Title:        pick(t.Title, d.Title),
		Summary:      pick(t.Summary, d.Summary),
		Space:        pick(t.Space, d.Space),
		Neighborhood: pick(t.Neighborhood, d.Neighborhood),
		Access:       pick(t.Access, d.Access),
		Notes:        pick(t.Notes, d.Notes),
	}
}

// ListingPricing is a listing's price list, in euro-cents.
type ListingPricing struct {
	// Currency is always "EUR".
	Currency         string `json:"currency"`
	MonthlyRateCents *int64 `json:"monthlyRateCents"`
	DepositCents     *int64 `json:"depositCents"`
	UtilitiesCents   *int64 `json:"utilitiesCents"`
	FurnitureCents   *int64 `json:"furnitureCents"`
	// RateBasis says which of MonthlyRateCents and NightlyRateCents the
	// listing quotes: RateMonthly or RateNightly, empty when not sent.
	RateBasis        string `json:"rateBasis,omitempty"`
	NightlyRateCents *int64 `json:"nightlyRateCents,omitempty"`
}

// Terms are a listing's stay limits, in nights.
type Terms struct {
	// MinNights is the shortest accepted stay.
	MinNights *int `json:"minNights"`
	MaxNights *int `json:"maxNights"`
}

// Address is a listing's address.
type Address struct {
	Street     *string `json:"street"`
	PostalCode *string `json:"postalCode"`
	City       string  `json:"city"`
	// Country is ISO 3166-1 alpha-2.
	Country string `json:"country"`
	// Area is the neighbourhood as the operator names it.
	Area      *string  `json:"area"`
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
}

// Room kinds.
const (
	RoomBedroom      = "bedroom"
	RoomLivingRoom   = "living_room"
	RoomFullBathroom = "full_bathroom"
	RoomHalfBathroom = "half_bathroom"
	RoomOther        = "other"
)

// Room is one room of a listing.
type Room struct {
	// Kind is one of the Room constants.
	Kind string `json:"kind"`
	// Name is empty when the room has none.
	Name string `json:"name"`
	// Beds is empty for a bathroom.
	Beds []Bed `json:"beds"`
}

// Bed is a kind of bed in a room and how many of it.
type Bed struct {
	// Type is unspecified, single, double, queen, king, bunk_bed,
	// sofa_bed or crib.
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// Image is a photo of a listing in four renditions (absolute URIs, stable
// until the listing is published again).
type Image struct {
	ID string `json:"id"`
	// IsPrimary is true for exactly one image of a listing.
	IsPrimary bool    `json:"isPrimary"`
	Caption   *string `json:"caption"`
	SortOrder int     `json:"sortOrder"`
	// Width, Height (pixels) and Bytes describe the original.
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Bytes     int64  `json:"bytes"`
	Thumbnail string `json:"thumbnail"`
	Regular   string `json:"regular"`
	Large     string `json:"large"`
	Original  string `json:"original"`
}

// Description is a listing's text: Title is plain text, the other fields
// editor HTML. Any may be nil.
type Description struct {
	Title        *string `json:"title"`
	Summary      *string `json:"summary"`
	Space        *string `json:"space"`
	Neighborhood *string `json:"neighborhood"`
	Access       *string `json:"access"`
	Notes        *string `json:"notes"`
}

// Translation is a Description in another language; a field may be
// missing or nil, and then the base description's applies.
type Translation Description

// Calendar day statuses.
const (
	DayAvailable   = "available"
	DayReserved    = "reserved"
	DayBooked      = "booked"
	DayUnavailable = "unavailable"
)

// CalendarDay is one day of a listing's calendar.
type CalendarDay struct {
	// Date is YYYY-MM-DD, local to the listing.
	Date string `json:"date"`
	// Status is one of the Day constants: booked is a confirmed tenancy,
	// reserved held but not firm, unavailable a block, available bookable.
	Status          string `json:"status"`
	MinNights       int    `json:"minNights"`
	IsBaseMinNights bool   `json:"isBaseMinNights"`
}

// Reservation statuses.
const (
	StatusInquiry   = "inquiry"
	StatusReserved  = "reserved"
	StatusConfirmed = "confirmed"
	StatusCancelled = "cancelled"
)

// Reservation is a booking in any status. The …At stamps are set when the
// status is entered and never cleared.
type Reservation struct {
	ID string `json:"id"`
	// Status is one of the Status constants.
	Status     string `json:"status"`
	PropertyID string `json:"propertyId"`
	// Property is nil for a property that was never published.
	Property *PropertyIdentity `json:"property"`
	Guest    Guest             `json:"guest"`
	// CheckIn and CheckOut are YYYY-MM-DD; CheckOut is exclusive.
	CheckIn  string `json:"checkIn"`
	CheckOut string `json:"checkOut"`
	Nights   int    `json:"nights"`
	Adults   *int   `json:"adults"`
	Children *int   `json:"children"`
	Infants  *int   `json:"infants"`
	Pets     bool   `json:"pets"`
	// Pricing is the snapshot taken when the booking was made.
	Pricing ReservationPricing `json:"pricing"`
	// RequiresContract says whether a signed agreement is needed before the
	// booking counts as confirmed.
	RequiresContract bool `json:"requiresContract"`
	InvoicePaid      bool `json:"invoicePaid"`
	// Agreement is the current agreement, nil when none was issued.
	Agreement *Agreement `json:"agreement"`
	// DashboardURL opens the same record in the dashboard.
	DashboardURL string     `json:"dashboardUrl"`
	InquiredAt   *time.Time `json:"inquiredAt"`
	ReservedAt   *time.Time `json:"reservedAt"`
	ConfirmedAt  *time.Time `json:"confirmedAt"`
	CancelledAt  *time.Time `json:"cancelledAt"`
	CreatedAt    time.Time  `json:"createdAt"`
	// UpdatedAt is the incremental-sync key (see Sync).
	UpdatedAt time.Time `json:"updatedAt"`
	// OnContract is the party named on the contract and Staying the person
	// staying, each when it differs from the guest; nil when not sent.
	OnContract *Contact `json:"onContract,omitempty"`
	Staying    *Contact `json:"staying,omitempty"`
	// Raw is the reservation as the API sent it, with any field this
	// version of the client does not know.
	Raw json.RawMessage `json:"-"`
}

// ReservationPricing is a booking's price snapshot in euro-cents. Rent,
// utilities and furniture are monthly amounts (rent is per night for a
// nightly RateBasis); MonthlyCents is their sum when all three are set,
// nil for a nightly booking.
type ReservationPricing struct {
	Currency       string `json:"currency"`
	RentCents      *int64 `json:"rentCents"`
	UtilitiesCents *int64 `json:"utilitiesCents"`
	FurnitureCents *int64 `json:"furnitureCents"`
	MonthlyCents   *int64 `json:"monthlyCents"`
	DepositCents   *int64 `json:"depositCents"`
	// MinStayMonths is the minimum term the agreement states.
	MinStayMonths *int `json:"minStayMonths"`
	// RateBasis is RateMonthly or RateNightly, empty when not sent.
	RateBasis string `json:"rateBasis,omitempty"`
}

// Contact is a person on a booking other than the guest.
type Contact struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Phone   *string `json:"phone"`
	Company *string `json:"company"`
}

// PropertyIdentity names the property of a booking.
type PropertyIdentity struct {
	ID       string          `json:"id"`
	Nickname string          `json:"nickname"`
	Slug     string          `json:"slug"`
	Address  PropertyAddress `json:"address"`
	// OwnerName is the lessor the agreement names.
	OwnerName *string `json:"ownerName"`
	Timezone  string  `json:"timezone"`
}

// PropertyAddress is the address of a PropertyIdentity.
type PropertyAddress struct {
	Street     *string `json:"street"`
	PostalCode *string `json:"postalCode"`
	City       string  `json:"city"`
	Country    string  `json:"country"`
}

// Guest is the guest of a booking.
type Guest struct {
	ID        string  `json:"id"`
	FirstName *string `json:"firstName"`
	LastName  *string `json:"lastName"`
	Name      string  `json:"name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	Company   *string `json:"company"`
}

// Agreement statuses. Sent, completed, declined, voided and failed can be
// reported through ReportAgreement.
const (
	AgreementSent       = "sent"
	AgreementCompleted  = "completed"
	AgreementDeclined   = "declined"
	AgreementFailed     = "failed"
	AgreementSuperseded = "superseded"
	AgreementVoided     = "voided"
)

// Agreement providers.
const (
	ProviderQuarters = "quarters"
	ProviderExternal = "external"
)

// Agreement is the current version of the tenancy agreement of a booking.
type Agreement struct {
	ID string `json:"id"`
	// Version counts up on every re-issue.
	Version int `json:"version"`
	// Provider is ProviderQuarters (issued by the service) or
	// ProviderExternal (written through this API).
	Provider string `json:"provider"`
	// ExternalID is the caller's stable id for the envelope.
	ExternalID *string `json:"externalId"`
	// Status is one of the Agreement constants.
	Status string `json:"status"`
	// TemplateName is nil for an external envelope.
	TemplateName *string    `json:"templateName"`
	SentAt       *time.Time `json:"sentAt"`
	CompletedAt  *time.Time `json:"completedAt"`
	DeclinedAt   *time.Time `json:"declinedAt"`
	VoidedAt     *time.Time `json:"voidedAt"`
	// Error says why it failed, kept only while Status is failed.
	Error *string `json:"error"`
	// DocumentURL is the provider-hosted copy, as reported.
	DocumentURL *string `json:"documentUrl"`
	// Document is set once the executed PDF is archived.
	Document  *ArchivedDocument `json:"document"`
	Signers   []Signer          `json:"signers"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// AgreementEnvelope is the answer of the agreement writes: the current
// agreement.
type AgreementEnvelope struct {
	Agreement Agreement `json:"agreement"`
}

// ArchivedDocument describes the archived executed PDF of an agreement
// (DownloadAgreementDocument fetches its bytes).
type ArchivedDocument struct {
	// Checksum is "sha256:" and the lowercase hex SHA-256 of the bytes.
	Checksum    string `json:"checksum"`
	ContentType string `json:"contentType,omitempty"`
	// Bytes is the size of the PDF.
	Bytes      int64     `json:"bytes,omitempty"`
	ArchivedAt time.Time `json:"archivedAt,omitzero"`
}

// Signer is one party of an agreement.
type Signer struct {
	// Role is e.g. "lessor" or "lessee".
	Role  string  `json:"role"`
	Name  *string `json:"name"`
	Email *string `json:"email"`
	// Status is e.g. "pending" or "completed".
	Status string `json:"status"`
	// SigningURL is never exposed for a quarters agreement; it echoes the
	// reported link for an external one.
	SigningURL    *string    `json:"signingUrl"`
	ViewedAt      *time.Time `json:"viewedAt"`
	CompletedAt   *time.Time `json:"completedAt"`
	DeclinedAt    *time.Time `json:"declinedAt"`
	DeclineReason *string    `json:"declineReason"`
}

// AgreementInput is the caller's whole current view of one external
// envelope, the body of ReportAgreement.
type AgreementInput struct {
	// ExternalID is the caller's stable id for the envelope; required
	// unless Status is failed.
	ExternalID string `json:"externalId,omitempty"`
	// Status is AgreementSent, AgreementCompleted, AgreementDeclined,
	// AgreementVoided or AgreementFailed.
	Status string `json:"status"`
	// Signers are matched by Role and never removed: sending only the
	// changed party is valid. A role listed twice is refused.
	Signers []SignerInput `json:"signers,omitempty"`
	// DocumentURL is the provider-hosted copy.
	DocumentURL *string `json:"documentUrl,omitempty"`
	// Error says why it failed, with status failed.
	Error *string `json:"error,omitempty"`
}

// SignerInput is one party of an AgreementInput; only Role is required.
type SignerInput struct {
	Role          string     `json:"role"`
	Name          *string    `json:"name,omitempty"`
	Email         *string    `json:"email,omitempty"`
	Status        string     `json:"status,omitempty"`
	SigningURL    *string    `json:"signingUrl,omitempty"`
	ViewedAt      *time.Time `json:"viewedAt,omitempty"`
	CompletedAt   *time.Time `json:"completedAt,omitempty"`
	DeclinedAt    *time.Time `json:"declinedAt,omitempty"`
	DeclineReason *string    `json:"declineReason,omitempty"`
}

// InquiryInput is a booking-form submission, the body of CreateInquiry.
// PropertyID, LastName and Email are required; zero optional fields are
// left out. Text is trimmed by the API.
type InquiryInput struct {
	// PropertyID must be one of the organisation's published listings.
	PropertyID string `json:"propertyId"`
	FirstName  string `json:"firstName,omitempty"`
	LastName   string `json:"lastName"`
	Email      string `json:"email"`
	Phone      string `json:"phone,omitempty"`
	// CheckIn and CheckOut are YYYY-MM-DD, CheckOut after CheckIn.
	CheckIn  string `json:"checkIn,omitempty"`
	CheckOut string `json:"checkOut,omitempty"`
	// Adults, Children and Infants are 0 to 20 each.
	Adults   *int  `json:"adults,omitempty"`
	Children *int  `json:"children,omitempty"`
	Infants  *int  `json:"infants,omitempty"`
	Pets     *bool `json:"pets,omitempty"`
	// Deprecated: GuestCount is folded into Adults by the API; send Adults.
	GuestCount int    `json:"guestCount,omitempty"`
	Message    string `json:"message,omitempty"`
	// Locale is the language the guest was reading.
	Locale string `json:"locale,omitempty"`
	// Source is where the form lives (default "website").
	Source string `json:"source,omitempty"`
	// Metadata is anything else the form collects, at most 10 KB as JSON.
	Metadata map[string]any `json:"metadata,omitempty"`
	// SendConfirmation false suppresses the guest confirmation email when
	// the form already sends one; nil leaves the default (send).
	SendConfirmation *bool `json:"sendConfirmation,omitempty"`
	// Form is a form name.
	Form string `json:"form,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of the input types.
func Ptr[T any](v T) *T { return &v }
