package domain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
)

func sp(s string) *string { return &s }
func ip(n int64) *int64   { return &n }
func bp(b bool) *bool     { return &b }

func validInquiry() InquiryInput {
	return InquiryInput{PropertyID: sp("lst_1"), LastName: sp("Doe"), Email: sp("jane@example.com")}
}

// metadataOf returns a JSON object exactly n bytes long when compact.
func metadataOf(n int) json.RawMessage {
	const frame = len(`{"k":""}`)
	return json.RawMessage(`{"k":"` + strings.Repeat("x", n-frame) + `"}`)
}

func TestNewInquiryRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*InquiryInput)
		field string // "" means valid
	}{
		{"minimal", func(*InquiryInput) {}, ""},
		{"propertyId missing", func(in *InquiryInput) { in.PropertyID = nil }, "propertyId"},
		{"propertyId blank", func(in *InquiryInput) { in.PropertyID = sp("  ") }, "propertyId"},
		{"lastName missing", func(in *InquiryInput) { in.LastName = nil }, "lastName"},
		{"lastName blank after trimming", func(in *InquiryInput) { in.LastName = sp(" \t ") }, "lastName"},
		{"lastName 100 chars after trimming", func(in *InquiryInput) { in.LastName = sp("  " + strings.Repeat("é", 100) + "  ") }, ""},
		{"lastName 101 chars after trimming", func(in *InquiryInput) { in.LastName = sp(" " + strings.Repeat("a", 101)) }, "lastName"},
		{"firstName 100 chars", func(in *InquiryInput) { in.FirstName = sp(strings.Repeat("a", 100)) }, ""},
		{"firstName 101 chars", func(in *InquiryInput) { in.FirstName = sp(strings.Repeat("a", 101)) }, "firstName"},
		{"firstName with CR LF", func(in *InquiryInput) { in.FirstName = sp("Jane\r\nBcc: evil@example.com") }, "firstName"},
		{"lastName with LF", func(in *InquiryInput) { in.LastName = sp("Doe\nX-Evil: 1") }, "lastName"},
		{"email missing", func(in *InquiryInput) { in.Email = nil }, "email"},
		{"email malformed", func(in *InquiryInput) { in.Email = sp("jane.example.com") }, "email"},
		{"email with display name", func(in *InquiryInput) { in.Email = sp("Jane <jane@example.com>") }, "email"},
		{"email with CR LF", func(in *InquiryInput) { in.Email = sp("jane@example.com\r\nBcc: x@y.z") }, "email"},
		{"email 200 chars", func(in *InquiryInput) { in.Email = sp(strings.Repeat("a", 188) + "@example.com") }, ""},
		{"email 201 chars", func(in *InquiryInput) { in.Email = sp(strings.Repeat("a", 189) + "@example.com") }, "email"},
		{"phone 50 chars", func(in *InquiryInput) { in.Phone = sp(strings.Repeat("1", 50)) }, ""},
		{"phone 51 chars", func(in *InquiryInput) { in.Phone = sp(strings.Repeat("1", 51)) }, "phone"},
		{"message 10000 chars", func(in *InquiryInput) { in.Message = sp(strings.Repeat("m", 10000)) }, ""},
		{"message 10001 chars", func(in *InquiryInput) { in.Message = sp(strings.Repeat("m", 10001)) }, "message"},
		{"message with line breaks", func(in *InquiryInput) { in.Message = sp("line one\r\nline two") }, ""},
		{"locale 10 chars", func(in *InquiryInput) { in.Locale = sp("de-DE-1996") }, ""},
		{"locale 11 chars", func(in *InquiryInput) { in.Locale = sp("de-DE-19961") }, "locale"},
		{"source 50 chars", func(in *InquiryInput) { in.Source = sp(strings.Repeat("s", 50)) }, ""},
		{"source 51 chars", func(in *InquiryInput) { in.Source = sp(strings.Repeat("s", 51)) }, "source"},
		{"checkIn malformed", func(in *InquiryInput) { in.CheckIn = sp("2025-02-30") }, "checkIn"},
		{"checkOut malformed", func(in *InquiryInput) { in.CheckOut = sp("01.03.2025") }, "checkOut"},
		{"checkOut equal to checkIn", func(in *InquiryInput) { in.CheckIn, in.CheckOut = sp("2025-03-01"), sp("2025-03-01") }, "checkOut"},
		{"checkOut before checkIn", func(in *InquiryInput) { in.CheckIn, in.CheckOut = sp("2025-03-02"), sp("2025-03-01") }, "checkOut"},
		{"checkOut after checkIn", func(in *InquiryInput) { in.CheckIn, in.CheckOut = sp("2025-03-01"), sp("2025-03-02") }, ""},
		{"adults 0", func(in *InquiryInput) { in.Adults = ip(0) }, ""},
		{"adults 20", func(in *InquiryInput) { in.Adults = ip(20) }, ""},
		{"adults 21", func(in *InquiryInput) { in.Adults = ip(21) }, "adults"},
		{"adults -1", func(in *InquiryInput) { in.Adults = ip(-1) }, "adults"},
		{"children 21", func(in *InquiryInput) { in.Children = ip(21) }, "children"},
		{"infants 21", func(in *InquiryInput) { in.Infants = ip(21) }, "infants"},
		{"infants 0", func(in *InquiryInput) { in.Infants = ip(0) }, ""},
		{"guestCount 0", func(in *InquiryInput) { in.GuestCount = ip(0) }, "guestCount"},
		{"guestCount 1", func(in *InquiryInput) { in.GuestCount = ip(1) }, ""},
		{"guestCount 50", func(in *InquiryInput) { in.GuestCount = ip(50) }, ""},
		{"guestCount 51", func(in *InquiryInput) { in.GuestCount = ip(51) }, "guestCount"},
		{"metadata exactly 10 KB", func(in *InquiryInput) { in.Metadata = metadataOf(MaxMetadataBytes) }, ""},
		{"metadata one byte over", func(in *InquiryInput) { in.Metadata = metadataOf(MaxMetadataBytes + 1) }, "metadata"},
		{"metadata not an object", func(in *InquiryInput) { in.Metadata = json.RawMessage(`[1,2]`) }, "metadata"},
		{"metadata null", func(in *InquiryInput) { in.Metadata = json.RawMessage(`null`) }, ""},
		// 5 115 × "é" is 10 238 bytes as UTF-8 and 30 690 as \u escapes:
		// the object's size does not depend on how it was escaped.
		{"metadata within 10 KB, sent escaped", func(in *InquiryInput) {
			in.Metadata = json.RawMessage(`{"k":"` + strings.Repeat(`\u00e9`, 5115) + `"}`)
		}, ""},
		{"metadata over 10 KB, sent escaped", func(in *InquiryInput) {
			in.Metadata = json.RawMessage(`{"k":"` + strings.Repeat(`\u00e9`, 5200) + `"}`)
		}, "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validInquiry()
			tt.edit(&in)
			_, err := NewInquiry("inq_1", "org_1", in, time.Now())
			if tt.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !apperr.Is(err, apperr.InvalidRequest) || !strings.Contains(apperr.As(err).Message, tt.field) {
				t.Fatalf("error %v, want invalid_request naming %s", err, tt.field)
			}
		})
	}
}

func TestNewInquiryNormalises(t *testing.T) {
	t.Parallel()
	in := validInquiry()
	in.LastName, in.FirstName, in.Source = sp("  Doe "), sp(" Jane "), sp("   ")
	in.GuestCount = ip(30)
	in.Metadata = json.RawMessage(`{ "a" : 1 }`)
	q, err := NewInquiry("inq_1", "org_1", in, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if q.LastName != "Doe" || *q.FirstName != "Jane" || q.Source != DefaultSource {
		t.Fatalf("not trimmed or defaulted: %+v", q)
	}
	if q.Adults == nil || *q.Adults != 30 || *q.GuestCount != 30 {
		t.Fatalf("guestCount not folded into adults: %+v", q)
	}
	if string(q.Metadata) != `{"a":1}` {
		t.Fatalf("metadata %s", q.Metadata)
	}
	in.Adults = ip(2)
	q, _ = NewInquiry("inq_1", "org_1", in, time.Now())
	if *q.Adults != 2 {
		t.Fatalf("adults given and guestCount overrode it: %d", *q.Adults)
	}
	if !q.WantsConfirmation() {
		t.Fatal("confirmation not wanted by default")
	}
	in.SendConfirmation = bp(false)
	q, _ = NewInquiry("inq_1", "org_1", in, time.Now())
	if q.WantsConfirmation() {
		t.Fatal("sendConfirmation false still wants an email")
	}
}

func TestConfirmationLocale(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"de": "de", "de-AT": "de", "NL": "nl", "pt_BR": "pt", "en-GB": "en", "fr": "en", "": "en", "xx-yy": "en",
	} {
		if got := ConfirmationLocale(sp(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
	if ConfirmationLocale(nil) != "en" {
		t.Error("no locale is not English")
	}
}

func TestConfirmationNamesPropertyDatesAndID(t *testing.T) {
	t.Parallel()
	in := validInquiry()
	in.CheckIn, in.CheckOut, in.Locale, in.FirstName = sp("2025-03-01"), sp("2025-06-01"), sp("de-DE"), sp("Jürgen")
	q, err := NewInquiry("inq_42", "org_1", in, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := NewConfirmation(q, "Canal Loft", "Demo Rentals")
	if c.Locale != "de" || !strings.Contains(c.Subject, "Canal Loft") || !strings.Contains(c.Subject, "für") {
		t.Fatalf("subject %q locale %s", c.Subject, c.Locale)
	}
	for _, want := range []string{"Canal Loft", "2025-03-01", "2025-06-01", "inq_42", "Jürgen Doe"} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, c.Body)
		}
	}
}
