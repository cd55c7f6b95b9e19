// Command agreements serves a reservation's tenancy agreement: the reports of
// an external e-signature provider with their version history, the archived
// executed PDF, and the operator's contract requests and quarters-issued
// agreements.
package main

import (
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/agreements/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("agreements", &cfg, service.Build(&cfg))
}
