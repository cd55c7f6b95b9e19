// Package domain holds the auth service's types and rules: organisations,
// their settings, and credential sets.
package domain

import (
	"strings"
	"time"
	"unicode/utf8"

	"quarters.dev/pkg/apperr"
)

// ContractProvider says who issues an organisation's tenancy agreements.
type ContractProvider string

const (
	// ProviderQuarters: the service issues agreements itself.
	ProviderQuarters ContractProvider = "quarters"
	// ProviderExternal: agreements are written through the public API.
	ProviderExternal ContractProvider = "external"
)

// DefaultInquiryDailyLimit is the inquiry allowance of a new organisation.
const DefaultInquiryDailyLimit = 500

// MaxInquiryDailyLimit bounds the allowance an operator may set.
const MaxInquiryDailyLimit = 1_000_000

// MaxNameLength bounds organisation and credential set names.
const MaxNameLength = 200

// Org is an organisation and its settings.
type Org struct {
	ID                string
	Name              string
	ContractProvider  ContractProvider
	InquiryDailyLimit int
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// Version counts the changes; events carry it so consumers apply only
	// newer states.
	Version int64
}

// OrgChanges are the settings an operator may change; nil leaves a setting
// as it is.
type OrgChanges struct {
	Name              *string
	ContractProvider  *string
	InquiryDailyLimit *int64
}

// NewOrg validates the settings of a new organisation.
func NewOrg(id string, c OrgChanges, now time.Time) (Org, error) {
	if c.Name == nil {
		return Org{}, apperr.Invalid("Field name is required.")
	}
	o := Org{
		ID:                id,
		ContractProvider:  ProviderQuarters,
		InquiryDailyLimit: DefaultInquiryDailyLimit,
		CreatedAt:         now,
		UpdatedAt:         now,
		Version:           1,
	}
	if _, err := o.Apply(c); err != nil {
		return Org{}, err
	}
	o.UpdatedAt = now
	return o, nil
}

// Apply changes the settings in place and reports whether anything changed.
func (o *Org) Apply(c OrgChanges) (bool, error) {
	next := *o
	if c.Name != nil {
		name := strings.TrimSpace(*c.Name)
		if name == "" {
			return false, apperr.Invalid("Field name must not be empty.")
		}
		if utf8.RuneCountInString(name) > MaxNameLength {
			return false, apperr.Invalid("Field name must be at most %d characters.", MaxNameLength)
		}
		next.Name = name
	}
	if c.ContractProvider != nil {
		switch p := ContractProvider(*c.ContractProvider); p {
		case ProviderQuarters, ProviderExternal:
			next.ContractProvider = p
		default:
			return false, apperr.Invalid("Field contractProvider must be %q or %q.", ProviderQuarters, ProviderExternal)
		}
	}
	if c.InquiryDailyLimit != nil {
		n := *c.InquiryDailyLimit
		if n < 0 || n > MaxInquiryDailyLimit {
			return false, apperr.Invalid("Field inquiryDailyLimit must be an integer from 0 to %d.", MaxInquiryDailyLimit)
		}
		next.InquiryDailyLimit = int(n)
	}
	changed := next.Name != o.Name || next.ContractProvider != o.ContractProvider ||
		next.InquiryDailyLimit != o.InquiryDailyLimit
	*o = next
	return changed, nil
}
