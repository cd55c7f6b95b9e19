package cli

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// record is one object of an import's input and where it came from.
type record struct {
	src  string // file, file:line or file:row
	body map[string]any
	err  error // the record could not be read
}

// readRecords reads the records of a directory (every .json, .yaml, .yml,
// .jsonl and .csv file in it, by name), a .csv file (a header row, a record
// a row), a .jsonl file (an object a line), or a .json or .yaml file (one
// object, or an array of them).
func readRecords(path string) ([]record, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return readFileRecords(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".json", ".yaml", ".yml", ".jsonl", ".csv":
			// Hidden files and the state files of earlier imports are not input.
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasSuffix(e.Name(), ledgerSuffix) {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	var out []record
	for _, n := range names {
		rs, err := readFileRecords(filepath.Join(path, n))
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func readFileRecords(path string) ([]record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return csvRecords(name, bytes.NewReader(data))
	case ".jsonl", ".ndjson":
		return jsonlRecords(name, data), nil
	case ".json", ".yaml", ".yml":
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil { // YAML is a superset of JSON
			return []record{{src: name, err: err}}, nil
		}
		switch x := v.(type) {
		case map[string]any:
			return []record{{src: name, body: x}}, nil
		case []any:
			out := make([]record, len(x))
			for i, el := range x {
				out[i].src = fmt.Sprintf("%s[%d]", name, i)
				if m, ok := el.(map[string]any); ok {
					out[i].body = m
				} else {
					out[i].err = fmt.Errorf("not an object")
				}
			}
			return out, nil
		default:
			return []record{{src: name, err: fmt.Errorf("not an object or an array of objects")}}, nil
		}
	}
	return nil, fmt.Errorf("%s: want a directory or a .csv, .jsonl, .json or .yaml file", path)
}

func jsonlRecords(name string, data []byte) []record {
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		r := record{src: fmt.Sprintf("%s:%d", name, line)}
		if err := json.Unmarshal([]byte(text), &r.body); err != nil {
			r.err = fmt.Errorf("not a JSON object: %w", err)
		} else if r.body == nil {
			r.err = fmt.Errorf("not an object")
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		out = append(out, record{src: name, err: err})
	}
	return out
}

// csvRecords reads a header row and a record a row. A column named with
// dots (address.city) sets a nested field. An empty cell is left out. A
// cell that is a JSON number, true, false, an array or an object is that
// value, anything else a string; a column named "name:string" always holds
// strings (a postal code such as 10115).
func csvRecords(name string, r io.Reader) ([]record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	var out []record
	for row := 2; ; row++ {
		cells, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		rec := record{src: fmt.Sprintf("%s:%d", name, row), body: map[string]any{}}
		if err != nil {
			rec.err = err
			out = append(out, rec)
			continue
		}
		if len(cells) != len(header) {
			rec.err = fmt.Errorf("%d cells for %d columns", len(cells), len(header))
			out = append(out, rec)
			continue
		}
		for i, col := range header {
			cell := strings.TrimSpace(cells[i])
			if cell == "" {
				continue
			}
			col = strings.TrimSpace(col)
			asString := false
			if base, ok := strings.CutSuffix(col, ":string"); ok {
				col, asString = base, true
			}
			var v any = cell
			if !asString {
				var j any
				if json.Unmarshal([]byte(cell), &j) == nil {
					switch j.(type) {
					case float64, bool, []any, map[string]any:
						v = j
					}
				}
			}
			setPath(rec.body, strings.Split(col, "."), v)
		}
		out = append(out, rec)
	}
}

func setPath(m map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = v
}
