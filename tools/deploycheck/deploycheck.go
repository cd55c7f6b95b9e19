// Package deploycheck holds the tests of Quarters' delivery files: the
// Dockerfile, the Helm chart, skaffold.yaml, the in-cluster development
// dependencies and the Prometheus rules and Grafana dashboard. It has no code
// of its own besides helpers to find the repository.
package deploycheck

import (
	"errors"
	"os"
	"path/filepath"
)

// Root walks up from the working directory to the directory holding go.work.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work in this directory or above")
		}
		dir = parent
	}
}
