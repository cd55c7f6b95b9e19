package service_test

import (
	"testing"

	"quarters.dev/pkg/testenv"
	"quarters.dev/services/agreements/internal/service"
)

// stores points cfg at the test's stores: a database and topic prefix of its
// own on the shared store and broker.
func stores(t *testing.T, cfg *service.Config) {
	t.Helper()
	cfg.Mongo.URI, cfg.Mongo.Database = testenv.MongoURI(t), testenv.Database(t)
	cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix = testenv.KafkaBrokers(t), testenv.TopicPrefix(t)
	cfg.Redis.URL = testenv.RedisURL(t)
	// A group of its own, so parallel tests do not rebalance each other.
	cfg.ConsumerGroup = cfg.Kafka.TopicPrefix + "agreements"
}
