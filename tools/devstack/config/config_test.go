package config

import (
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    func(Config) bool
		wantErr string
	}{
		{name: "defaults", env: nil, want: func(c Config) bool { return c == Defaults() }},
		{name: "port zero", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:0"}, want: func(c Config) bool { return c.Listen == "127.0.0.1:0" }},
		{name: "demo off", env: map[string]string{"QUARTERS_DEMO": "0"}, want: func(c Config) bool { return !c.Demo }},
		{name: "redis url", env: map[string]string{"QUARTERS_REDIS_URL": "redis://127.0.0.1:6379/0"}, want: func(c Config) bool { return c.RedisURL == "redis://127.0.0.1:6379/0" }},
		{name: "data dir and token", env: map[string]string{"QUARTERS_DATA_DIR": "/tmp/x", "QUARTERS_ADMIN_TOKEN": "t0k"}, want: func(c Config) bool { return c.DataDir == "/tmp/x" && c.AdminToken == "t0k" }},
		{name: "listen without port", env: map[string]string{"QUARTERS_LISTEN": "8080"}, wantErr: "QUARTERS_LISTEN"},
		{name: "listen bad port", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:http"}, wantErr: "QUARTERS_LISTEN"},
		{name: "listen port too big", env: map[string]string{"QUARTERS_LISTEN": "127.0.0.1:70000"}, wantErr: "QUARTERS_LISTEN"},
		{name: "demo not a bool", env: map[string]string{"QUARTERS_DEMO": "yes please"}, wantErr: "QUARTERS_DEMO"},
		{name: "redis not a url", env: map[string]string{"QUARTERS_REDIS_URL": "localhost:6379"}, wantErr: "QUARTERS_REDIS_URL"},
		{name: "token with space", env: map[string]string{"QUARTERS_ADMIN_TOKEN": "a b"}, wantErr: "QUARTERS_ADMIN_TOKEN"},
		{name: "webhook flag", env: map[string]string{"QUARTERS_WEBHOOK_ALLOW_HTTP": "maybe"}, wantErr: "QUARTERS_WEBHOOK_ALLOW_HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
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
