// Package openapi holds the OpenAPI 3.1 documents of Quarters: the public API
// (openapi.yaml) and the admin API (openapi-admin.yaml), the single sources of
// both. It renders each to JSON once, at start-up, with a strong entity tag, and
// serves the bytes unchanged.
//
// The admin document refers to the public one's components
// (`openapi.yaml#/components/...`); its JSON carries them inline, so that it
// stands alone.
package openapi

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed openapi.yaml
var publicYAML []byte

//go:embed openapi-admin.yaml
var adminYAML []byte

// PublicFile and AdminFile name the two sources, as the admin document's
// references spell the public one.
const (
	PublicFile = "openapi.yaml"
	AdminFile  = "openapi-admin.yaml"
)

// Document is one rendered OpenAPI document.
type Document struct {
	// JSON is the document rendered as JSON, keys in source order.
	JSON []byte
	// ETag is the strong entity tag of JSON (quoted).
	ETag string
}

var (
	once          sync.Once
	public, admin *Document
	renderErr     error
)

func load() {
	once.Do(func() {
		var pub, adm yaml.Node
		if renderErr = yaml.Unmarshal(publicYAML, &pub); renderErr != nil {
			renderErr = fmt.Errorf("%s: %w", PublicFile, renderErr)
			return
		}
		if renderErr = yaml.Unmarshal(adminYAML, &adm); renderErr != nil {
			renderErr = fmt.Errorf("%s: %w", AdminFile, renderErr)
			return
		}
		if public, renderErr = render(&pub); renderErr != nil {
			renderErr = fmt.Errorf("%s: %w", PublicFile, renderErr)
			return
		}
		if renderErr = inline(&adm, &pub); renderErr != nil {
			renderErr = fmt.Errorf("%s: %w", AdminFile, renderErr)
			return
		}
		if admin, renderErr = render(&adm); renderErr != nil {
			renderErr = fmt.Errorf("%s: %w", AdminFile, renderErr)
		}
	})
}

// Public returns the public API document.
func Public() (*Document, error) { load(); return public, renderErr }

// Admin returns the admin API document, with the public components it uses inline.
func Admin() (*Document, error) { load(); return admin, renderErr }

// PublicYAML and AdminYAML return the source files.
func PublicYAML() []byte { return bytes.Clone(publicYAML) }
func AdminYAML() []byte  { return bytes.Clone(adminYAML) }

// MustPublic and MustAdmin panic when the embedded documents do not render
// (a build defect the package's tests catch).
func MustPublic() *Document {
	d, err := Public()
	if err != nil {
		panic(err)
	}
	return d
}

func MustAdmin() *Document {
	d, err := Admin()
	if err != nil {
		panic(err)
	}
	return d
}

// ServeHTTP answers GET and HEAD with the JSON document and its ETag, and 304
// Not Modified when If-None-Match names it. Cache-Control stays no-store: the
// client revalidates every time, with the entity tag.
func (d *Document) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("ETag", d.ETag)
	if matches(r.Header.Get("If-None-Match"), d.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(d.JSON)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(d.JSON)
	}
}

// matches reports whether an If-None-Match value names etag (weak comparison,
// as RFC 9110 prescribes for If-None-Match).
func matches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func render(root *yaml.Node) (*Document, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, root); err != nil {
		return nil, err
	}
	if !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("rendered JSON is invalid")
	}
	sum := sha256.Sum256(b.Bytes())
	return &Document{JSON: b.Bytes(), ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}, nil
}

// writeJSON renders a YAML node as compact JSON, keeping the key order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return writeJSON(b, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key must be a scalar", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!binary", "!!timestamp":
			writeString(b, n.Value)
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int":
			var v int64
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			b.WriteString(strconv.FormatInt(v, 10))
		case "!!float":
			var v float64
			if err := n.Decode(&v); err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				return fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		default:
			return fmt.Errorf("line %d: unsupported tag %s", n.Line, n.ShortTag())
		}
	default:
		return fmt.Errorf("line %d: unsupported node", n.Line)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// inline rewrites the admin document's references to the public one
// (`openapi.yaml#/components/<kind>/<name>`) into local ones, copying each
// referred component, and what it refers to in turn, into the admin
// document's components.
func inline(adm, pub *yaml.Node) error {
	admComponents := child(adm.Content[0], "components")
	pubComponents := child(pub.Content[0], "components")
	if admComponents == nil || pubComponents == nil {
		return fmt.Errorf("both documents need components")
	}
	type key struct{ kind, name string }
	copied := map[key]bool{}
	var queue []key
	var rewrite func(n *yaml.Node, external bool) error
	rewrite = func(n *yaml.Node, fromPublic bool) error {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value != "$ref" || n.Content[i+1].Kind != yaml.ScalarNode {
					continue
				}
				ref := n.Content[i+1].Value
				var ptr string
				switch {
				case strings.HasPrefix(ref, PublicFile+"#/components/"):
					ptr = strings.TrimPrefix(ref, PublicFile+"#/components/")
				case fromPublic && strings.HasPrefix(ref, "#/components/"):
					ptr = strings.TrimPrefix(ref, "#/components/")
				case strings.HasPrefix(ref, "#/"):
					continue
				default:
					return fmt.Errorf("line %d: unsupported reference %q", n.Content[i+1].Line, ref)
				}
				kind, name, ok := strings.Cut(ptr, "/")
				if !ok || strings.Contains(name, "/") {
					return fmt.Errorf("line %d: unsupported reference %q", n.Content[i+1].Line, ref)
				}
				n.Content[i+1].Value = "#/components/" + ptr
				if k := (key{kind, name}); !copied[k] {
					copied[k] = true
					queue = append(queue, k)
				}
			}
		}
		for _, c := range n.Content {
			if err := rewrite(c, fromPublic); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rewrite(adm, false); err != nil {
		return err
	}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		src := child(child(pubComponents, k.kind), k.name)
		if src == nil {
			return fmt.Errorf("%s has no component %s/%s", PublicFile, k.kind, k.name)
		}
		cp := deepCopy(src)
		if err := rewrite(cp, true); err != nil {
			return err
		}
		section := child(admComponents, k.kind)
		if section == nil {
			section = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			admComponents.Content = append(admComponents.Content, scalar(k.kind), section)
		}
		if child(section, k.name) != nil {
			return fmt.Errorf("component %s/%s is defined in both documents", k.kind, k.name)
		}
		section.Content = append(section.Content, scalar(k.name), cp)
	}
	return nil
}

func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	if n.Kind == yaml.AliasNode {
		return deepCopy(n.Alias)
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = deepCopy(x)
	}
	return &c
}
