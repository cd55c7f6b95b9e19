package service_test

import (
	"strings"
	"testing"

	"quarters.dev/pkg/config"
	"quarters.dev/services/auth/internal/service"
)

func TestRefusesToStartWithoutAdminTokenOrStores(t *testing.T) {
	t.Parallel()
	var cfg service.Config
	err := config.LoadFrom(func(string) (string, bool) { return "", false }, &cfg)
	if err == nil {
		t.Fatal("configuration without any variable accepted")
	}
	for _, name := range []string{"QUARTERS_ADMIN_TOKEN", "QUARTERS_MONGO_URI", "QUARTERS_REDIS_URL", "QUARTERS_KAFKA_BROKERS"} {
		if !strings.Contains(err.Error(), name+" is required") {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}
