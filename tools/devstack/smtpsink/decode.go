package smtpsink

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"unicode/utf8"
)

// decode reads what the admin route shows of a raw message: the subject with
// RFC 2047 words decoded, the text body with its transfer encoding undone and
// line ends as "\n", the locale and the org and inquiry it is about. A message
// that cannot be parsed keeps whatever could be read, and says why in
// Problem.
func decode(raw []byte) Message {
	var m Message
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		m.Problem = "not a message: " + err.Error()
		return m
	}
	h := msg.Header
	m.Subject = decodeHeader(h.Get("Subject"))
	m.OrgID = strings.TrimSpace(h.Get(HeaderOrg))
	m.InquiryID = strings.TrimSpace(h.Get(HeaderInquiry))
	m.Locale = strings.TrimSpace(h.Get("Content-Language"))
	if d, err := h.Date(); err == nil {
		m.SentAt = d.UTC()
	}
	body, err := textBody(textproto.MIMEHeader(h), msg.Body, 0)
	if err != nil {
		m.Problem = "body: " + err.Error()
	}
	m.Body = strings.ReplaceAll(body, "\r\n", "\n")
	return m
}

var wordDecoder = mime.WordDecoder{CharsetReader: charsetReader}

func decodeHeader(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		return d
	}
	return v
}

// textBody returns the text of a part: itself when it is text, the first
// text/plain part (or else the first text part) of a multipart one.
func textBody(h textproto.MIMEHeader, body io.Reader, depth int) (string, error) {
	ctype := h.Get("Content-Type")
	if ctype == "" {
		ctype = "text/plain; charset=us-ascii"
	}
	media, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		return readText(h, body, "")
	}
	if strings.HasPrefix(media, "multipart/") && depth < 5 {
		mr := multipart.NewReader(body, params["boundary"])
		fallback, haveFallback := "", false
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return fallback, nil
			}
			if err != nil {
				return fallback, err
			}
			pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
			switch {
			case pt == "" || pt == "text/plain":
				return textBody(p.Header, p, depth+1)
			case strings.HasPrefix(pt, "multipart/"):
				if text, err := textBody(p.Header, p, depth+1); err != nil || text != "" {
					return text, err
				}
			case strings.HasPrefix(pt, "text/") && !haveFallback:
				text, err := textBody(p.Header, p, depth+1)
				if err != nil {
					return text, err
				}
				fallback, haveFallback = text, true
			}
		}
	}
	return readText(h, body, params["charset"])
}

// readText undoes the transfer encoding and converts the charset to UTF-8.
func readText(h textproto.MIMEHeader, body io.Reader, charset string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, &stripSpace{r: body})
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return string(b), err
	}
	r, err := charsetReader(charset, bytes.NewReader(b))
	if err != nil {
		return string(b), err
	}
	b, err = io.ReadAll(r)
	return string(b), err
}

// charsetReader reads UTF-8 (and its subset US-ASCII) as is and converts
// ISO-8859-1; other charsets are refused.
func charsetReader(charset string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.Trim(charset, `" `)) {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	case "iso-8859-1", "latin1", "latin-1":
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b)*2)
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("unsupported charset %q", charset)
}

// stripSpace drops the line breaks of a base64 body.
type stripSpace struct{ r io.Reader }

func (s *stripSpace) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		j := 0
		for _, c := range p[:n] {
			if c != '\r' && c != '\n' && c != ' ' && c != '\t' {
				p[j] = c
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}
