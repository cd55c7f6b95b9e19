package domain

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"quarters.dev/pkg/apperr"
)

// Limits of the inquiry form.
const (
	MaxFirstName     = 100
	MaxLastName      = 100
	MaxEmail         = 200
	MaxPhone         = 50
	MaxMessage       = 10000
	MaxLocale        = 10
	MaxSource        = 50
	MaxCount         = 20
	MinGuestCount    = 1
	MaxGuestCount    = 50
	MaxMetadataBytes = 10 * 1024
	DefaultSource    = "website"
)

// InquiryInput is a booking-form submission as decoded, before the rules.
// Nil means the field was absent (or null).
type InquiryInput struct {
	PropertyID       *string
	FirstName        *string
	LastName         *string
	Email            *string
	Phone            *string
	CheckIn          *string
	CheckOut         *string
	Adults           *int64
	Children         *int64
	Infants          *int64
	Pets             *bool
	GuestCount       *int64
	Message          *string
	Locale           *string
	Source           *string
	Metadata         json.RawMessage
	SendConfirmation *bool
	Form             *string
}

// Inquiry is a stored booking-form submission, text trimmed.
type Inquiry struct {
	ID               string
	OrgID            string
	PropertyID       string
	FirstName        *string
	LastName         string
	Email            string
	Phone            *string
	CheckIn          *Date
	CheckOut         *Date
	Adults           *int
	Children         *int
	Infants          *int
	Pets             *bool
	GuestCount       *int
	Message          *string
	Locale           *string
	Source           string
	Metadata         json.RawMessage
	SendConfirmation *bool
	Form             *string
	ReservationID    *string
	ConvertedAt      *time.Time
	CreatedAt        time.Time
	Version          int64
}

// WantsConfirmation reports whether the guest gets a confirmation email.
func (q *Inquiry) WantsConfirmation() bool {
	return q.SendConfirmation == nil || *q.SendConfirmation
}

// NewInquiry applies the form's rules to in. Every error names the field.
func NewInquiry(id, orgID string, in InquiryInput, now time.Time) (Inquiry, error) {
	q := Inquiry{ID: id, OrgID: orgID, CreatedAt: now, Version: 1}
	var err error
	pid, err := text("propertyId", in.PropertyID, 0, true, false)
	if err != nil {
		return q, err
	}
	q.PropertyID = *pid
	// Names and the address end up in mail headers: line breaks and other
	// control characters are refused rather than carried into them.
	if q.FirstName, err = text("firstName", in.FirstName, MaxFirstName, false, true); err != nil {
		return q, err
	}
	last, err := text("lastName", in.LastName, MaxLastName, true, true)
	if err != nil {
		return q, err
	}
	q.LastName = *last
	email, err := text("email", in.Email, MaxEmail, true, true)
	if err != nil {
		return q, err
	}
	if !ValidEmail(*email) {
		return q, apperr.Invalid("Field email must be an email address such as guest@example.com.")
	}
	q.Email = *email
	if q.Phone, err = text("phone", in.Phone, MaxPhone, false, true); err != nil {
		return q, err
	}
	if q.CheckIn, err = date("checkIn", in.CheckIn); err != nil {
		return q, err
	}
	if q.CheckOut, err = date("checkOut", in.CheckOut); err != nil {
		return q, err
	}
	if q.CheckIn != nil && q.CheckOut != nil && !q.CheckIn.Before(*q.CheckOut) {
		return q, apperr.Invalid("Field checkOut must be after checkIn.")
	}
	if q.Adults, err = count("adults", in.Adults, 0, MaxCount); err != nil {
		return q, err
	}
	if q.Children, err = count("children", in.Children, 0, MaxCount); err != nil {
		return q, err
	}
	if q.Infants, err = count("infants", in.Infants, 0, MaxCount); err != nil {
		return q, err
	}
	if q.GuestCount, err = count("guestCount", in.GuestCount, MinGuestCount, MaxGuestCount); err != nil {
		return q, err
	}
	if q.Adults == nil && q.GuestCount != nil {
		n := *q.GuestCount
		q.Adults = &n
	}
	q.Pets = in.Pets
	if q.Message, err = text("message", in.Message, MaxMessage, false, false); err != nil {
		return q, err
	}
	if q.Locale, err = text("locale", in.Locale, MaxLocale, false, true); err != nil {
		return q, err
	}
	src, err := text("source", in.Source, MaxSource, false, false)
	if err != nil {
		return q, err
	}
	q.Source = DefaultSource
	if src != nil && *src != "" {
		q.Source = *src
	}
	if q.Form, err = text("form", in.Form, 0, false, false); err != nil {
		return q, err
	}
	if q.Metadata, err = metadata(in.Metadata); err != nil {
		return q, err
	}
	q.SendConfirmation = in.SendConfirmation
	return q, nil
}

// text trims a text field and applies its length limit (in characters; 0
// means none). A required field must be non-empty after trimming; an
// optional one that is empty after trimming is kept as empty. singleLine
// refuses control characters (line breaks included).
func text(field string, v *string, maxLen int, required, singleLine bool) (*string, error) {
	if v == nil {
		if required {
			return nil, apperr.Invalid("Field %s is required.", field)
		}
		return nil, nil
	}
	s := strings.TrimSpace(*v)
	if required && s == "" {
		return nil, apperr.Invalid("Field %s is required and must not be blank.", field)
	}
	if maxLen > 0 && utf8.RuneCountInString(s) > maxLen {
		return nil, apperr.Invalid("Field %s is longer than %d characters.", field, maxLen)
	}
	if singleLine && strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return nil, apperr.Invalid("Field %s must not contain line breaks or control characters.", field)
	}
	return &s, nil
}

func date(field string, v *string) (*Date, error) {
	if v == nil {
		return nil, nil
	}
	d, ok := ParseDate(strings.TrimSpace(*v))
	if !ok {
		return nil, apperr.Invalid("Field %s must be a date YYYY-MM-DD.", field)
	}
	return &d, nil
}

func count(field string, v *int64, lo, hi int64) (*int, error) {
	if v == nil {
		return nil, nil
	}
	if *v < lo || *v > hi {
		return nil, apperr.Invalid("Field %s must be an integer from %d to %d.", field, lo, hi)
	}
	n := int(*v)
	return &n, nil
}

func metadata(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if trimmed[0] != '{' {
		return nil, apperr.Invalid("Field metadata must be an object.")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, apperr.Invalid("Field metadata must be an object.")
	}
	if n := serialisedSize(buf.Bytes()); n > MaxMetadataBytes {
		return nil, apperr.Invalid("Field metadata is larger than %d bytes serialised (%d).", MaxMetadataBytes, n)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// serialisedSize is the size of compact JSON written plainly: UTF-8 text
// rather than \u escapes, numbers as given. The same object costs the same
// whichever way a client's encoder escapes it.
func serialisedSize(compact []byte) int {
	if bytes.IndexByte(compact, '\\') < 0 {
		return len(compact)
	}
	dec := json.NewDecoder(bytes.NewReader(compact))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return len(compact)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return len(compact)
	}
	return out.Len() - 1 // Encode ends with a newline
}

// ValidEmail accepts a bare addr-spec (no display name, no comments) with a
// domain part.
func ValidEmail(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n<>") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1
}
