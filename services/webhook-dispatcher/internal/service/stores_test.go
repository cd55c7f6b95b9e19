package service_test

import (
	"testing"

	"quarters.dev/pkg/testenv"
)

// stores returns the test's stores: a database and a topic prefix of its
// own on the shared embedded store and broker.
func stores(t *testing.T) env {
	t.Helper()
	return env{mongoURI: testenv.MongoURI(t), database: testenv.Database(t), brokers: testenv.KafkaBrokers(t), prefix: testenv.TopicPrefix(t)}
}
