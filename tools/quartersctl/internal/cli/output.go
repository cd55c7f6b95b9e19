package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printJSON writes raw JSON indented, or any value marshalled.
func printJSON(w io.Writer, v any) error {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw = b
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// table writes rows under headers, aligned with tabwriter.
func table(w io.Writer, headers []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes one record as "name:  value" lines.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], v)
	}
	return tw.Flush()
}

// ts formats a timestamp for a table; nil or zero is empty.
func ts(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func itoa(n int) string { return fmt.Sprint(n) }

// str renders an optional string.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// compactJSON removes insignificant space from raw JSON.
func compactJSON(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
