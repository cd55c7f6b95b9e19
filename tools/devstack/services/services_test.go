package services

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailReturnsLastLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "svc.log")
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "line %d of a long service log\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Tail(path, 40)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 40 || lines[0] != "line 4961 of a long service log" || lines[39] != "line 5000 of a long service log" {
		t.Fatalf("tail: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

func TestDiscoverAndFindRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644)
	for _, dir := range []string{"services/auth", "services/catalog/internal", "services/bookings"} {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
	}
	os.WriteFile(filepath.Join(root, "services/auth/main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(root, "services/catalog/main.go"), []byte("package main\n"), 0o644)

	got, err := FindRoot(filepath.Join(root, "services/catalog/internal"))
	if err != nil || got != root {
		t.Fatalf("FindRoot = %q, %v; want %q", got, err, root)
	}
	specs := Discover(root, []string{"auth", "bookings", "catalog"})
	if len(specs) != 2 || specs[0].Name != "auth" || specs[0].Package != "./services/auth" || specs[1].Name != "catalog" {
		t.Fatalf("Discover = %+v (bookings has no main.go)", specs)
	}
}
