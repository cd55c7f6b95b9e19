package service_test

import (
	"strings"
	"testing"

	"quarters.dev/pkg/config"
	"quarters.dev/services/availability/internal/service"
)

func TestConfiguration(t *testing.T) {
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
	env := map[string]string{
		"QUARTERS_ADMIN_TOKEN": "t", "QUARTERS_MONGO_URI": "mongodb://m", "QUARTERS_REDIS_URL": "redis://r:6379/0",
		"QUARTERS_KAFKA_BROKERS": "k1:9092,k2:9092",
	}
	cfg = service.Config{}
	if err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ConsumerGroup != "availability" || cfg.Kafka.Topic("calendars") != "quarters.calendars" || len(cfg.Kafka.Brokers) != 2 {
		t.Fatalf("defaults: %+v", cfg)
	}
	env["QUARTERS_AVAILABILITY_CONSUMER_GROUP"] = "availability-blue"
	cfg = service.Config{}
	if err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &cfg); err != nil || cfg.ConsumerGroup != "availability-blue" {
		t.Fatalf("consumer group: %q %v", cfg.ConsumerGroup, err)
	}
}
