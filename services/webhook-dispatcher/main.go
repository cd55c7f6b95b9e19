// Command webhook-dispatcher turns the domain events of every service into
// signed webhook deliveries, and serves the admin routes for webhooks and
// their deliveries.
package main

import (
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/webhook-dispatcher/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("webhook-dispatcher", &cfg, service.Build(&cfg))
}
