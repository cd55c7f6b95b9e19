package service_test

import (
	"bytes"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func inquiryBody(property, extra string) string {
	b := `{"propertyId":"` + property + `","lastName":"Doe","email":"jane@example.com"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func TestInquiries(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	other := h.org(500)
	lst := h.listing(org, "Canal Loft", 180000)
	foreign := h.listing(other, "Elsewhere", 100000)
	gone := h.listing(org, "Gone", 100000)
	tok := h.token(org)
	h.unpublish(org, gone)
	// Listings travel on their own keys, so their events may be applied in
	// any order: the cases below need all three applied.
	h.projected(foreign, true)
	h.projected(gone, false)

	var r resp
	h.eventually("listing published", func() bool {
		r = h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"firstName":"  Jürgen ","checkIn":"2025-03-01","checkOut":"2025-06-01",
			"guestCount":3,"locale":"de-DE","metadata":{"utm":"x"},"message":"Hallo\nzusammen","form":"contact"`))
		return r.status == 201
	})
	first, _ := r.body["id"].(string)
	if first == "" || len(r.body) != 1 {
		t.Fatalf("201 body: %s", r.raw)
	}

	// Field errors name the field; unknown, foreign and unpublished
	// listings are 400.
	for body, field := range map[string]string{
		inquiryBody(lst, `"adults":21`):                                          "adults",
		inquiryBody(lst, `"adults":"2"`):                                         "adults",
		inquiryBody(lst, `"checkIn":"2025-03-02","checkOut":"2025-03-01"`):       "checkOut",
		inquiryBody(lst, `"metadata":"x"`):                                       "metadata",
		inquiryBody(lst, `"metadata":{"k":"`+strings.Repeat("x", 10241)+`"}`):    "metadata",
		inquiryBody(lst, `"firstName":"Eve\r\nBcc: x@example.com"`):              "firstName",
		inquiryBody(lst, `"pets":"yes"`):                                         "pets",
		`{"propertyId":"` + lst + `","email":"jane@example.com"}`:                "lastName",
		`{"propertyId":"` + lst + `","lastName":"Doe","email":"not-an-address"}`: "email",
		inquiryBody("lst_unknown", ""):                                           "propertyId",
		inquiryBody(foreign, ""):                                                 "propertyId",
		inquiryBody(gone, ""):                                                    "propertyId",
		`{"lastName":"Doe","email":"jane@example.com"}`:                          "propertyId",
		`[]`: "object",
	} {
		r := h.public(tok, "POST", "/inquiries", body)
		if r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(r.body["message"].(string), field) {
			t.Errorf("%.80s: %d %s, want 400 naming %s", body, r.status, r.raw, field)
		}
	}

	// A second submission, without a confirmation email.
	r = h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"sendConfirmation":false`))
	if r.status != 201 {
		t.Fatalf("second: %d %s", r.status, r.raw)
	}
	second := r.body["id"].(string)

	// The operator lists them newest first, with every stored field.
	r = h.admin("GET", "/orgs/"+org+"/inquiries", "")
	list, _ := r.body["inquiries"].([]any)
	if r.status != 200 || len(list) != 2 || obj(list[0])["id"] != second || obj(list[1])["id"] != first {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	q := obj(list[1])
	if q["firstName"] != "Jürgen" || q["adults"] != 3.0 || q["guestCount"] != 3.0 || q["source"] != "website" ||
		obj(q["metadata"])["utm"] != "x" || q["message"] != "Hallo\nzusammen" || q["checkIn"] != "2025-03-01" || q["reservationId"] != nil {
		t.Fatalf("stored inquiry: %v", q)
	}

	// The guest got one email, in German, naming the property, the dates
	// and the inquiry; the other inquiry asked for none.
	h.eventually("confirmation email", func() bool { return len(h.smtp.messages()) >= 1 })
	msg, err := mail.ReadMessage(strings.NewReader(h.smtp.messages()[0]))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	body, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if msg.Header.Get("X-Quarters-Org") != org || msg.Header.Get("X-Quarters-Inquiry") != first ||
		msg.Header.Get("Content-Language") != "de" || !strings.Contains(subject, "Canal Loft") {
		t.Fatalf("email headers: %v (subject %q)", msg.Header, subject)
	}
	for _, want := range []string{"Canal Loft", "2025-03-01", "2025-06-01", first, "Jürgen Doe"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("email body lacks %q:\n%s", want, body)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(h.smtp.messages()); n != 1 {
		t.Fatalf("%d emails, want 1 (sendConfirmation false sends none)", n)
	}

	// An inquiry never blocks a day: the same dates can be booked.
	if r := h.admin("POST", "/orgs/"+org+"/reservations", `{"propertyId":"`+lst+`","status":"confirmed","checkIn":"2025-03-01","checkOut":"2025-04-01"}`); r.status != 201 {
		t.Fatalf("booking over an inquiry's dates: %d %s", r.status, r.raw)
	}

	// Conversion: once.
	r = h.admin("POST", "/orgs/"+org+"/inquiries/"+first+"/convert", `{"checkIn":"2025-04-01"}`)
	res := obj(r.body["reservation"])
	if r.status != 201 || res["inquiryId"] != first || res["status"] != "inquiry" || res["checkIn"] != "2025-04-01" ||
		res["checkOut"] != "2025-06-01" || res["adults"] != 3.0 || obj(res["guest"])["name"] != "Jürgen Doe" || res["inquiredAt"] == nil ||
		obj(res["pricing"])["rentCents"] != 180000.0 {
		t.Fatalf("convert: %d %s", r.status, r.raw)
	}
	if id, _ := res["id"].(string); strings.Contains(id, strings.TrimPrefix(first, "inq_")) {
		t.Errorf("reservation id %s shows the inquiry id %s: ids are opaque", id, first)
	}
	if r := h.admin("POST", "/orgs/"+org+"/inquiries/"+first+"/convert", ""); r.status != 409 || r.body["error"] != "conflict" {
		t.Fatalf("second convert: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/"+org+"/inquiries/inq_nope/convert", ""); r.status != 404 {
		t.Fatalf("unknown inquiry: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/"+org+"/inquiries/"+second+"/convert", `{"status":"reserved"}`); r.status != 400 || !strings.Contains(r.raw, "checkIn") {
		t.Fatalf("convert without dates: %d %s", r.status, r.raw)
	}
	r = h.admin("GET", "/orgs/"+org+"/inquiries", "")
	if q := obj(r.body["inquiries"].([]any)[1]); q["reservationId"] != res["id"] || q["convertedAt"] == nil {
		t.Fatalf("converted inquiry: %v", q)
	}
	if r := h.admin("GET", "/orgs/org_unknown/inquiries", ""); r.status != 404 {
		t.Fatalf("unknown org: %d %s", r.status, r.raw)
	}
}

func TestInquiryAllowance(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(5)
	lst := h.listing(org, "Small", 100000)
	tok := h.token(org)
	h.eventually("listing published", func() bool {
		return h.admin("GET", "/orgs/"+org+"/inquiries", "").status == 200 &&
			h.public(tok, "POST", "/inquiries", inquiryBody("lst_none", "")).status == 400
	})
	h.eventually("listing known", func() bool {
		r := h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"adults":99`))
		return strings.Contains(r.raw, "adults")
	})

	const n = 8
	codes := make([]int, n)
	retry := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"sendConfirmation":false`))
			codes[i], retry[i] = r.status, r.header.Get("Retry-After")
			if r.status == 429 && r.body["error"] != "rate_limited" {
				t.Errorf("429 body: %s", r.raw)
			}
		})
	}
	wg.Wait()
	created, limited := 0, 0
	for i, c := range codes {
		switch c {
		case 201:
			created++
		case 429:
			limited++
			if s, err := strconv.Atoi(retry[i]); err != nil || s < 1 || s > 86400 {
				t.Errorf("Retry-After %q", retry[i])
			}
		default:
			t.Errorf("status %d", c)
		}
	}
	if created != 5 || limited != 3 {
		t.Fatalf("%d created, %d limited; want 5 and 3 (%v)", created, limited, codes)
	}
	// A refused submission stored nothing.
	r := h.admin("GET", "/orgs/"+org+"/inquiries", "")
	if got := len(r.body["inquiries"].([]any)); got != 5 {
		t.Fatalf("%d stored inquiries, want 5", got)
	}
	if v := testutil.ToFloat64(must(h.reg, "quarters_bookings_inquiry_quota_rejections_total")); v != 3 {
		t.Fatalf("rejections metric %v, want 3", v)
	}
	// A higher limit applies from the next submission.
	h.putOrg(org, 6)
	h.eventually("limit raised", func() bool {
		return h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"sendConfirmation":false`)).status == 201
	})
	if r := h.public(tok, "POST", "/inquiries", inquiryBody(lst, "")); r.status != 429 {
		t.Fatalf("seventh: %d %s", r.status, r.raw)
	}
}

func TestConfirmationEmailSurvivesAnSMTPOutage(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	lst := h.listing(org, "Outage Flat", 100000)
	tok := h.token(org)
	h.smtp.setRefuse(true)
	var r resp
	h.eventually("listing published", func() bool {
		start := time.Now()
		r = h.public(tok, "POST", "/inquiries", inquiryBody(lst, `"locale":"fr"`))
		if r.status == 201 && time.Since(start) > 5*time.Second {
			t.Errorf("POST took %s while SMTP refused", time.Since(start))
		}
		return r.status == 201
	})
	id := r.body["id"].(string)
	time.Sleep(time.Second)
	if n := len(h.smtp.messages()); n != 0 {
		t.Fatalf("%d emails while SMTP refused", n)
	}
	h.smtp.setRefuse(false)
	h.eventually("email after the outage", func() bool { return len(h.smtp.messages()) == 1 })
	msg, _ := mail.ReadMessage(strings.NewReader(h.smtp.messages()[0]))
	if msg.Header.Get("X-Quarters-Inquiry") != id || msg.Header.Get("Content-Language") != "en" {
		t.Fatalf("email: %v", msg.Header)
	}
}

func TestInquiryIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	lst := h.listing(org, "Once", 100000)
	tok := h.token(org)
	post := func(key, body string) resp {
		return h.do("POST", "/api/v1/inquiries", body, "Authorization", "Bearer "+tok, "Idempotency-Key", key)
	}
	body := inquiryBody(lst, `"sendConfirmation":false`)
	var first resp
	h.eventually("listing published", func() bool {
		first = post("k-1", body)
		return first.status == 201
	})
	id := first.body["id"]
	if r := post("k-1", body); r.status != 201 || r.body["id"] != id {
		t.Fatalf("repeat: %d %s, want 201 with %v", r.status, r.raw, id)
	}
	if r := post("k-1", inquiryBody(lst, `"adults":2`)); r.status != 409 || r.body["error"] != "conflict" {
		t.Fatalf("same key, other body: %d %s", r.status, r.raw)
	}
	// A failed first request frees its key.
	if r := post("k-2", inquiryBody("lst_unknown", "")); r.status != 400 {
		t.Fatalf("unknown listing: %d %s", r.status, r.raw)
	}
	if r := post("k-2", body); r.status != 201 || r.body["id"] == id {
		t.Fatalf("key after a failure: %d %s", r.status, r.raw)
	}
	if r := post(strings.Repeat("x", 256), body); r.status != 400 || !strings.Contains(r.raw, "Idempotency-Key") {
		t.Fatalf("long key: %d %s", r.status, r.raw)
	}
	// Without the header every POST creates another inquiry.
	for range 2 {
		if r := h.public(tok, "POST", "/inquiries", body); r.status != 201 {
			t.Fatalf("plain POST: %d %s", r.status, r.raw)
		}
	}
	if n := len(h.admin("GET", "/orgs/"+org+"/inquiries", "").body["inquiries"].([]any)); n != 4 {
		t.Fatalf("%d inquiries stored, want 4", n)
	}
}
