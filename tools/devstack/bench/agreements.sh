#!/usr/bin/env bash
# Benchmark of the agreements service through the dev stack's ingress: PUT
# agreement latency, 25 MB document upload and download throughput, and the
# service's heap while an upload streams. Starts its own dev stack on a
# temporary data directory (auth and bookings must exist). Arguments go to
# the program: -puts N -clients N -rounds N.
set -euo pipefail
cd "$(dirname "$0")/../../.."
exec go run ./tools/devstack/bench/agreementsbench "$@"
