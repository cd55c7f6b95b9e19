package contract

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"

	"quarters.dev/pkg/openapi"
)

// TestAPIDocCoversTheDocuments checks that docs/api.md shows every operation
// of both documents and no operation they lack. (The examples themselves are
// recorded and checked by the end-to-end test TestAPIDocExamples.)
func TestAPIDocCoversTheDocuments(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	md, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]map[string]bool{"public": {}, "admin": {}}
	section := ""
	heading := regexp.MustCompile("^### `([A-Z]+ /[^`]*)`$")
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case strings.HasPrefix(line, "## Public API examples"):
			section = "public"
		case strings.HasPrefix(line, "## Admin API examples"):
			section = "admin"
		case strings.HasPrefix(line, "## "):
			section = ""
		}
		if m := heading.FindStringSubmatch(line); m != nil && section != "" {
			inDoc[section][m[1]] = true
		}
	}
	for name, get := range map[string]func() (*openapi.Document, error){"public": openapi.Public, "admin": openapi.Admin} {
		d, err := get()
		if err != nil {
			t.Fatal(err)
		}
		doc, err := libopenapi.NewDocument(d.JSON)
		if err != nil {
			t.Fatal(err)
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			t.Fatal(err)
		}
		inSpec := map[string]bool{}
		for path, item := range m.Model.Paths.PathItems.FromOldest() {
			for method := range item.GetOperations().FromOldest() {
				inSpec[strings.ToUpper(method)+" "+path] = true
			}
		}
		var missing, extra []string
		for op := range inSpec {
			if !inDoc[name][op] {
				missing = append(missing, op)
			}
		}
		for op := range inDoc[name] {
			if !inSpec[op] {
				extra = append(extra, op)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		if len(missing) > 0 {
			t.Errorf("%s operations docs/api.md does not show: %q", name, missing)
		}
		if len(extra) > 0 {
			t.Errorf("docs/api.md shows %s operations the document lacks: %q", name, extra)
		}
	}
}
