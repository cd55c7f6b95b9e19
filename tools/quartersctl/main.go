// Command quartersctl is the operator's and integrator's command line for
// Quarters: the admin API (/admin/v1) with the admin token, the public API
// (/api/v1) with a credential set, bulk imports and an incremental sync.
// `quartersctl --help` lists the commands; docs/quartersctl.md describes
// configuration and exit codes.
package main

import (
	"os"

	"quarters.dev/tools/quartersctl/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
