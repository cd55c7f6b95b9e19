// Package routes holds the one routing table that maps public and admin paths
// to the service that owns them. The local ingress matches requests with it and
// the Helm chart renders its Ingress from the same file, so the two cannot
// drift.
package routes

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed routes.yaml
var tableYAML []byte

// YAML returns the routing table file exactly as it is kept in the repository.
func YAML() []byte { return append([]byte(nil), tableYAML...) }

// Route sends a path and everything below it to a service.
type Route struct {
	// Path is absolute; a `{id}` segment matches exactly one path segment.
	Path    string `yaml:"path"`
	Service string `yaml:"service"`
	// DevOnly routes exist only in the dev stack.
	DevOnly bool `yaml:"devOnly"`
}

// Segments returns the route's path split into segments.
func (r Route) Segments() []string { return splitPath(r.Path) }

// Regex returns the route as an anchored regular expression in the dialect of
// ingress-nginx (`{id}` becomes one segment, the route covers its subtree).
func (r Route) Regex() string {
	var b strings.Builder
	b.WriteString("^")
	for _, s := range r.Segments() {
		b.WriteString("/")
		if s == Param {
			b.WriteString("[^/]+")
		} else {
			b.WriteString(regexQuote(s))
		}
	}
	b.WriteString("(/.*)?$")
	return b.String()
}

// Param is the placeholder segment that matches any one segment.
const Param = "{id}"

// Table is a compiled routing table. Matching walks a segment trie once, so
// its cost depends on the depth of the path, not on the number of routes.
type Table struct {
	routes []Route
	root   *node
}

type node struct {
	literal map[string]*node
	param   *node
	route   *Route
}

// Default compiles the embedded routing table, including dev-only routes when
// dev is true.
func Default(dev bool) (*Table, error) {
	rs, err := Parse(tableYAML)
	if err != nil {
		return nil, err
	}
	if !dev {
		kept := rs[:0]
		for _, r := range rs {
			if !r.DevOnly {
				kept = append(kept, r)
			}
		}
		rs = kept
	}
	return Compile(rs)
}

// Parse reads a routing table file.
func Parse(data []byte) ([]Route, error) {
	var doc struct {
		Routes []Route `yaml:"routes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse routing table: %w", err)
	}
	return doc.Routes, nil
}

// Compile checks the routes and builds the matcher. Two routes with the same
// shape are refused, as is a relative path or an empty service.
func Compile(rs []Route) (*Table, error) {
	t := &Table{routes: append([]Route(nil), rs...), root: &node{}}
	for i := range t.routes {
		r := &t.routes[i]
		if !strings.HasPrefix(r.Path, "/") {
			return nil, fmt.Errorf("route %q: path must start with /", r.Path)
		}
		if r.Service == "" {
			return nil, fmt.Errorf("route %q: service is required", r.Path)
		}
		n := t.root
		for _, s := range r.Segments() {
			if s == Param {
				if n.param == nil {
					n.param = &node{}
				}
				n = n.param
				continue
			}
			if strings.ContainsAny(s, "{}") {
				return nil, fmt.Errorf("route %q: only whole {id} segments are placeholders", r.Path)
			}
			if n.literal == nil {
				n.literal = map[string]*node{}
			}
			next := n.literal[s]
			if next == nil {
				next = &node{}
				n.literal[s] = next
			}
			n = next
		}
		if n.route != nil {
			return nil, fmt.Errorf("route %q: same shape as %q", r.Path, n.route.Path)
		}
		n.route = r
	}
	return t, nil
}

// Routes returns the table's routes, longest first (the order in which
// ingress-nginx must see regex paths for the longest match to win).
func (t *Table) Routes() []Route {
	out := append([]Route(nil), t.routes...)
	sort.SliceStable(out, func(i, j int) bool {
		return len(out[i].Segments()) > len(out[j].Segments())
	})
	return out
}

// Services returns the distinct services the table routes to, sorted.
func (t *Table) Services() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range t.routes {
		if !seen[r.Service] {
			seen[r.Service] = true
			out = append(out, r.Service)
		}
	}
	sort.Strings(out)
	return out
}

// Match returns the route that owns path, and false when no route covers it.
// A literal segment is preferred over a placeholder at the same depth, and a
// deeper match over a shallower one.
func (t *Table) Match(path string) (Route, bool) {
	r := match(t.root, path)
	if r == nil {
		return Route{}, false
	}
	return *r, true
}

func match(n *node, rest string) *Route {
	best := n.route
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
	}
	if rest == "" {
		return best
	}
	seg, tail := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		seg, tail = rest[:i], rest[i:]
	}
	if next := n.literal[seg]; next != nil {
		if r := match(next, tail); r != nil {
			return r
		}
	}
	if n.param != nil {
		if r := match(n.param, tail); r != nil {
			return r
		}
	}
	return best
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func regexQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
