// Command availability serves the live calendar of published listings and
// the admin routes of calendar blocks, and keeps projections of orgs,
// listings and reservations from their events.
package main

import (
	// Listings name IANA zones; carry the zone database so that an image
	// without /usr/share/zoneinfo still finds them.
	_ "time/tzdata"

	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/availability/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("availability", &cfg, service.Build(&cfg))
}
