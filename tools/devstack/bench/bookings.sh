#!/usr/bin/env bash
# Benchmark of the bookings service on a dev stack started for it on a
# temporary data directory (embedded FerretDB store): GET /reservations with
# filters on an org with 20 000 reservations, through the ingress and, one
# request at a time, on the service's own port against the bare MongoDB
# driver query; then, on a second dev stack without those reservations,
# POST /inquiries at 50 connections. Arguments go to the program
# (tools/devstack/bench/bookingsbench) both times: -n, -properties, -seed,
# -list-clients, -list-duration, -rounds, -inquiry-conns, -inquiry-duration.
set -euo pipefail
cd "$(dirname "$0")/../../.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/bookingsbench" ./tools/devstack/bench/bookingsbench
"$bin/bookingsbench" -skip-inquiries "$@"
"$bin/bookingsbench" -skip-list "$@"
