#!/usr/bin/env bash
# Benchmark of webhook delivery on a dev stack started for it on a temporary
# data directory: a receiver on 127.0.0.1 registered as an org's endpoint,
# admin PATCHes of reservations (one reservation.updated each) at 200/s for
# 60 s, and the time from each write's answer to its delivery's arrival,
# with lost and duplicated deliveries counted. Arguments go to the program
# (tools/devstack/bench/webhooksbench): -rate, -duration, -pool, -workers,
# -profile DIR (CPU profiles of the bookings service, the dispatcher and the
# process hosting the ingress, the store and Kafka, taken during the run).
set -euo pipefail
cd "$(dirname "$0")/../../.."
exec go run ./tools/devstack/bench/webhooksbench "$@"
