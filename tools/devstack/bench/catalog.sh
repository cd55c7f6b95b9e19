#!/usr/bin/env bash
# Load benchmarks of the catalog's authenticated reads, on loopback only, in
# one run against one dev stack started for it on a temporary data dir:
#
#  1. GET /api/v1/listings/{id} (a demo listing) with a bearer token, served
#     by the catalog process directly, against a bare Go net/http server
#     answering the same body bytes;
#  2. the same request through the dev stack's ingress to the catalog,
#     against the same ingress code (tools/devstack/bench/ingressbench) in
#     front of that bare server;
#  3. GET /api/v1/listings through the ingress for an org with
#     BENCH_LISTINGS (default 500) published listings: latency (p99).
#
# 1 and 2: wrk -t2 -c50 for BENCH_DURATION (default 8s) after a 2s warm-up,
# the four targets in turn for BENCH_ROUNDS rounds (default 3), median round
# shown. 3: wrk -t2 -c$BENCH_LIST_CONNECTIONS (default 4), one run.
set -euo pipefail

cd "$(dirname "$0")/../../.."
duration=${BENCH_DURATION:-8s}
rounds=${BENCH_ROUNDS:-3}
conns=${BENCH_CONNECTIONS:-50}
threads=${BENCH_THREADS:-2}
listings=${BENCH_LISTINGS:-500}
list_conns=${BENCH_LIST_CONNECTIONS:-4}
base=${BENCH_PORT_BASE:-18180}
stack_port=$base up_port=$((base + 1)) ibench_port=$((base + 2))

command -v wrk >/dev/null || {
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >&2
	else
		echo "catalog.sh needs wrk (Debian: apt-get install wrk)" >&2
		exit 1
	fi
}

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

for port in "$stack_port" "$up_port" "$ibench_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "port $port is in use; set BENCH_PORT_BASE" >&2
		exit 1
	fi
done

go build -o "$work/devstack" ./tools/devstack
go build -o "$work/upstream" ./tools/devstack/bench/upstream
go build -o "$work/ingressbench" ./tools/devstack/bench/ingressbench
go build -o "$work/catalogseed" ./tools/devstack/bench/catalogseed

wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on port $1" >&2
	exit 1
}

echo "starting a dev stack in $work (services build first)" >&2
QUARTERS_LISTEN="127.0.0.1:$stack_port" QUARTERS_DATA_DIR="$work/data" QUARTERS_DEMO=1 \
	"$work/devstack" >"$work/stack.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do
	grep -q "^quarters ready" "$work/stack.log" && break
	if ! kill -0 "${pids[0]}" 2>/dev/null; then cat "$work/stack.log" >&2; exit 1; fi
	sleep 0.5
done
grep -q "^quarters ready" "$work/stack.log" || { cat "$work/stack.log" >&2; exit 1; }
[ -s "$work/data/demo.json" ] || { echo "the dev stack did not seed its demo org:" >&2; cat "$work/stack.log" >&2; exit 1; }

catalog=$(sed -nE 's/^started catalog \(api ([0-9.:]+),.*/\1/p' "$work/stack.log")
catalog_ops=$(sed -nE 's/^started catalog \(api [0-9.:]+, ops ([0-9.:]+).*/\1/p' "$work/stack.log")
catalog_pid=$(pgrep -f "^$work/data/bin/catalog" | head -1)
redis_port=$(sed -nE 's#^redis: redis://127\.0\.0\.1:([0-9]+)/.*#\1#p' "$work/stack.log")
redis_pid=$(pgrep -f "redis-server 127.0.0.1:$redis_port" | head -1 || true)
demo=$(tr -d '\n ' <"$work/data/demo.json")
client=$(sed -E 's/.*"clientId":"([^"]+)".*/\1/' <<<"$demo")
secret=$(sed -E 's/.*"clientSecret":"([^"]+)".*/\1/' <<<"$demo")
listing=$(sed -E 's/.*"listings":\["([^"]+)".*/\1/' <<<"$demo")
mint() {
	curl -s -u "$1:$2" -d grant_type=client_credentials "http://127.0.0.1:$stack_port/api/v1/oauth2/token" |
		sed -E 's/.*"access_token":"([^"]+)".*/\1/'
}
token=$(mint "$client" "$secret")
path=/api/v1/listings/$listing
curl -sf -H "Authorization: Bearer $token" "http://$catalog$path" >"$work/body.json"
echo "GET $path answers $(wc -c <"$work/body.json") bytes" >&2

"$work/upstream" -addr "127.0.0.1:$up_port" -body-file "$work/body.json" &
up_pid=$!
pids+=($up_pid)
"$work/ingressbench" -listen "127.0.0.1:$ibench_port" -upstream "127.0.0.1:$up_port" 2>/dev/null &
ibench_pid=$!
pids+=($ibench_pid)
wait_port "$up_port"
wait_port "$ibench_port"
cmp -s "$work/body.json" <(curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$ibench_port$path") ||
	{ echo "the bare server does not answer the same bytes" >&2; exit 1; }

cpu_ticks() {
	local total=0 pid
	for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
	echo "$total"
}
hz=$(getconf CLK_TCK)

# measure NAME URL PID...: "requests/s p99 cpu-µs-per-request" of one wrk
# run with the bearer token, after a warm-up; CPU is the listed processes'.
measure() {
	local name=$1 url=$2
	shift 2
	local hdr=(-H "Authorization: Bearer $token")
	wrk -t"$threads" -c"$conns" -d2s "${hdr[@]}" "$url" >/dev/null
	local before after
	before=$(cpu_ticks "$@")
	wrk -t"$threads" -c"$conns" -d"$duration" --latency "${hdr[@]}" "$url" >"$work/$name.txt"
	after=$(cpu_ticks "$@")
	local errors
	errors=$(awk '/Non-2xx|Socket errors/' "$work/$name.txt")
	if [ -n "$errors" ]; then echo "$name: $errors" >&2; fi
	awk -v t=$((after - before)) -v hz="$hz" '
		/^Requests\/sec:/ {r = $2} $1 == "99%" {p = $2} /requests in/ {n = $1}
		END {printf "%s %s %.1f\n", r, p, t * 1e6 / hz / n}' "$work/$name.txt"
}

for round in $(seq "$rounds"); do
	measure bare "http://127.0.0.1:$up_port$path" "$up_pid" >>"$work/bare.rounds"
	# shellcheck disable=SC2086 # redis_pid may be empty
	measure catalog "http://$catalog$path" "$catalog_pid" $redis_pid >>"$work/catalog.rounds"
	measure ingress_bare "http://127.0.0.1:$ibench_port$path" "$ibench_pid" "$up_pid" >>"$work/ingress_bare.rounds"
	# shellcheck disable=SC2086
	measure ingress_catalog "http://127.0.0.1:$stack_port$path" "$catalog_pid" $redis_pid >>"$work/ingress_catalog.rounds"
	echo "round $round (requests/s, p99, CPU µs/request): bare $(tail -1 "$work/bare.rounds"), catalog $(tail -1 "$work/catalog.rounds"), ingress→bare $(tail -1 "$work/ingress_bare.rounds"), ingress→catalog $(tail -1 "$work/ingress_catalog.rounds")" >&2
done
# BENCH_PROFILE=FILE: one more catalog run under the same load while a CPU
# profile of the catalog is taken from its ops port (go tool pprof -top FILE).
if [ -n "${BENCH_PROFILE:-}" ]; then
	curl -s -o "$BENCH_PROFILE" "http://$catalog_ops/debug/pprof/profile?seconds=6" &
	prof=$!
	wrk -t"$threads" -c"$conns" -d8s -H "Authorization: Bearer $token" "http://$catalog$path" >/dev/null
	wait "$prof"
	echo "CPU profile of the catalog under load: $BENCH_PROFILE" >&2
fi
median() { sort -n "$work/$1.rounds" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'; }
read -r bare_rps bare_p99 bare_cpu < <(median bare)
read -r cat_rps cat_p99 cat_cpu < <(median catalog)
read -r ib_rps ib_p99 ib_cpu < <(median ingress_bare)
read -r ic_rps ic_p99 ic_cpu < <(median ingress_catalog)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100 * a / b}'; }

echo "seeding an org with $listings published listings" >&2
read -r _ big_client big_secret _ < <("$work/catalogseed" -admin "http://127.0.0.1:$stack_port/admin/v1" -n "$listings")
token=$(mint "$big_client" "$big_secret")
list_url="http://127.0.0.1:$stack_port/api/v1/listings"
count=$(curl -s -H "Authorization: Bearer $token" "$list_url" | grep -o '"publishedAt"' | wc -l)
size=$(curl -s -H "Authorization: Bearer $token" "$list_url" | wc -c)
wrk -t"$threads" -c"$list_conns" -d2s -H "Authorization: Bearer $token" "$list_url" >/dev/null
wrk -t"$threads" -c"$list_conns" -d"$duration" --latency -H "Authorization: Bearer $token" "$list_url" >"$work/list.txt"
list_rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/list.txt")
list_p50=$(awk '$1 == "50%" {print $2}' "$work/list.txt")
list_p99=$(awk '$1 == "99%" {print $2}' "$work/list.txt")

echo
echo "GET $path ($(wc -c <"$work/body.json") bytes): wrk -t$threads -c$conns -d$duration --latency, median of $rounds rounds ($(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "| target | requests/s | p99 | ratio | CPU µs per request |"
echo "|---|---:|---:|---:|---:|"
echo "| bare Go net/http, same bytes | $bare_rps | $bare_p99 | 100% | $bare_cpu (server) |"
echo "| catalog directly, bearer token | $cat_rps | $cat_p99 | $(ratio "$cat_rps" "$bare_rps") of bare | $cat_cpu (catalog + Redis) |"
echo "| ingress → bare server | $ib_rps | $ib_p99 | 100% | $ib_cpu (ingress + server) |"
echo "| ingress → catalog, bearer token | $ic_rps | $ic_p99 | $(ratio "$ic_rps" "$ib_rps") of ingress → bare | $ic_cpu (catalog + Redis) |"
echo
echo "catalog / bare: $(ratio "$cat_rps" "$bare_rps") (target at least 50%); through the ingress: $(ratio "$ic_rps" "$ib_rps") (target at least 80%)"
# The same ratios round by round: each round's targets ran within a minute
# of each other, so these show how far the machine moved under the run.
round_ratios() { paste -d' ' "$work/$1.rounds" "$work/$2.rounds" | awk '{printf "%s%.0f%%", (NR > 1 ? ", " : ""), 100 * $4 / $1}'; }
echo "round by round: catalog / bare $(round_ratios bare catalog); through the ingress $(round_ratios ingress_bare ingress_catalog)"
echo
echo "GET /api/v1/listings through the ingress, $count listings ($size bytes): wrk -t$threads -c$list_conns -d$duration --latency"
echo "requests/s $list_rps, p50 $list_p50, p99 $list_p99 (target p99 under 50ms)"
