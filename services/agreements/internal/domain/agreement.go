// Package domain holds the agreements service's types and rules: a
// reservation's agreement history (every version ever issued, the last one
// current), the reports an external e-signature provider makes against it,
// agreements the service issues itself, and the archived executed PDF.
package domain

import (
	"reflect"
	"slices"
	"time"

	"quarters.dev/pkg/apperr"
)

// Provider says who issued an agreement.
type Provider string

const (
	// ProviderQuarters: issued by the service itself (admin API).
	ProviderQuarters Provider = "quarters"
	// ProviderExternal: written through the public API by the org's own
	// e-signature system.
	ProviderExternal Provider = "external"
)

// Status of one agreement version.
type Status string

// The agreement statuses of the spec.
const (
	StatusSent       Status = "sent"
	StatusCompleted  Status = "completed"
	StatusDeclined   Status = "declined"
	StatusFailed     Status = "failed"
	StatusSuperseded Status = "superseded"
	StatusVoided     Status = "voided"
)

// Reportable lists the statuses a report may carry, in the spec's order.
var Reportable = []Status{StatusSent, StatusCompleted, StatusDeclined, StatusVoided, StatusFailed}

// IsReportable says whether s may be reported through the public API.
func IsReportable(s Status) bool { return slices.Contains(Reportable, s) }

// Live says whether an agreement is still out for signature: only a live
// current agreement becomes superseded when a new version is issued. A
// finished one (completed, declined, voided, failed) stays as it is in the
// history.
func (a *Agreement) Live() bool { return a.Status == StatusSent }

// Signer statuses the service sets itself.
const (
	SignerPending   = "pending"
	SignerViewed    = "viewed"
	SignerCompleted = "completed"
	SignerDeclined  = "declined"
)

// Signer is one party of an agreement.
type Signer struct {
	Role   string
	Name   string
	Email  string
	Status string
	// SigningURL is what an external provider reported. Quarters agreements
	// never carry one here: their links live in SigningToken.
	SigningURL *string
	// SigningToken is the party's private signing link token of a quarters
	// agreement; it never leaves the service.
	SigningToken  string
	ViewedAt      *time.Time
	CompletedAt   *time.Time
	DeclinedAt    *time.Time
	DeclineReason *string
}

// Document is the archived executed PDF of an agreement version.
type Document struct {
	// FileID names the stored file (GridFS).
	FileID      string
	SHA256      string
	Bytes       int64
	ContentType string
	UploadedAt  time.Time
}

// Agreement is one version of a reservation's tenancy agreement.
type Agreement struct {
	ID           string
	Version      int
	Provider     Provider
	ExternalID   *string
	Status       Status
	TemplateName *string
	SentAt       *time.Time
	CompletedAt  *time.Time
	DeclinedAt   *time.Time
	VoidedAt     *time.Time
	Error        *string
	DocumentURL  *string
	Document     *Document
	Signers      []Signer
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// History is a reservation's agreement history: one stored document, changed
// only as a whole under a compare-and-set on Revision.
type History struct {
	ReservationID string
	OrgID         string
	// Versions in issue order; the last one is the current agreement.
	Versions []Agreement
	// Revision counts the events the history has produced; the next event
	// carries Revision+1.
	Revision            int64
	ContractRequestedAt *time.Time
}

// Current returns the current agreement, or nil when none was issued.
func (h *History) Current() *Agreement {
	if len(h.Versions) == 0 {
		return nil
	}
	return &h.Versions[len(h.Versions)-1]
}

// IsCurrent says whether the version at index i is the current one.
func (h *History) IsCurrent(i int) bool { return i == len(h.Versions)-1 }

// Clone returns a deep copy, so that a change can be compared with the state
// it started from.
func (h *History) Clone() History {
	c := *h
	c.Versions = make([]Agreement, len(h.Versions))
	for i, a := range h.Versions {
		a.Signers = slices.Clone(a.Signers)
		c.Versions[i] = a
	}
	return c
}

// ContractRequest is staff asking the org's external provider for an
// agreement.
type ContractRequest struct {
	ReservationID string
	PropertyID    string
	RequestedAt   time.Time
}

// Effect is what a change did to a history: the indices of the versions it
// changed, in the order their events go out, and a contract request.
type Effect struct {
	Changed   []int
	Requested *ContractRequest
}

// None says the change left the history as it was: nothing is written and
// no event goes out.
func (e Effect) None() bool { return len(e.Changed) == 0 && e.Requested == nil }

// Opt is a field of a report that may be absent (left as it is), null
// (cleared) or a value.
type Opt[T any] struct {
	Set   bool
	Value *T
}

// Of returns a set Opt holding v.
func Of[T any](v T) Opt[T] { return Opt[T]{Set: true, Value: &v} }

// SignerReport is one party as the caller reports it; absent fields are left
// as they are.
type SignerReport struct {
	Role          string
	Name          Opt[string]
	Email         Opt[string]
	Status        Opt[string]
	SigningURL    Opt[string]
	DeclineReason Opt[string]
}

// Report is the caller's whole current view of one envelope.
type Report struct {
	// ExternalID is nil only for a failed report (rule 1).
	ExternalID  *string
	Status      Status
	Error       Opt[string]
	DocumentURL Opt[string]
	Signers     []SignerReport
}

// Validate checks the rules a report must meet before it meets any state.
func (r Report) Validate() error {
	if r.Status == "" {
		return apperr.Invalid("Field status is required: one of sent, completed, declined, voided, failed.")
	}
	if !IsReportable(r.Status) {
		return apperr.Invalid("Field status must be one of sent, completed, declined, voided, failed; got %q.", r.Status)
	}
	if r.ExternalID == nil && r.Status != StatusFailed {
		return apperr.Invalid("Field externalId is required unless status is failed.")
	}
	if r.ExternalID != nil && *r.ExternalID == "" {
		return apperr.Invalid("Field externalId must not be empty.")
	}
	return checkRoles(len(r.Signers), func(i int) string { return r.Signers[i].Role })
}

func checkRoles(n int, role func(int) string) error {
	seen := make(map[string]int, n)
	for i := range n {
		ro := role(i)
		if ro == "" {
			return apperr.Invalid("Field signers[%d].role is required.", i)
		}
		if j, dup := seen[ro]; dup {
			return apperr.Invalid("Field signers[%d].role repeats role %q of signers[%d]; each role may be listed once.", i, ro, j)
		}
		seen[ro] = i
	}
	return nil
}

// Outcome says where a report landed.
type Outcome struct {
	// Index of the version that recorded the report.
	Index int
	// Created is true when the report issued a new version (201).
	Created bool
	Effect  Effect
}

// ApplyReport records an external provider's report in the history (the
// endpoint rules of PUT /reservations/{id}/agreement and the agreement status
// table):
//
//   - the same externalId as the current agreement updates it in place;
//   - the externalId of an earlier version updates that historical row only;
//   - any other externalId, or the first report, issues a new version, and a
//     live (sent) current agreement becomes superseded; a finished one stays
//     as it was;
//   - failed without externalId while a sent or completed agreement is
//     current is a conflict; otherwise it updates a current agreement that has
//     no externalId either, or issues a new version.
//
// A report that changes nothing leaves the effect empty (idempotent repeat).
// The report must have passed Validate.
func ApplyReport(h *History, r Report, newID func() string, now time.Time) (Outcome, error) {
	cur := h.Current()
	if r.ExternalID == nil {
		if cur != nil && (cur.Status == StatusSent || cur.Status == StatusCompleted) {
			return Outcome{}, apperr.Conflictf("A %s agreement is current: report failed against its externalId %s.",
				cur.Status, orNone(cur.ExternalID))
		}
		if cur != nil && cur.ExternalID == nil {
			return updateInPlace(h, len(h.Versions)-1, r, now), nil
		}
		return issueExternal(h, r, newID, now), nil
	}
	if cur != nil && cur.ExternalID != nil && *cur.ExternalID == *r.ExternalID {
		return updateInPlace(h, len(h.Versions)-1, r, now), nil
	}
	for i := len(h.Versions) - 2; i >= 0; i-- {
		if id := h.Versions[i].ExternalID; id != nil && *id == *r.ExternalID {
			if h.Versions[i].Status == StatusSuperseded && r.Status == StatusSent {
				// A superseded envelope reported as still out for
				// signature stays superseded: it can no longer become
				// the agreement. Its other fields are recorded.
				r.Status = StatusSuperseded
			}
			return updateInPlace(h, i, r, now), nil
		}
	}
	return issueExternal(h, r, newID, now), nil
}

func orNone(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

func updateInPlace(h *History, i int, r Report, now time.Time) Outcome {
	before := h.Versions[i]
	before.Signers = slices.Clone(before.Signers)
	a := &h.Versions[i]
	applyReport(a, r, now)
	if reflect.DeepEqual(before, *a) {
		if a.Status == StatusCompleted && h.IsCurrent(i) {
			// A completed report on the current agreement confirms a
			// reserved booking whenever it arrives (the spec's reservation
			// table), also when the agreement was completed before the
			// booking was reserved: the agreement stays as it is, and the
			// event tells bookings the report came.
			return Outcome{Index: i, Effect: Effect{Changed: []int{i}}}
		}
		return Outcome{Index: i}
	}
	a.UpdatedAt = now
	return Outcome{Index: i, Effect: Effect{Changed: []int{i}}}
}

func issueExternal(h *History, r Report, newID func() string, now time.Time) Outcome {
	a := Agreement{Provider: ProviderExternal, ExternalID: r.ExternalID, Signers: []Signer{}}
	applyReport(&a, r, now)
	return issue(h, a, newID, now)
}

// issue appends a as the new current version, superseding a live current
// one.
func issue(h *History, a Agreement, newID func() string, now time.Time) Outcome {
	var eff Effect
	if cur := h.Current(); cur != nil && cur.Live() {
		cur.Status = StatusSuperseded
		cur.UpdatedAt = now
		eff.Changed = append(eff.Changed, len(h.Versions)-1)
	}
	a.ID = newID()
	a.Version = len(h.Versions) + 1
	a.CreatedAt, a.UpdatedAt = now, now
	h.Versions = append(h.Versions, a)
	i := len(h.Versions) - 1
	eff.Changed = append(eff.Changed, i)
	return Outcome{Index: i, Created: true, Effect: eff}
}

// applyReport writes a report onto one version: status (stamping the …At of
// a status when it is entered), error (kept only while failed), documentUrl,
// and the signers, matched by role and never removed.
func applyReport(a *Agreement, r Report, now time.Time) {
	if a.Status != r.Status {
		a.Status = r.Status
		stamp(a, now)
	}
	switch {
	case a.Status != StatusFailed:
		a.Error = nil
	case r.Error.Set:
		a.Error = r.Error.Value
	}
	if r.DocumentURL.Set {
		a.DocumentURL = r.DocumentURL.Value
	}
	for _, sr := range r.Signers {
		i := slices.IndexFunc(a.Signers, func(s Signer) bool { return s.Role == sr.Role })
		if i < 0 {
			a.Signers = append(a.Signers, Signer{Role: sr.Role, Status: SignerPending})
			i = len(a.Signers) - 1
		}
		applySigner(&a.Signers[i], sr, now)
	}
}

func stamp(a *Agreement, now time.Time) {
	t := now
	switch a.Status {
	case StatusSent:
		a.SentAt = &t
	case StatusCompleted:
		a.CompletedAt = &t
	case StatusDeclined:
		a.DeclinedAt = &t
	case StatusVoided:
		a.VoidedAt = &t
	}
}

func applySigner(s *Signer, r SignerReport, now time.Time) {
	set := func(dst *string, o Opt[string]) {
		if o.Set {
			*dst = ""
			if o.Value != nil {
				*dst = *o.Value
			}
		}
	}
	set(&s.Name, r.Name)
	set(&s.Email, r.Email)
	if r.SigningURL.Set {
		s.SigningURL = r.SigningURL.Value
	}
	if r.DeclineReason.Set {
		s.DeclineReason = r.DeclineReason.Value
	}
	if r.Status.Set && r.Status.Value != nil && *r.Status.Value != s.Status {
		s.Status = *r.Status.Value
		t := now
		switch s.Status {
		case SignerViewed:
			s.ViewedAt = &t
		case SignerCompleted:
			s.CompletedAt = &t
		case SignerDeclined:
			s.DeclinedAt = &t
		}
	}
}

// SignerInput is one party of an agreement the service issues itself.
type SignerInput struct {
	Role, Name, Email string
}

// Issue adds a quarters agreement, status sent, as the new current version;
// a live current agreement becomes superseded. token makes each party's
// private signing link token.
func Issue(h *History, templateName string, signers []SignerInput, newID, token func() string, now time.Time) (Outcome, error) {
	if templateName == "" {
		return Outcome{}, apperr.Invalid("Field templateName is required.")
	}
	if err := checkRoles(len(signers), func(i int) string { return signers[i].Role }); err != nil {
		return Outcome{}, err
	}
	t := now
	a := Agreement{
		Provider:     ProviderQuarters,
		Status:       StatusSent,
		TemplateName: &templateName,
		SentAt:       &t,
		Signers:      make([]Signer, 0, len(signers)),
	}
	for _, s := range signers {
		a.Signers = append(a.Signers, Signer{Role: s.Role, Name: s.Name, Email: s.Email, Status: SignerPending, SigningToken: token()})
	}
	return issue(h, a, newID, now), nil
}

// CheckArchivable says whether the executed PDF of the current agreement may
// be archived: there must be one, issued by the external provider, and
// completed.
func CheckArchivable(cur *Agreement) error {
	switch {
	case cur == nil:
		return apperr.NotFoundf("The reservation has no agreement.")
	case cur.Provider != ProviderExternal:
		return apperr.Conflictf("The current agreement is issued by quarters; its document is archived by the service.")
	case cur.Status != StatusCompleted:
		return apperr.Conflictf("The current agreement is %s; a document is archived only once it is completed.", cur.Status)
	}
	return nil
}

// Archive sets doc on the current agreement if it is still the version
// agreementID and still archivable. It returns the document it replaced.
func Archive(h *History, agreementID string, doc Document, now time.Time) (replaced *Document, eff Effect, err error) {
	cur := h.Current()
	if err := CheckArchivable(cur); err != nil {
		return nil, Effect{}, err
	}
	if cur.ID != agreementID {
		return nil, Effect{}, apperr.Conflictf("The agreement was re-issued while the document was uploaded; upload it again.")
	}
	replaced = cur.Document
	cur.Document = &doc
	cur.UpdatedAt = now
	return replaced, Effect{Changed: []int{len(h.Versions) - 1}}, nil
}
