// Package smtpsink is the dev stack's mail server: it accepts every message
// sent to it over SMTP, keeps what a developer wants to check (recipient,
// subject, when, which org and inquiry it was about) in a JSON file, and lists
// them per org through the dev-only admin route
// GET /admin/v1/orgs/{orgId}/emails.
package smtpsink

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Message is what the sink keeps of one received email.
type Message struct {
	To         string    `json:"to"`
	Subject    string    `json:"subject"`
	SentAt     time.Time `json:"sentAt"`
	OrgID      string    `json:"orgId"`
	InquiryID  string    `json:"inquiryId"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// Headers the bookings service sets on the mail it sends.
const (
	HeaderOrg     = "X-Quarters-Org"
	HeaderInquiry = "X-Quarters-Inquiry"
)

const (
	maxMessageBytes = 30 << 20
	maxKept         = 10000
	commandTimeout  = 5 * time.Minute
)

// Sink is a running SMTP sink.
type Sink struct {
	// Addr is the SMTP listen address ("127.0.0.1:port").
	Addr string

	file       string
	adminToken []byte
	l          net.Listener

	mu       sync.Mutex
	messages []Message

	wg    sync.WaitGroup
	conns sync.Map // net.Conn → struct{}
}

// Start listens on addr ("127.0.0.1:0" for a free port) and keeps messages
// in dir/messages.json, loading the ones kept by an earlier run.
func Start(dir, addr, adminToken string) (*Sink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create SMTP sink dir: %w", err)
	}
	s := &Sink{file: filepath.Join(dir, "messages.json"), adminToken: []byte(adminToken)}
	if b, err := os.ReadFile(s.file); err == nil {
		if err := json.Unmarshal(b, &s.messages); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read SMTP sink messages: %w", err)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SMTP sink listen: %w", err)
	}
	s.l, s.Addr = l, l.Addr().String()
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Stop closes the listener and every open session and waits for them.
func (s *Sink) Stop() {
	s.l.Close()
	s.conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	s.wg.Wait()
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
	// Messages are kept in arrival order; a stable sort keeps the later
	// arrival first among equal send times.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SentAt.After(out[j].SentAt) })
	return out
}

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		s.conns.Store(c, struct{}{})
		go func() {
			defer s.wg.Done()
			defer s.conns.Delete(c)
			defer c.Close()
			s.session(c)
		}()
	}
}

// session speaks enough SMTP for Go's net/smtp and common mailers: EHLO or
// HELO, optional AUTH (anything is accepted), MAIL, RCPT, DATA, RSET, NOOP,
// QUIT.
func (s *Sink) session(c net.Conn) {
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	reply := func(lines ...string) bool {
		for _, l := range lines {
			bw.WriteString(l)
			bw.WriteString("\r\n")
		}
		return bw.Flush() == nil
	}
	readLine := func() (string, bool) {
		c.SetReadDeadline(time.Now().Add(commandTimeout))
		line, err := br.ReadString('\n')
		if err != nil {
			return "", false
		}
		return strings.TrimRight(line, "\r\n"), true
	}
	if !reply("220 quarters-dev SMTP sink ready") {
		return
	}
	var rcpts []string
	for {
		line, ok := readLine()
		if !ok {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			ok = reply("250-quarters-dev", "250-8BITMIME", "250-SMTPUTF8", fmt.Sprintf("250-SIZE %d", maxMessageBytes), "250 AUTH PLAIN LOGIN")
		case "HELO":
			ok = reply("250 quarters-dev")
		case "AUTH":
			mech, initial, _ := strings.Cut(arg, " ")
			switch strings.ToUpper(mech) {
			case "PLAIN":
				if initial == "" {
					if !reply("334 ") {
						return
					}
					if _, ok = readLine(); !ok {
						return
					}
				}
				ok = reply("235 2.7.0 accepted")
			case "LOGIN":
				if initial == "" {
					if !reply("334 VXNlcm5hbWU6") {
						return
					}
					if _, ok = readLine(); !ok {
						return
					}
				}
				if !reply("334 UGFzc3dvcmQ6") {
					return
				}
				if _, ok = readLine(); !ok {
					return
				}
				ok = reply("235 2.7.0 accepted")
			default:
				ok = reply("504 5.5.4 unrecognised authentication type")
			}
		case "MAIL":
			rcpts = rcpts[:0]
			ok = reply("250 2.1.0 ok")
		case "RCPT":
			addr := strings.TrimSpace(arg)
			if i := strings.IndexByte(addr, ':'); i >= 0 {
				addr = strings.TrimSpace(addr[i+1:])
			}
			if i := strings.IndexByte(addr, '>'); i >= 0 {
				addr = addr[:i]
			}
			rcpts = append(rcpts, strings.TrimPrefix(addr, "<"))
			ok = reply("250 2.1.5 ok")
		case "DATA":
			if len(rcpts) == 0 {
				ok = reply("503 5.5.1 RCPT first")
				break
			}
			if !reply("354 end data with <CR><LF>.<CR><LF>") {
				return
			}
			data, err := readData(br, c)
			if err != nil {
				if errors.Is(err, errTooLarge) {
					ok = reply("552 5.3.4 message too large")
					break
				}
				return
			}
			if err := s.store(rcpts, data); err != nil {
				ok = reply("451 4.3.0 " + err.Error())
				break
			}
			rcpts = rcpts[:0]
			ok = reply("250 2.0.0 queued")
		case "RSET":
			rcpts = rcpts[:0]
			ok = reply("250 2.0.0 ok")
		case "NOOP":
			ok = reply("250 2.0.0 ok")
		case "VRFY":
			ok = reply("252 2.1.5 cannot verify")
		case "QUIT":
			reply("221 2.0.0 bye")
			return
		default:
			ok = reply("502 5.5.2 command not implemented")
		}
		if !ok {
			return
		}
	}
}

var errTooLarge = errors.New("message too large")

// readData reads a DATA section up to the lone dot, undoing dot-stuffing.
func readData(br *bufio.Reader, c net.Conn) ([]byte, error) {
	var buf bytes.Buffer
	for {
		c.SetReadDeadline(time.Now().Add(commandTimeout))
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			buf.Write(line)
			continue
		}
		if err != nil {
			return nil, err
		}
		if string(line) == ".\r\n" || string(line) == ".\n" {
			break
		}
		if len(line) > 1 && line[0] == '.' {
			line = line[1:]
		}
		if buf.Len()+len(line) > maxMessageBytes {
			// Keep reading to the end so the session stays in step.
			for {
				line, err := br.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return nil, err
				}
				if string(line) == ".\r\n" || string(line) == ".\n" {
					return nil, errTooLarge
				}
			}
		}
		buf.Write(line)
	}
	return buf.Bytes(), nil
}

func (s *Sink) store(rcpts []string, data []byte) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	m := Message{To: strings.Join(rcpts, ", "), SentAt: now, ReceivedAt: now}
	if msg, err := mail.ReadMessage(bytes.NewReader(data)); err == nil {
		dec := mime.WordDecoder{}
		subject := msg.Header.Get("Subject")
		if d, err := dec.DecodeHeader(subject); err == nil {
			subject = d
		}
		m.Subject = subject
		m.OrgID = strings.TrimSpace(msg.Header.Get(HeaderOrg))
		m.InquiryID = strings.TrimSpace(msg.Header.Get(HeaderInquiry))
		if d, err := msg.Header.Date(); err == nil {
			m.SentAt = d.UTC()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, m)
	if len(s.messages) > maxKept {
		s.messages = append([]Message(nil), s.messages[len(s.messages)-maxKept:]...)
	}
	return s.save()
}

// save writes the messages file atomically; called with s.mu held.
func (s *Sink) save() error {
	b, err := json.Marshal(s.messages)
	if err != nil {
		return err
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("save message: %w", err)
	}
	if err := os.Rename(tmp, s.file); err != nil {
		return fmt.Errorf("save message: %w", err)
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
	SentAt    string `json:"sentAt"`
	InquiryID string `json:"inquiryId"`
}

func (s *Sink) serveEmails(w http.ResponseWriter, r *http.Request) {
	orgID, ok := orgOfPath(r.URL.Path)
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "message": "no such path"})
		return
	}
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), s.adminToken) != 1 {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": "a valid admin bearer token is required"})
		return
	}
	msgs := s.Messages(orgID)
	out := make([]emailJSON, len(msgs))
	for i, m := range msgs {
		out[i] = emailJSON{To: m.To, Subject: m.Subject, SentAt: m.SentAt.UTC().Format("2006-01-02T15:04:05.000Z"), InquiryID: m.InquiryID}
	}
	writeJSON(w, http.StatusOK, map[string]any{"emails": out})
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

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b)
	io.WriteString(w, "\n")
}
