package smtpsink

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strings"
	"testing"
)

func send(t *testing.T, addr, to, org, inquiry, subject, date string) {
	t.Helper()
	msg := "From: Quarters <no-reply@quarters.test>\r\n" +
		"To: " + to + "\r\n" +
		"Subject: " + subject + "\r\n" +
		"Date: " + date + "\r\n" +
		HeaderOrg + ": " + org + "\r\n" +
		HeaderInquiry + ": " + inquiry + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n\r\n" +
		"Thanks for your inquiry.\r\n.leading dot stays\r\n"
	auth := smtp.PlainAuth("", "user", "pass", "127.0.0.1")
	if err := smtp.SendMail(addr, auth, "no-reply@quarters.test", []string{to}, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

type listing struct {
	Emails []struct {
		To, Subject, SentAt, InquiryID string
	}
}

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
	if first.InquiryID != "inq3" || first.Subject != "Café inquiry" || first.To != "guest2@example.com" || first.SentAt != "2026-03-02T11:00:00.000Z" {
		t.Fatalf("newest = %+v", first)
	}
	if second.InquiryID != "inq1" || second.SentAt != "2026-03-02T09:00:00.000Z" {
		t.Fatalf("oldest = %+v", second)
	}
	s.Stop()

	// Messages survive a restart.
	s2, err := Start(dir, "", "admin-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	if _, l, _ := list(t, s2.Handler(), "org2", "admin-secret"); len(l.Emails) != 1 || l.Emails[0].Subject != "Other org" {
		t.Fatalf("after restart: %+v", l)
	}
	if _, l, _ := list(t, s2.Handler(), "org-without-mail", "admin-secret"); l.Emails == nil || len(l.Emails) != 0 {
		t.Fatalf("org without mail: %+v, want an empty list", l)
	}
}

func TestRequiresAdminToken(t *testing.T) {
	t.Parallel()
	s, err := Start(t.TempDir(), "", "admin-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for _, token := range []string{"", "wrong"} {
		req := httptest.NewRequest(http.MethodGet, "/admin/v1/orgs/o1/emails", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 401 || !strings.Contains(rec.Body.String(), `"error":"unauthorized"`) || rec.Header().Get("Cache-Control") != "no-store" {
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
