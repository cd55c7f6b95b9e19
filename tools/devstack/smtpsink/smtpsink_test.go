package smtpsink

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, dir string) *Sink {
	t.Helper()
	s, err := Start(dir, "", "admin-secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// sendRaw sends msg as it is (net/smtp only dot-stuffs it and ends it with
// CRLF), with AUTH PLAIN as the services' mailers do.
func sendRaw(t *testing.T, addr, to, msg string) {
	t.Helper()
	auth := smtp.PlainAuth("", "user", "pass", "127.0.0.1")
	if err := smtp.SendMail(addr, auth, "no-reply@quarters.test", []string{to}, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func send(t *testing.T, addr, to, org, inquiry, subject, date string) {
	t.Helper()
	sendRaw(t, addr, to, "From: Quarters <no-reply@quarters.test>\r\n"+
		"To: "+to+"\r\n"+
		"Subject: "+subject+"\r\n"+
		"Date: "+date+"\r\n"+
		HeaderOrg+": "+org+"\r\n"+
		HeaderInquiry+": "+inquiry+"\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n\r\n"+
		"Thanks for your inquiry "+inquiry+".\r\n")
}

type email struct {
	To, Subject, Body, Locale, SentAt, InquiryID string
}

type listing struct{ Emails []email }

func list(t *testing.T, h http.Handler, org, token string) (int, listing, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/admin/v1/orgs/"+org+"/emails", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var l listing
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return rec.Code, l, rec.Header()
}

func only(t *testing.T, s *Sink, org string) email {
	t.Helper()
	code, l, _ := list(t, s.Handler(), org, "admin-secret")
	if code != 200 || len(l.Emails) != 1 {
		t.Fatalf("emails of %s: %d %+v, want one", org, code, l)
	}
	return l.Emails[0]
}

func TestReceivesAndListsPerOrgNewestFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Start(dir, "", "admin-secret")
	if err != nil {
		t.Fatal(err)
	}
	send(t, s.Addr, "guest@example.com", "org1", "inq1", "We received your inquiry", "Mon, 02 Mar 2026 10:00:00 +0100")
	send(t, s.Addr, "other@example.com", "org2", "inq2", "Other org", "Mon, 02 Mar 2026 10:00:01 +0000")
	send(t, s.Addr, "guest2@example.com", "org1", "inq3", "=?utf-8?q?Caf=C3=A9_inquiry?=", "Mon, 02 Mar 2026 11:00:00 +0000")

	code, l, hdr := list(t, s.Handler(), "org1", "admin-secret")
	if code != 200 || hdr.Get("Cache-Control") != "no-store" || len(l.Emails) != 2 {
		t.Fatalf("list org1: %d %+v", code, l)
	}
	first, second := l.Emails[0], l.Emails[1]
	if first.InquiryID != "inq3" || first.Subject != "Café inquiry" || first.To != "guest2@example.com" ||
		first.SentAt != "2026-03-02T11:00:00.000Z" || first.Body != "Thanks for your inquiry inq3.\n" {
		t.Fatalf("newest = %+v", first)
	}
	if second.InquiryID != "inq1" || second.SentAt != "2026-03-02T09:00:00.000Z" || second.Body != "Thanks for your inquiry inq1.\n" {
		t.Fatalf("oldest = %+v", second)
	}
	s.Stop()

	// Messages survive a restart, bodies included.
	s2 := start(t, dir)
	if got := only(t, s2, "org2"); got.Subject != "Other org" || got.Body != "Thanks for your inquiry inq2.\n" {
		t.Fatalf("after restart: %+v", got)
	}
	if _, l, _ := list(t, s2.Handler(), "org-without-mail", "admin-secret"); l.Emails == nil || len(l.Emails) != 0 {
		t.Fatalf("org without mail: %+v, want an empty list", l)
	}
	// And a message received after the restart lands next to them.
	send(t, s2.Addr, "guest3@example.com", "org1", "inq4", "Later", "Mon, 02 Mar 2026 12:00:00 +0000")
	if _, l, _ := list(t, s2.Handler(), "org1", "admin-secret"); len(l.Emails) != 3 || l.Emails[0].InquiryID != "inq4" {
		t.Fatalf("after restart and another message: %+v", l)
	}
}

// The body comes back exactly as sent: lines starting with dots (which SMTP
// stuffs and unstuffs), a line of nothing but a dot, lines at SMTP's length
// limit, and text beyond ASCII.
func TestBodyComesBackByteForByte(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())
	longest := strings.Repeat("ß", 499) // 998 bytes: the longest legal line
	lines := []string{
		"Grüße aus Zürich — your stay at Canal loft is confirmed. 東京 🏠",
		".leading dot stays",
		"..two dots stay two",
		".",
		"",
		longest,
		strings.Repeat("x", 997) + ".",
		"last line",
	}
	body := strings.Join(lines, "\r\n") + "\r\n"
	msg := "Subject: Byte for byte\r\n" +
		HeaderOrg + ": org_bytes\r\n" + HeaderInquiry + ": inq_bytes\r\n" +
		"Content-Language: de\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + body
	sendRaw(t, s.Addr, "guest@example.com", msg)

	got := only(t, s, "org_bytes")
	want := strings.ReplaceAll(body, "\r\n", "\n")
	if got.Body != want {
		t.Fatalf("body differs:\n got %q\nwant %q", got.Body, want)
	}
	if got.Subject != "Byte for byte" || got.Locale != "de" || got.InquiryID != "inq_bytes" || got.To != "guest@example.com" {
		t.Fatalf("email = %+v", got)
	}
	kept := s.Messages("org_bytes")
	if len(kept) != 1 {
		t.Fatalf("kept %d messages of org_bytes", len(kept))
	}
	raw, err := os.ReadFile(s.RawPath(kept[0].ID))
	if err != nil || string(raw) != msg {
		t.Fatalf("raw message differs (%v):\n got %q\nwant %q", err, raw, msg)
	}
}

// What the bookings service sends: an encoded subject, a quoted-printable
// body, the locale and the ids in headers.
func TestDecodesEncodedSubjectAndBody(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())
	msg := "From: Quarters <no-reply@quarters.test>\r\n" +
		"To: guest@example.com\r\n" +
		"Subject: =?utf-8?q?Best=C3=A4tigung_Ihrer_Anfrage_?= =?utf-8?b?w6Qg8J+PoA==?=\r\n" +
		"Date: Tue, 03 Mar 2026 08:30:00 +0000\r\n" +
		HeaderOrg + ": org_qp\r\n" + HeaderInquiry + ": inq_qp\r\n" +
		"Content-Language: de-CH\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Gr=C3=BC=C3=9Fe, wir haben Ihre Anfrage erhalten. Eine sehr lange Zeile, di=\r\n" +
		"e weich umbrochen ist.\r\n" +
		"=2Ezeile mit Punkt\r\n"
	sendRaw(t, s.Addr, "guest@example.com", msg)
	got := only(t, s, "org_qp")
	want := email{To: "guest@example.com", Subject: "Bestätigung Ihrer Anfrage ä 🏠",
		Body:   "Grüße, wir haben Ihre Anfrage erhalten. Eine sehr lange Zeile, die weich umbrochen ist.\n.zeile mit Punkt\n",
		Locale: "de-CH", SentAt: "2026-03-03T08:30:00.000Z", InquiryID: "inq_qp"}
	if got != want {
		t.Fatalf("email\n got %+v\nwant %+v", got, want)
	}

	// A multipart message shows its text/plain part, base64 decoded.
	msg = HeaderOrg + ": org_mp\r\nSubject: Multipart\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hallo</p>\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"SGFsbG8gV8O2cmxk\r\nCg==\r\n--b1--\r\n"
	sendRaw(t, s.Addr, "guest@example.com", msg)
	if got := only(t, s, "org_mp"); got.Body != "Hallo Wörld\n" || got.Subject != "Multipart" {
		t.Fatalf("multipart: %+v", got)
	}
}

// dialSMTP opens a session and gets as far as DATA.
func dialSMTP(t *testing.T, addr string) (net.Conn, *textproto.Conn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(time.Minute))
	c := textproto.NewConn(nc)
	expect := func(code int) {
		t.Helper()
		if _, _, err := c.ReadResponse(code); err != nil {
			t.Fatalf("want %d: %v", code, err)
		}
	}
	expect(220)
	for _, cmd := range []struct {
		line string
		code int
	}{{"EHLO test", 250}, {"MAIL FROM:<a@quarters.test>", 250}, {"RCPT TO:<b@example.com>", 250}, {"DATA", 354}} {
		if err := c.PrintfLine("%s", cmd.line); err != nil {
			t.Fatal(err)
		}
		expect(cmd.code)
	}
	return nc, c
}

// A line over the limit is refused without reading it to its end, so a
// client sending an endless line cannot make the sink hold it; the sink
// keeps serving other sessions and stores nothing of the refused message.
func TestRefusesOverlongLine(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())

	// One byte over the limit: 999 characters and CRLF.
	_, c := dialSMTP(t, s.Addr)
	fmt.Fprintf(c.W, "%s: org_long\r\n\r\n%s\r\n.\r\n", HeaderOrg, strings.Repeat("y", MaxLineLength-1))
	c.W.Flush()
	code, msg, err := c.ReadResponse(250)
	if err == nil || code/100 != 5 || !strings.Contains(msg, "Line longer than 1000 bytes") {
		t.Fatalf("999-character line: %d %q %v, want a 5xx refusal", code, msg, err)
	}

	// A line that never ends: the sink answers and hangs up long before the
	// client is through, and the session ends.
	nc, c := dialSMTP(t, s.Addr)
	const endless = 256 << 20
	written := make(chan int64, 1)
	go func() {
		chunk := []byte(strings.Repeat("z", 64<<10))
		var n int64
		for n < endless {
			m, err := nc.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}()
	code, _, err = c.ReadResponse(250)
	if code/100 != 5 {
		t.Fatalf("endless line: %d %v, want a 5xx refusal", code, err)
	}
	r := bufio.NewReader(nc)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			if err != io.EOF {
				t.Logf("end of session: %v", err)
			}
			break
		}
	}
	if n := <-written; n >= endless {
		t.Fatalf("the sink read all %d bytes of an endless line", n)
	}

	if _, l, _ := list(t, s.Handler(), "org_long", "admin-secret"); len(l.Emails) != 0 {
		t.Fatalf("refused messages were stored: %+v", l)
	}
	send(t, s.Addr, "guest@example.com", "org_after", "inq_after", "Still serving", "Mon, 02 Mar 2026 10:00:00 +0000")
	if got := only(t, s, "org_after"); got.Subject != "Still serving" {
		t.Fatalf("after refusals: %+v", got)
	}
}

func TestRefusesTooLargeMessage(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())
	_, c := dialSMTP(t, s.Addr)
	fmt.Fprintf(c.W, "%s: org_big\r\n\r\n", HeaderOrg)
	line := strings.Repeat("b", 998) + "\r\n"
	for n := 0; n <= MaxMessageBytes; n += len(line) {
		c.W.WriteString(line)
	}
	c.W.WriteString(".\r\n")
	if err := c.W.Flush(); err != nil {
		t.Fatal(err)
	}
	if code, msg, err := c.ReadResponse(250); code != 552 {
		t.Fatalf("message over %d bytes: %d %q %v, want 552", MaxMessageBytes, code, msg, err)
	}
	// The session is still in step: a small message on it is accepted.
	for _, cmd := range []struct {
		line string
		code int
	}{{"MAIL FROM:<a@quarters.test>", 250}, {"RCPT TO:<b@example.com>", 250}, {"DATA", 354},
		{HeaderOrg + ": org_big\r\nSubject: small\r\n\r\nsmall\r\n.", 250}} {
		c.PrintfLine("%s", cmd.line)
		if code, msg, err := c.ReadResponse(cmd.code); err != nil {
			t.Fatalf("%s: %d %q %v", cmd.line, code, msg, err)
		}
	}
	if got := only(t, s, "org_big"); got.Subject != "small" || got.Body != "small\n" {
		t.Fatalf("emails of org_big: %+v", got)
	}
}

func TestRequiresAdminToken(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())
	send(t, s.Addr, "guest@example.com", "o1", "inq1", "Secret", "Mon, 02 Mar 2026 10:00:00 +0000")
	for _, token := range []string{"", "wrong"} {
		req := httptest.NewRequest(http.MethodGet, "/admin/v1/orgs/o1/emails", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 401 || !strings.Contains(rec.Body.String(), `"error":"unauthorized"`) ||
			strings.Contains(rec.Body.String(), "Secret") || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("token %q: %d %s", token, rec.Code, rec.Body)
		}
	}
	for _, p := range []string{"/admin/v1/orgs/o1/emails/x", "/admin/v1/orgs//emails"} {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Header.Set("Authorization", "Bearer admin-secret")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"error":"not_found"`) {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
	}
}

// The single JSON file of earlier versions is read and converted.
func TestReadsMessagesOfEarlierVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := `[{"to":"g@example.com","subject":"Old","sentAt":"2026-03-01T10:00:00Z","orgId":"org_old","inquiryId":"inq_old","receivedAt":"2026-03-01T10:00:00Z"}]`
	if err := os.WriteFile(dir+"/messages.json", []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, dir)
	if got := only(t, s, "org_old"); got.Subject != "Old" || got.InquiryID != "inq_old" {
		t.Fatalf("old message: %+v", got)
	}
	s.Stop()
	if _, err := os.Stat(dir + "/messages.json"); !os.IsNotExist(err) {
		t.Fatalf("old file kept: %v", err)
	}
	if got := only(t, start(t, dir), "org_old"); got.Subject != "Old" {
		t.Fatalf("old message after conversion: %+v", got)
	}
}
