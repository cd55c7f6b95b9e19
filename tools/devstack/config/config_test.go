package config

import (
	"reflect"
	"strings"
	"testing"

	pkgconfig "quarters.dev/pkg/config"
)

func TestLoadFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    func(Config) bool
		wantErr []string
	}{
		{name: "defaults", env: nil, want: func(c Config) bool {
			return c == Config{Listen: "127.0.0.1:8080", DataDir: ".devstack", AdminToken: "dev-admin-token", Demo: true, WebhookAllowHTTP: true, WebhookAllowPrivate: true}
		}},
		{name: "empty and blank mean unset", env: map[string]string{"QUARTERS_LISTEN": "", "QUARTERS_DEMO": " ", "QUARTERS_ADMIN_TOKEN": ""},
			want: func(c Config) bool { return c == Defaults() }},
		{name: "port zero", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:0"}, want: func(c Config) bool { return c.Listen == "127.0.0.1:0" }},
		{name: "demo off", env: map[string]string{"QUARTERS_DEMO": "0"}, want: func(c Config) bool { return !c.Demo }},
		{name: "booleans as everywhere", env: map[string]string{"QUARTERS_DEMO": "FALSE", "QUARTERS_WEBHOOK_ALLOW_HTTP": "f", "QUARTERS_WEBHOOK_ALLOW_PRIVATE": "T"},
			want: func(c Config) bool { return !c.Demo && !c.WebhookAllowHTTP && c.WebhookAllowPrivate }},
		{name: "redis url", env: map[string]string{"QUARTERS_REDIS_URL": "redis://127.0.0.1:6379/0"}, want: func(c Config) bool { return c.RedisURL == "redis://127.0.0.1:6379/0" }},
		{name: "data dir and token", env: map[string]string{"QUARTERS_DATA_DIR": "/tmp/x", "QUARTERS_ADMIN_TOKEN": "t0k"}, want: func(c Config) bool { return c.DataDir == "/tmp/x" && c.AdminToken == "t0k" }},
		{name: "listen without port", env: map[string]string{"QUARTERS_LISTEN": "8080"}, wantErr: []string{"QUARTERS_LISTEN"}},
		{name: "listen bad port", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:http"}, wantErr: []string{"QUARTERS_LISTEN"}},
		{name: "listen port too big", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:70000"}, wantErr: []string{"QUARTERS_LISTEN"}},
		{name: "demo not a bool", env: map[string]string{"QUARTERS_DEMO": "yes please"}, wantErr: []string{"QUARTERS_DEMO"}},
		{name: "redis not a url", env: map[string]string{"QUARTERS_REDIS_URL": "localhost:6379"}, wantErr: []string{"QUARTERS_REDIS_URL"}},
		{name: "token with space", env: map[string]string{"QUARTERS_ADMIN_TOKEN": "a b"}, wantErr: []string{"QUARTERS_ADMIN_TOKEN"}},
		{name: "every problem at once", env: map[string]string{"QUARTERS_WEBHOOK_ALLOW_HTTP": "maybe", "QUARTERS_LISTEN": "x"},
			wantErr: []string{"QUARTERS_WEBHOOK_ALLOW_HTTP", "QUARTERS_LISTEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := LoadFrom(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != nil {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want one naming %s", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(c) {
				t.Fatalf("config = %+v", c)
			}
		})
	}
}

// A value the dev stack accepts means the same to the services' reader: the
// dev stack hands QUARTERS_WEBHOOK_* on to them.
func TestAgreesWithTheServicesReader(t *testing.T) {
	t.Parallel()
	type serviceSide struct {
		AllowHTTP bool `env:"QUARTERS_WEBHOOK_ALLOW_HTTP" default:"true"`
	}
	for _, v := range []string{"", " ", "0", "1", "true", "FALSE", "t", "F", "no", "on"} {
		env := func(k string) (string, bool) {
			if k == "QUARTERS_WEBHOOK_ALLOW_HTTP" {
				return v, true
			}
			return "", false
		}
		dev, devErr := LoadFrom(env)
		var svc serviceSide
		svcErr := pkgconfig.LoadFrom(env, &svc)
		if (devErr == nil) != (svcErr == nil) || (devErr == nil && !reflect.DeepEqual(dev.WebhookAllowHTTP, svc.AllowHTTP)) {
			t.Errorf("%q: dev stack %v (%v), services %v (%v)", v, dev.WebhookAllowHTTP, devErr, svc.AllowHTTP, svcErr)
		}
	}
}
