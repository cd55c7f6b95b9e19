// Command auth serves the token exchange, the JSON 404 of every unmatched
// public path, and the admin routes for organisations and credential sets.
package main

import (
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/auth/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("auth", &cfg, service.Build(&cfg))
}
