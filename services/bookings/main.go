// Command bookings serves reservations and inquiries: the public reads of
// bookings, inquiry submission with its daily allowance and confirmation
// email, and the operator routes that create, change, delete and convert.
package main

import (
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/services/bookings/internal/service"
)

func main() {
	var cfg service.Config
	bootstrap.Main("bookings", &cfg, service.Build(&cfg))
}
