// Package config reads the dev stack's settings from QUARTERS_* environment
// variables through pkg/config, the reader every service uses, so that an
// empty value, a boolean or a malformed value means the same here as there;
// it refuses malformed values with a message that names the variable.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	pkgconfig "quarters.dev/pkg/config"
)

// Config is the dev stack's typed configuration.
type Config struct {
	// Listen is the local ingress address; port 0 picks a free port.
	Listen string `env:"QUARTERS_LISTEN" default:"127.0.0.1:8080"`
	// DataDir holds the embedded store, the Kafka log, Redis files, service
	// binaries, logs, SMTP sink messages and the demo credentials.
	DataDir string `env:"QUARTERS_DATA_DIR" default:".devstack"`
	// AdminToken is the admin bearer token handed to every service.
	AdminToken string `env:"QUARTERS_ADMIN_TOKEN" default:"dev-admin-token"`
	// RedisURL, when set, is used instead of starting a Redis.
	RedisURL string `env:"QUARTERS_REDIS_URL"`
	// Demo seeds the demo org on the first start.
	Demo bool `env:"QUARTERS_DEMO" default:"true"`
	// WebhookAllowHTTP and WebhookAllowPrivate are handed to the services.
	WebhookAllowHTTP    bool `env:"QUARTERS_WEBHOOK_ALLOW_HTTP" default:"true"`
	WebhookAllowPrivate bool `env:"QUARTERS_WEBHOOK_ALLOW_PRIVATE" default:"true"`
}

// Defaults are the values used for unset variables.
func Defaults() Config {
	var c Config
	_ = pkgconfig.LoadFrom(func(string) (string, bool) { return "", false }, &c)
	return c
}

// Load reads the configuration from the process environment.
func Load() (Config, error) { return LoadFrom(os.LookupEnv) }

// LoadFrom reads the configuration through lookup. As everywhere in
// Quarters, an empty (or blank) variable counts as unset, and every problem
// is reported, not just the first.
func LoadFrom(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	errs := []error{pkgconfig.LoadFrom(lookup, &c)}
	if err := checkListen(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("config: QUARTERS_LISTEN: %w, got %q", err, c.Listen))
	}
	if strings.ContainsAny(c.AdminToken, " \t\r\n") {
		errs = append(errs, errors.New("config: QUARTERS_ADMIN_TOKEN: must be a token without spaces"))
	}
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("config: QUARTERS_REDIS_URL: must be redis://host:port/db, got %q", c.RedisURL))
		}
	}
	return c, errors.Join(errs...)
}

func checkListen(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("must be host:port, e.g. 127.0.0.1:8080")
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return fmt.Errorf("host %q is not an IP address or localhost", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number between 0 and 65535", port)
	}
	return nil
}
