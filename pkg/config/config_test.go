package config

import (
	"strings"
	"testing"
	"time"
)

type inner struct {
	Brokers []string `env:"QUARTERS_KAFKA_BROKERS" required:"true"`
}

type sample struct {
	inner
	Addr    string        `env:"QUARTERS_HTTP_ADDR" default:":8080"`
	Timeout time.Duration `env:"QUARTERS_SHUTDOWN_TIMEOUT" default:"20s"`
	Limit   int64         `env:"QUARTERS_MAX_BODY_BYTES" default:"1048576"`
	Dev     bool          `env:"QUARTERS_DEV"`
	URI     string        `env:"QUARTERS_MONGO_URI" required:"true"`
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaultsAndValues(t *testing.T) {
	t.Parallel()
	var s sample
	err := LoadFrom(env(map[string]string{
		"QUARTERS_KAFKA_BROKERS": "a:1, b:2",
		"QUARTERS_MONGO_URI":     "mongodb://x",
		"QUARTERS_DEV":           "true",
	}), &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != ":8080" || s.Timeout != 20*time.Second || s.Limit != 1<<20 || !s.Dev || s.URI != "mongodb://x" {
		t.Fatalf("unexpected config %+v", s)
	}
	if len(s.Brokers) != 2 || s.Brokers[1] != "b:2" {
		t.Fatalf("brokers = %v", s.Brokers)
	}
}

func TestLoadNamesEveryBadVariable(t *testing.T) {
	t.Parallel()
	var s sample
	err := LoadFrom(env(map[string]string{
		"QUARTERS_SHUTDOWN_TIMEOUT": "soon",
		"QUARTERS_MAX_BODY_BYTES":   "1MB",
	}), &s)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"QUARTERS_SHUTDOWN_TIMEOUT", "QUARTERS_MAX_BODY_BYTES", "QUARTERS_MONGO_URI is required", "QUARTERS_KAFKA_BROKERS is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
