// Command catalog keeps property drafts and serves their published listing
// snapshots: GET /api/v1/listings, GET /api/v1/listings/{id} and the admin
// routes under /admin/v1/orgs/{orgId}/properties.
package main

import (
	_ "time/tzdata" // listing time zones are checked without the host's zoneinfo

	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/catalog/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("catalog", &cfg, service.Build(&cfg))
}
