// Command catalog serves published listing snapshots: GET /api/v1/listings
// and GET /api/v1/listings/{id}.
package main

import (
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/catalog/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("catalog", &cfg, service.Build(&cfg))
}
