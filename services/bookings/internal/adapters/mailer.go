package adapters

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"

	"quarters.dev/services/bookings/internal/domain"
)

// SMTP sends mail through one relay, a new session per message.
type SMTP struct {
	addr     string
	host     string
	auth     smtp.Auth
	from     *mail.Address
	timeout  time.Duration
	implicit bool // smtps://: TLS from the first byte
	hello    string
}

// NewSMTP reads an smtp:// or smtps:// URL (user and password optional).
func NewSMTP(rawURL, from string, timeout time.Duration) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
		return nil, fmt.Errorf("QUARTERS_SMTP_URL must look like smtp://host:port or smtps://user:password@host:465")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "25"
		if u.Scheme == "smtps" {
			port = "465"
		}
	}
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("QUARTERS_SMTP_FROM is not an address: %w", err)
	}
	s := &SMTP{addr: net.JoinHostPort(host, port), host: host, from: fromAddr, timeout: timeout,
		implicit: u.Scheme == "smtps", hello: "localhost"}
	if u.User != nil {
		pw, _ := u.User.Password()
		s.auth = smtp.PlainAuth("", u.User.Username(), pw, host)
	}
	return s, nil
}

// Send delivers one confirmation email.
func (s *SMTP) Send(ctx context.Context, c domain.Confirmation) error {
	msg, err := Compose(s.from, c, time.Now())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dialer := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	if s.implicit {
		conn, err = tls.DialWithDialer(dialer, "tcp", s.addr, &tls.Config{ServerName: s.host})
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", s.addr)
	}
	if err != nil {
		return fmt.Errorf("connect to SMTP %s: %w", s.addr, err)
	}
	_ = conn.SetDeadline(deadline)
	cl, err := smtp.NewClient(conn, s.host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("SMTP greeting from %s: %w", s.addr, err)
	}
	defer cl.Close()
	if err := cl.Hello(s.hello); err != nil {
		return fmt.Errorf("SMTP EHLO: %w", err)
	}
	if ok, _ := cl.Extension("STARTTLS"); ok && !s.implicit {
		if err := cl.StartTLS(&tls.Config{ServerName: s.host}); err != nil {
			return fmt.Errorf("SMTP STARTTLS: %w", err)
		}
	}
	if s.auth != nil {
		if err := cl.Auth(s.auth); err != nil {
			return fmt.Errorf("SMTP AUTH: %w", err)
		}
	}
	if err := cl.Mail(s.from.Address); err != nil {
		return fmt.Errorf("SMTP MAIL FROM: %w", err)
	}
	if err := cl.Rcpt(c.To); err != nil {
		return fmt.Errorf("SMTP RCPT TO: %w", err)
	}
	w, err := cl.Data()
	if err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	return cl.Quit()
}

// Compose renders the message: UTF-8 plain text, quoted-printable body,
// RFC 2047 subject and names where they are not ASCII. Every header value is
// checked for line breaks, so no input can add a header.
func Compose(from *mail.Address, c domain.Confirmation, now time.Time) ([]byte, error) {
	to := (&mail.Address{Name: c.ToName, Address: c.To}).String()
	headers := [][2]string{
		{"From", from.String()},
		{"To", to},
		{"Subject", mime.QEncoding.Encode("utf-8", c.Subject)},
		{"Date", now.UTC().Format(time.RFC1123Z)},
		{"Message-ID", "<" + c.InquiryID + "." + fmt.Sprint(now.UnixNano()) + "@" + domainOf(from.Address) + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Transfer-Encoding", "quoted-printable"},
		{"Content-Language", c.Locale},
		{"X-Quarters-Org", c.OrgID},
		{"X-Quarters-Inquiry", c.InquiryID},
	}
	var b bytes.Buffer
	for _, h := range headers {
		if strings.ContainsAny(h[1], "\r\n") {
			return nil, fmt.Errorf("mail header %s would contain a line break", h[0])
		}
		b.WriteString(fold(h[0]+": "+h[1]) + "\r\n")
	}
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(strings.ReplaceAll(c.Body, "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fold breaks a header line at spaces so that its lines stay within 78
// characters where a space allows (RFC 5322, 2.2.3): an encoded name or
// subject of 100 non-ASCII characters is several hundred bytes, and SMTP
// servers refuse lines over 1 000. RFC 2047 encoded words hold no spaces,
// so each stays whole; unfolding (dropping the CRLFs) gives the line back.
func fold(line string) string {
	if len(line) <= 78 {
		return line
	}
	var b strings.Builder
	n := 0
	for i, word := range strings.Split(line, " ") {
		if i > 0 {
			if n > 1 && n+1+len(word) > 78 {
				b.WriteString("\r\n ")
				n = 1
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "quarters.invalid"
}
