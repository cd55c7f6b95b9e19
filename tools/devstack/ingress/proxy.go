package ingress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

var errMalformed = errors.New("malformed response from upstream")

// proxy forwards r to u and copies the answer back.
func (in *Ingress) proxy(w http.ResponseWriter, r *http.Request, u *upstream) {
	replayable := r.ContentLength == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions)
	for attempt := 0; ; attempt++ {
		c, err := u.get()
		if err != nil {
			badGateway(w, u, err)
			return
		}
		res, err := in.exchange(w, r, c)
		switch {
		case err == nil:
			if res.reusable {
				u.put(c)
			} else {
				c.nc.Close()
			}
			return
		case res.wroteHeader:
			// The client already has a status line; all that is left is to
			// cut the response short.
			c.nc.Close()
			panic(http.ErrAbortHandler)
		default:
			c.nc.Close()
			// A kept-alive connection the service closed while it sat idle
			// fails before a single response byte arrives; a fresh
			// connection is the cure when the request can be sent again.
			if attempt == 0 && c.reused && !res.gotResponse && replayable {
				continue
			}
			if res.clientErr {
				// The client went away or stalled mid-body: drop its
				// connection rather than answer a request it never sent
				// in full.
				panic(http.ErrAbortHandler)
			}
			badGateway(w, u, err)
			return
		}
	}
}

func badGateway(w http.ResponseWriter, u *upstream, err error) {
	writeJSON(w, http.StatusBadGateway, errorBody("bad_gateway", fmt.Sprintf("the %s service failed to answer: %v", u.name, err)))
}

type exchangeResult struct {
	reusable    bool
	gotResponse bool
	wroteHeader bool
	clientErr   bool
}

// exchange sends one request over c and relays the response to w.
func (in *Ingress) exchange(w http.ResponseWriter, r *http.Request, c *upConn) (res exchangeResult, err error) {
	c.extendDeadline(in.opts.ResponseTimeout)
	in.writeRequestHead(c.bw, r)
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if err := in.copyRequestBody(w, r, c); err != nil {
			var ce clientError
			if errors.As(err, &ce) {
				res.clientErr = true
				return res, err
			}
			// The service may have answered early (413, 401) and closed
			// its side; relay that answer when there is one.
			c.nc.SetReadDeadline(time.Now().Add(time.Second))
			c.deadline = time.Time{}
			res2, err2 := in.relayResponse(w, r, c)
			res2.reusable = false
			if err2 != nil && !res2.gotResponse {
				return res2, err
			}
			return res2, err2
		}
	}
	if err := c.bw.Flush(); err != nil {
		return res, err
	}
	return in.relayResponse(w, r, c)
}

type clientError struct{ error }

func (e clientError) Unwrap() error { return e.error }

// hopHeaders are consumed by each hop and never forwarded, or are written by
// the ingress itself.
func skipRequestHeader(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect", "Content-Length",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Request-Id":
		return true
	}
	return false
}

func (in *Ingress) writeRequestHead(bw *bufio.Writer, r *http.Request) {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	if r.URL.Host != "" || r.RequestURI == "" {
		bw.WriteString(r.URL.RequestURI())
	} else {
		bw.WriteString(r.RequestURI)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.Host)
	bw.WriteString("\r\n")

	var connTokens []string
	if _, ok := r.Header["Connection"]; ok {
		for _, v := range r.Header["Connection"] {
			for _, tok := range strings.Split(v, ",") {
				if tok = strings.TrimSpace(tok); tok != "" {
					connTokens = append(connTokens, textproto.CanonicalMIMEHeaderKey(tok))
				}
			}
		}
	}
	for k, vv := range r.Header {
		if skipRequestHeader(k) || contains(connTokens, k) {
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}

	bw.WriteString("X-Forwarded-For: ")
	for _, v := range r.Header["X-Forwarded-For"] {
		bw.WriteString(v)
		bw.WriteString(", ")
	}
	bw.WriteString(clientIP(r.RemoteAddr))
	bw.WriteString("\r\nX-Forwarded-Proto: ")
	if r.TLS != nil {
		bw.WriteString("https")
	} else {
		bw.WriteString("http")
	}
	bw.WriteString("\r\nX-Forwarded-Host: ")
	bw.WriteString(r.Host)
	bw.WriteString("\r\nX-Request-Id: ")
	if id := r.Header["X-Request-Id"]; len(id) > 0 && id[0] != "" {
		bw.WriteString(id[0])
	} else {
		var buf [requestIDLen]byte
		bw.Write(in.reqIDs.next(buf[:0]))
	}
	switch {
	case r.ContentLength > 0:
		bw.WriteString("\r\nContent-Length: ")
		var num [20]byte
		bw.Write(strconv.AppendInt(num[:0], r.ContentLength, 10))
	case r.ContentLength < 0:
		bw.WriteString("\r\nTransfer-Encoding: chunked")
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		bw.WriteString("\r\nContent-Length: 0")
	}
	bw.WriteString("\r\n\r\n")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func clientIP(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// copyRequestBody streams the request body to the service, chunked when the
// client sent no length. Each read from the client may stall for at most the
// response timeout, so a client that stops sending frees the request.
func (in *Ingress) copyRequestBody(w http.ResponseWriter, r *http.Request, c *upConn) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	chunked := r.ContentLength < 0
	for {
		rc.SetReadDeadline(time.Now().Add(in.opts.ResponseTimeout))
		n, rerr := r.Body.Read(buf)
		if n > 0 {
			c.extendDeadline(in.opts.ResponseTimeout)
			if chunked {
				var hdr [20]byte
				c.bw.Write(strconv.AppendInt(hdr[:0], int64(n), 16))
				c.bw.WriteString("\r\n")
			}
			if _, err := c.bw.Write(buf[:n]); err != nil {
				return err
			}
			if chunked {
				c.bw.WriteString("\r\n")
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return clientError{rerr}
		}
	}
	rc.SetReadDeadline(time.Time{})
	if chunked {
		c.bw.WriteString("0\r\n\r\n")
	}
	return nil
}

// relayResponse reads the service's response head, copies it to w, then
// streams the body.
func (in *Ingress) relayResponse(w http.ResponseWriter, r *http.Request, c *upConn) (res exchangeResult, err error) {
	br := c.br
	var code int
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return res, err
		}
		res.gotResponse = true
		code, err = parseStatusLine(line)
		if err != nil {
			return res, err
		}
		if code >= 200 || code == http.StatusSwitchingProtocols {
			break
		}
		// An interim 1xx response: skip it with its headers.
		if err := skipHeaders(br); err != nil {
			return res, err
		}
	}
	if code == http.StatusSwitchingProtocols {
		return res, errors.New("the service switched protocols, which the ingress does not relay")
	}

	h := w.Header()
	var (
		contentLength int64 = -1
		chunked       bool
		closeAfter    bool
		vals          []string
	)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return res, err
		}
		line = trimEOL(line)
		if len(line) == 0 {
			break
		}
		i := indexByte(line, ':')
		if i <= 0 {
			return res, errMalformed
		}
		key, val := line[:i], trimSpace(line[i+1:])
		switch {
		case equalFold(key, "Content-Length"):
			n, perr := strconv.ParseInt(string(val), 10, 64)
			if perr != nil || n < 0 {
				return res, errMalformed
			}
			contentLength = n
		case equalFold(key, "Transfer-Encoding"):
			if !equalFold(val, "chunked") {
				return res, fmt.Errorf("unsupported transfer encoding %q", val)
			}
			chunked = true
			continue
		case equalFold(key, "Connection"):
			if equalFold(val, "close") {
				closeAfter = true
			}
			continue
		case equalFold(key, "Keep-Alive"), equalFold(key, "Proxy-Connection"), equalFold(key, "Upgrade"), equalFold(key, "Trailer"):
			continue
		case len(key) > 15 && equalFold(key[:15], "Access-Control-"):
			// The API is server-to-server only: no CORS header ever
			// leaves the ingress.
			continue
		}
		if vals == nil {
			vals = make([]string, 0, 12)
		}
		vals = append(vals, string(val))
		k := canonicalKey(key)
		if prev := h[k]; prev != nil {
			h[k] = append(prev, vals[len(vals)-1])
		} else {
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	if chunked {
		delete(h, "Content-Length")
		contentLength = -1
	}
	noBody := r.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
	w.WriteHeader(code)
	res.wroteHeader = true
	res.reusable = !closeAfter
	switch {
	case noBody:
		return res, nil
	case chunked:
		cr := httputil.NewChunkedReader(br)
		if err := in.copyBody(w, cr, -1, c); err != nil {
			return res, err
		}
		// The chunked reader stops after the last chunk; the (empty)
		// trailer section follows.
		if err := skipHeaders(br); err != nil {
			return res, err
		}
		return res, nil
	case contentLength >= 0:
		return res, in.copyBody(w, br, contentLength, c)
	default:
		// No length: the body runs to the end of the connection.
		res.reusable = false
		if err := in.copyBody(w, br, -1, c); err != nil {
			return res, err
		}
		return res, nil
	}
}

// copyBody copies n bytes (all of src when n < 0) to w. A body that fits in
// what has already been read goes out in one write. Longer bodies are
// streamed, flushing whenever the service has nothing more buffered, each
// write to a slow client bounded by the response timeout.
func (in *Ingress) copyBody(w http.ResponseWriter, src io.Reader, n int64, c *upConn) error {
	br := c.br
	if n == 0 {
		return nil
	}
	if n > 0 && int64(br.Buffered()) >= n {
		b, _ := br.Peek(int(n))
		_, err := w.Write(b)
		br.Discard(int(n))
		if err != nil {
			return clientError{err}
		}
		return nil
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	for n != 0 {
		p := buf
		if n > 0 && int64(len(p)) > n {
			p = p[:n]
		}
		m, rerr := src.Read(p)
		if m > 0 {
			rc.SetWriteDeadline(time.Now().Add(in.opts.ResponseTimeout))
			if _, err := w.Write(p[:m]); err != nil {
				return clientError{err}
			}
			if n > 0 {
				n -= int64(m)
			}
			if br.Buffered() == 0 && n != 0 {
				if err := rc.Flush(); err != nil {
					return clientError{err}
				}
			}
			c.extendDeadline(in.opts.ResponseTimeout)
		}
		if rerr == io.EOF {
			if n > 0 {
				return io.ErrUnexpectedEOF
			}
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	rc.SetWriteDeadline(time.Time{})
	return nil
}

func parseStatusLine(line []byte) (int, error) {
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || string(line[:5]) != "HTTP/" || line[8] != ' ' {
		return 0, errMalformed
	}
	d := line[9:12]
	if d[0] < '1' || d[0] > '5' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9' {
		return 0, errMalformed
	}
	return int(d[0]-'0')*100 + int(d[1]-'0')*10 + int(d[2]-'0'), nil
}

func skipHeaders(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(trimEOL(line)) == 0 {
			return nil
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// commonKeys maps the header names services usually send, in any case, to
// their canonical form without allocating.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Content-Type", "Content-Length", "Content-Encoding", "Content-Disposition", "Content-Language",
		"Cache-Control", "Date", "Etag", "Expires", "Last-Modified", "Location", "Retry-After", "Server",
		"Set-Cookie", "Vary", "Www-Authenticate", "X-Request-Id", "X-Trace-Id", "X-Content-Type-Options",
		"Traceparent", "Link", "Accept-Ranges", "Age", "Pragma",
	} {
		m[k] = k
		m[strings.ToLower(k)] = k
	}
	m["ETag"] = "Etag"
	m["WWW-Authenticate"] = "Www-Authenticate"
	m["X-Request-ID"] = "X-Request-Id"
	return m
}()

func canonicalKey(b []byte) string {
	if k, ok := commonKeys[string(b)]; ok {
		return k
	}
	return textproto.CanonicalMIMEHeaderKey(string(b))
}
