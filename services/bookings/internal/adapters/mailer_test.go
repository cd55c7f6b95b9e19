package adapters

import (
	"bytes"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"quarters.dev/services/bookings/internal/domain"
)

func TestComposeEncodesAndHeaders(t *testing.T) {
	t.Parallel()
	from, _ := mail.ParseAddress("Quarters <no-reply@quarters.invalid>")
	c := domain.Confirmation{OrgID: "org_1", InquiryID: "inq_1", To: "jurgen@example.com", ToName: "Jürgen Müller",
		Locale: "de", Subject: "Wir haben Ihre Anfrage für Kanal-Loft erhalten", Body: "Guten Tag Jürgen,\nZeitraum: 2025-03-01 bis 2025-06-01\n" + strings.Repeat("lang ", 40)}
	raw, err := Compose(from, c, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	if h.Get("X-Quarters-Org") != "org_1" || h.Get("X-Quarters-Inquiry") != "inq_1" || h.Get("Content-Language") != "de" ||
		h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("Content-Transfer-Encoding") != "quoted-printable" {
		t.Fatalf("headers %v", h)
	}
	if s := h.Get("Subject"); !strings.HasPrefix(s, "=?utf-8?q?") {
		t.Fatalf("non-ASCII subject not RFC 2047 encoded: %q", s)
	}
	if s, _ := new(mime.WordDecoder).DecodeHeader(h.Get("Subject")); s != c.Subject {
		t.Fatalf("subject decodes to %q", s)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != c.To || to[0].Name != c.ToName {
		t.Fatalf("To %v %v", to, err)
	}
	body, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if !strings.Contains(string(body), "Guten Tag Jürgen,\r\nZeitraum: 2025-03-01 bis 2025-06-01") {
		t.Fatalf("body %q", body)
	}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 {
			t.Fatalf("line longer than SMTP allows: %d", len(line))
		}
	}
}

// Long non-ASCII names and subjects are folded: SMTP servers refuse lines
// over 1 000 bytes, and an encoded name of 100 characters is longer.
func TestComposeFoldsLongHeaders(t *testing.T) {
	t.Parallel()
	from, _ := mail.ParseAddress("Quarters <no-reply@quarters.invalid>")
	for _, name := range []string{strings.Repeat("é", 100), strings.Repeat("😀", 100), strings.Repeat("Müller ", 14) + "Ende",
		strings.Repeat("a", 100)} {
		c := domain.Confirmation{OrgID: "org_1", InquiryID: "inq_1", To: "guest@example.com", ToName: name, Locale: "en",
			Subject: "We received your inquiry for " + strings.Repeat("Ångström ", 20), Body: "Hello"}
		raw, err := Compose(from, c, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
		for _, line := range strings.Split(head, "\r\n") {
			if len(line) > 78 && strings.Contains(strings.TrimSpace(line), " ") {
				t.Errorf("name %.10q: header line of %d characters left unfolded: %q", name, len(line), line)
			}
			if len(line) > 998 {
				t.Errorf("name %.10q: line of %d bytes", name, len(line))
			}
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		to, err := msg.Header.AddressList("To")
		if err != nil || len(to) != 1 || to[0].Name != name || to[0].Address != c.To {
			t.Errorf("To of %.10q reads back as %v, %v", name, to, err)
		}
		if s, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); s != c.Subject {
			t.Errorf("subject reads back as %q", s)
		}
	}
}

func TestComposeRefusesLineBreaksInHeaders(t *testing.T) {
	t.Parallel()
	from, _ := mail.ParseAddress("no-reply@quarters.invalid")
	for _, c := range []domain.Confirmation{
		{OrgID: "org_1", InquiryID: "inq_1", To: "a@example.com", Locale: "en", Subject: "Hi\r\nBcc: evil@example.com"},
		{OrgID: "org_1\nX-Evil: 1", InquiryID: "inq_1", To: "a@example.com", Locale: "en", Subject: "Hi"},
	} {
		raw, err := Compose(from, c, time.Now())
		if err == nil && strings.Contains(string(raw), "\r\nBcc:") {
			t.Fatalf("header injected:\n%s", raw)
		}
		if err == nil {
			if m, _ := mail.ReadMessage(bytes.NewReader(raw)); m != nil && (m.Header.Get("Bcc") != "" || m.Header.Get("X-Evil") != "") {
				t.Fatalf("header injected:\n%s", raw)
			}
		}
	}
	// A name with a line break never reaches Compose (the form refuses
	// it), but even so the To header stays one line.
	raw, err := Compose(from, domain.Confirmation{OrgID: "o", InquiryID: "i", To: "a@example.com", ToName: "Eve\r\nBcc: x@y.z", Locale: "en", Subject: "s"}, time.Now())
	if err == nil {
		m, _ := mail.ReadMessage(bytes.NewReader(raw))
		if m == nil || m.Header.Get("Bcc") != "" {
			t.Fatalf("header injected through the name:\n%s", raw)
		}
	}
}
