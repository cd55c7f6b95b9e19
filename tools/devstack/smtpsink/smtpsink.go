// Package smtpsink is the dev stack's mail server: it accepts every message
// sent to it over SMTP (spoken by github.com/emersion/go-smtp), keeps each
// message's raw bytes and what a developer wants to check (recipient, subject,
// readable body, locale, when, which org and inquiry it was about), and lists
// them per org through the dev-only admin route
// GET /admin/v1/orgs/{orgId}/emails.
//
// On disk, under the sink's directory: messages.jsonl, one JSON line per
// message (appended as it arrives), and raw/<id>.eml, the message exactly as
// it was received (after SMTP's dot-unstuffing).
package smtpsink

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/google/uuid"

	"quarters.dev/pkg/jsonresp"
)

// Message is what the sink keeps of one received email.
type Message struct {
	ID        string `json:"id"`
	To        string `json:"to"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
	Locale    string `json:"locale"`
	OrgID     string `json:"orgId"`
	InquiryID string `json:"inquiryId"`
	// SentAt is the Date header, or the arrival time without one.
	SentAt     time.Time `json:"sentAt"`
	ReceivedAt time.Time `json:"receivedAt"`
	// Problem says why the body could not be decoded, if it could not.
	Problem string `json:"problem,omitempty"`
}

// Headers the bookings service sets on the mail it sends.
const (
	HeaderOrg     = "X-Quarters-Org"
	HeaderInquiry = "X-Quarters-Inquiry"
)

const (
	// MaxMessageBytes bounds one message (DATA section); larger ones are
	// refused with 552 and never held in memory.
	MaxMessageBytes = 30 << 20
	// MaxLineLength is RFC 5321's limit on a line, CRLF included; a longer
	// line is refused and ends the session.
	MaxLineLength = 1000
	// maxKept bounds the messages kept; the oldest go first.
	maxKept        = 10000
	commandTimeout = 5 * time.Minute
	indexFile      = "messages.jsonl"
	legacyFile     = "messages.json"
)

// Sink is a running SMTP sink.
type Sink struct {
	// Addr is the SMTP listen address ("127.0.0.1:port").
	Addr string

	dir        string
	adminToken []byte
	// OrgExists, when set, tells whether an organisation exists, so that
	// the emails of an unknown one answer 404 like every admin route under
	// /orgs/{orgId}.
	OrgExists func(ctx context.Context, orgID string) (bool, error)
	server    *smtp.Server
	listener  net.Listener
	served    chan struct{}
	inflight  sync.WaitGroup
	stopOnce  sync.Once

	mu       sync.Mutex
	messages []Message
	lines    int // lines in the index file, to know when to compact it
}

// Start listens on addr ("127.0.0.1:0" for a free port) and keeps messages
// under dir, loading the ones kept by an earlier run.
func Start(dir, addr, adminToken string) (*Sink, error) {
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		return nil, fmt.Errorf("create SMTP sink dir: %w", err)
	}
	s := &Sink{dir: dir, adminToken: []byte(adminToken), served: make(chan struct{})}
	if err := s.load(); err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SMTP sink listen: %w", err)
	}
	s.Addr = l.Addr().String()
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{sink: s}, nil }))
	srv.Domain = "quarters-dev"
	srv.MaxMessageBytes = MaxMessageBytes
	srv.MaxLineLength = MaxLineLength
	srv.MaxRecipients = 100
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = true
	srv.ReadTimeout = commandTimeout
	srv.WriteTimeout = commandTimeout
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.server, s.listener = srv, l
	go func() {
		defer close(s.served)
		_ = srv.Serve(l)
	}()
	return s, nil
}

// Stop closes the listener and every open session, and waits for messages
// being stored. It is safe to call more than once.
func (s *Sink) Stop() {
	s.stopOnce.Do(func() {
		_ = s.server.Close()
		// Close misses a listener that Serve has not registered yet.
		_ = s.listener.Close()
		<-s.served
		s.inflight.Wait()
	})
}

// Messages returns the messages about orgID, newest first.
func (s *Sink) Messages(orgID string) []Message {
	s.mu.Lock()
	out := []Message{}
	for _, m := range s.messages {
		if m.OrgID == orgID {
			out = append(out, m)
		}
	}
	s.mu.Unlock()
	// Messages are kept in arrival order; reversing and then a stable sort
	// keeps the later arrival first among equal send times.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SentAt.After(out[j].SentAt) })
	return out
}

// RawPath is where the raw bytes of message id are kept.
func (s *Sink) RawPath(id string) string {
	return filepath.Join(s.dir, "raw", id+".eml")
}

// session is one SMTP session; go-smtp calls it per command.
type session struct {
	sink  *Sink
	rcpts []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

// Auth accepts any credentials: the sink is a local development tool.
func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(string, string, string) error { return nil }), nil
}

func (ss *session) Mail(string, *smtp.MailOptions) error { ss.rcpts = ss.rcpts[:0]; return nil }

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	ss.sink.inflight.Add(1)
	defer ss.sink.inflight.Done()
	raw, err := io.ReadAll(r)
	if err != nil {
		if errors.Is(err, smtp.ErrTooLongLine) {
			return &smtp.SMTPError{Code: 500, EnhancedCode: smtp.EnhancedCode{5, 5, 2},
				Message: fmt.Sprintf("Line longer than %d bytes (CRLF included)", MaxLineLength)}
		}
		return err // go-smtp's own errors (552 too large) pass through
	}
	if err := ss.sink.store(ss.rcpts, raw); err != nil {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: err.Error()}
	}
	return nil
}

func (ss *session) Reset()        { ss.rcpts = ss.rcpts[:0] }
func (ss *session) Logout() error { return nil }

// store keeps one received message.
func (s *Sink) store(rcpts []string, raw []byte) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	m := decode(raw)
	m.ID = uuid.NewString()
	m.To = strings.Join(rcpts, ", ")
	m.ReceivedAt = now
	if m.SentAt.IsZero() {
		m.SentAt = now
	}
	if err := os.WriteFile(s.RawPath(m.ID), raw, 0o644); err != nil {
		return fmt.Errorf("save message: %w", err)
	}
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.append(append(line, '\n')); err != nil {
		os.Remove(s.RawPath(m.ID))
		return err
	}
	s.messages = append(s.messages, m)
	if len(s.messages) > maxKept {
		for _, old := range s.messages[:len(s.messages)-maxKept] {
			os.Remove(s.RawPath(old.ID))
		}
		s.messages = append([]Message(nil), s.messages[len(s.messages)-maxKept:]...)
	}
	if s.lines > 2*maxKept {
		return s.compact()
	}
	return nil
}

// append adds one line to the index file; called with s.mu held.
func (s *Sink) append(line []byte) error {
	f, err := os.OpenFile(filepath.Join(s.dir, indexFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("save message: %w", err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save message: %w", err)
	}
	s.lines++
	return nil
}

// compact rewrites the index with the kept messages only; called with s.mu
// held.
func (s *Sink) compact() error {
	var b bytes.Buffer
	for _, m := range s.messages {
		line, err := json.Marshal(m)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(s.dir, indexFile)
	if err := os.WriteFile(file+".tmp", b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("save messages: %w", err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return fmt.Errorf("save messages: %w", err)
	}
	s.lines = len(s.messages)
	return nil
}

// load reads the index kept by an earlier run; a torn last line (a crash
// mid-append) is skipped. The single JSON file of earlier versions is
// converted.
func (s *Sink) load() error {
	f, err := os.Open(filepath.Join(s.dir, indexFile))
	switch {
	case err == nil:
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 2*MaxMessageBytes)
		for sc.Scan() {
			s.lines++
			var m Message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.messages = append(s.messages, m)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read SMTP sink messages: %w", err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read SMTP sink messages: %w", err)
	}
	legacy := filepath.Join(s.dir, legacyFile)
	if b, err := os.ReadFile(legacy); err == nil {
		var old []Message
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("read %s: %w", legacy, err)
		}
		s.messages = append(old, s.messages...)
		if err := s.compact(); err != nil {
			return err
		}
		return os.Remove(legacy)
	}
	if len(s.messages) > maxKept {
		s.messages = s.messages[len(s.messages)-maxKept:]
	}
	return nil
}

// Handler serves GET /admin/v1/orgs/{orgId}/emails behind the admin token.
func (s *Sink) Handler() http.Handler {
	return http.HandlerFunc(s.serveEmails)
}

type emailJSON struct {
	To        string `json:"to"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
	Locale    string `json:"locale"`
	SentAt    string `json:"sentAt"`
	InquiryID string `json:"inquiryId"`
}

func (s *Sink) serveEmails(w http.ResponseWriter, r *http.Request) {
	orgID, ok := orgOfPath(r.URL.Path)
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		jsonresp.Error(w, http.StatusNotFound, "not_found", "no such path")
		return
	}
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), s.adminToken) != 1 {
		w.Header().Set("WWW-Authenticate", "Bearer")
		jsonresp.Error(w, http.StatusUnauthorized, "unauthorized", "a valid admin bearer token is required")
		return
	}
	if s.OrgExists != nil {
		ok, err := s.OrgExists(r.Context(), orgID)
		if err != nil {
			jsonresp.Error(w, http.StatusServiceUnavailable, "internal_error", "The organisation could not be looked up: "+err.Error())
			return
		}
		if !ok {
			jsonresp.Error(w, http.StatusNotFound, "not_found", "No organisation "+orgID+".")
			return
		}
	}
	msgs := s.Messages(orgID)
	out := make([]emailJSON, len(msgs))
	for i, m := range msgs {
		out[i] = emailJSON{To: m.To, Subject: m.Subject, Body: m.Body, Locale: m.Locale,
			SentAt: m.SentAt.UTC().Format("2006-01-02T15:04:05.000Z"), InquiryID: m.InquiryID}
	}
	jsonresp.Write(w, http.StatusOK, map[string]any{"emails": out})
}

// orgOfPath extracts orgId from /admin/v1/orgs/{orgId}/emails.
func orgOfPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/admin/v1/orgs/")
	if !ok {
		return "", false
	}
	org, tail, _ := strings.Cut(rest, "/")
	if org == "" || (tail != "emails" && tail != "emails/") {
		return "", false
	}
	return org, true
}
