package httpx

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// accessLog writes one JSON line per request, in the shape of the process's
// log/slog JSON lines (time, level, msg, service, then the request's fields),
// straight into a byte buffer: the access log is on every request's path, and
// formatting it through slog costs a busy service a tenth of its CPU.
type accessLog struct {
	w       io.Writer
	service string
	pool    sync.Pool
}

type accessEntry struct {
	method, route, path, requestID, traceID, orgID string
	status, bytes                                  int
	duration                                       time.Duration
	at                                             time.Time
}

func newAccessLog(w io.Writer, service string) *accessLog {
	return &accessLog{w: w, service: service, pool: sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}}
}

func (l *accessLog) write(e accessEntry) {
	bp := l.pool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"time":"`...)
	b = e.at.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","level":"INFO","msg":"request"`...)
	if l.service != "" {
		b = appendField(b, "service", l.service)
	}
	b = appendField(b, "method", e.method)
	b = appendField(b, "route", e.route)
	b = appendField(b, "path", e.path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.duration.Microseconds())/1000, 'f', -1, 64)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(e.bytes), 10)
	b = appendField(b, "request_id", e.requestID)
	if e.traceID != "" {
		b = appendField(b, "trace_id", e.traceID)
	}
	if e.orgID != "" {
		b = appendField(b, "org_id", e.orgID)
	}
	b = append(b, "}\n"...)
	// A failed write of a log line has nowhere to be reported.
	_, _ = l.w.Write(b)
	*bp = b
	l.pool.Put(bp)
}

func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendJSONString(b, value)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				switch c {
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				case '\t':
					b = append(b, '\\', 't')
				default:
					b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
				}
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
