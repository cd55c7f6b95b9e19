// Package config reads the dev stack's settings from QUARTERS_* environment
// variables, refusing malformed values with a message that names the variable.
package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Config is the dev stack's typed configuration.
type Config struct {
	// Listen is the local ingress address; port 0 picks a free port.
	Listen string
	// DataDir holds the embedded store, the Kafka log, Redis files, service
	// binaries, logs, SMTP sink messages and the demo credentials.
	DataDir string
	// AdminToken is the admin bearer token handed to every service.
	AdminToken string
	// RedisURL, when set, is used instead of starting a Redis.
	RedisURL string
	// Demo seeds the demo org on the first start.
	Demo bool
	// WebhookAllowHTTP and WebhookAllowPrivate are handed to the services.
	WebhookAllowHTTP    bool
	WebhookAllowPrivate bool
}

// Defaults are the values used for unset variables.
func Defaults() Config {
	return Config{
		Listen:              "127.0.0.1:8080",
		DataDir:             ".devstack",
		AdminToken:          "dev-admin-token",
		Demo:                true,
		WebhookAllowHTTP:    true,
		WebhookAllowPrivate: true,
	}
}

// FromEnv reads the configuration through getenv (os.Getenv in main). An
// empty variable counts as unset.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Defaults()
	if v := getenv("QUARTERS_LISTEN"); v != "" {
		if err := checkListen(v); err != nil {
			return c, fmt.Errorf("QUARTERS_LISTEN=%q: %w", v, err)
		}
		c.Listen = v
	}
	if v := getenv("QUARTERS_DATA_DIR"); v != "" {
		c.DataDir = v
	}
	if v := getenv("QUARTERS_ADMIN_TOKEN"); v != "" {
		if strings.ContainsAny(v, " \t\r\n") {
			return c, fmt.Errorf("QUARTERS_ADMIN_TOKEN must be a token without spaces")
		}
		c.AdminToken = v
	}
	if v := getenv("QUARTERS_REDIS_URL"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return c, fmt.Errorf("QUARTERS_REDIS_URL=%q: want redis://host:port/db", v)
		}
		c.RedisURL = v
	}
	var err error
	if c.Demo, err = boolVar(getenv, "QUARTERS_DEMO", c.Demo); err != nil {
		return c, err
	}
	if c.WebhookAllowHTTP, err = boolVar(getenv, "QUARTERS_WEBHOOK_ALLOW_HTTP", c.WebhookAllowHTTP); err != nil {
		return c, err
	}
	if c.WebhookAllowPrivate, err = boolVar(getenv, "QUARTERS_WEBHOOK_ALLOW_PRIVATE", c.WebhookAllowPrivate); err != nil {
		return c, err
	}
	return c, nil
}

func boolVar(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: want 1 or 0 (true or false)", name, v)
	}
	return b, nil
}

func checkListen(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("want host:port, e.g. 127.0.0.1:8080")
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
