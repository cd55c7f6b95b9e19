#!/usr/bin/env bash
# Load benchmark of the catalog's authenticated GET /api/v1/listings, served
# by the catalog process directly (bearer token checked against Redis,
# listings from the catalog's view), against a bare Go net/http server
# answering the same body bytes. Loopback only; each measurement is one wrk
# run of BENCH_DURATION (default 8s) after a 2s warm-up at 50 connections and
# 2 threads, for BENCH_ROUNDS rounds (default 3), median shown. The catalog
# runs inside a dev stack started for the benchmark on a temporary data dir.
set -euo pipefail

cd "$(dirname "$0")/../../.."
duration=${BENCH_DURATION:-8s}
rounds=${BENCH_ROUNDS:-3}
conns=${BENCH_CONNECTIONS:-50}
threads=${BENCH_THREADS:-2}
base=${BENCH_PORT_BASE:-18180}
stack_port=$base up_port=$((base + 1))
path=/api/v1/listings

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

go build -o "$work/devstack" ./tools/devstack
go build -o "$work/upstream" ./tools/devstack/bench/upstream

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

catalog=$(sed -nE 's/^started catalog \(api ([0-9.:]+),.*/\1/p' "$work/stack.log")
catalog_pid=$(pgrep -f "^$work/data/bin/catalog" | head -1)
redis_port=$(sed -nE 's#^redis: redis://127\.0\.0\.1:([0-9]+)/.*#\1#p' "$work/stack.log")
redis_pid=$(pgrep -f "redis-server 127.0.0.1:$redis_port" | head -1 || true)
demo=$(tr -d '\n ' <"$work/data/demo.json")
client=$(sed -E 's/.*"clientId":"([^"]+)".*/\1/' <<<"$demo")
secret=$(sed -E 's/.*"clientSecret":"([^"]+)".*/\1/' <<<"$demo")
token=$(curl -s -u "$client:$secret" -d grant_type=client_credentials \
	"http://127.0.0.1:$stack_port/api/v1/oauth2/token" | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
curl -s -H "Authorization: Bearer $token" "http://$catalog$path" >"$work/body.json"
echo "catalog at $catalog answers $(wc -c <"$work/body.json") bytes: $(head -c 200 "$work/body.json")" >&2

"$work/upstream" -addr "127.0.0.1:$up_port" -body-file "$work/body.json" &
up_pid=$!
pids+=($up_pid)
sleep 0.5

cpu_ticks() {
	local total=0 pid
	for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
	echo "$total"
}
hz=$(getconf CLK_TCK)

# measure NAME URL PID... [-- HEADER]: "requests/s p99 cpu-µs-per-request".
measure() {
	local name=$1 url=$2
	shift 2
	local hdr=()
	[ -n "${AUTH:-}" ] && hdr=(-H "Authorization: Bearer $AUTH")
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
	AUTH='' measure bare "http://127.0.0.1:$up_port$path" "$up_pid" >>"$work/bare.rounds"
	# shellcheck disable=SC2086 # redis_pid may be empty
	AUTH=$token measure catalog "http://$catalog$path" "$catalog_pid" $redis_pid >>"$work/catalog.rounds"
	echo "round $round (requests/s, p99, CPU µs/request): bare $(tail -1 "$work/bare.rounds"), catalog $(tail -1 "$work/catalog.rounds")" >&2
done
median() { sort -n "$work/$1.rounds" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'; }
read -r bare_rps bare_p99 bare_cpu < <(median bare)
read -r cat_rps cat_p99 cat_cpu < <(median catalog)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100 * a / b}'; }

echo
echo "wrk -t$threads -c$conns -d$duration --latency, median of $rounds rounds ($(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "| target | requests/s | p99 | vs bare | CPU µs per request |"
echo "|---|---:|---:|---:|---:|"
echo "| bare Go net/http, same body | $bare_rps | $bare_p99 | 100% | $bare_cpu (server) |"
echo "| catalog, bearer token, GET $path | $cat_rps | $cat_p99 | $(ratio "$cat_rps" "$bare_rps") | $cat_cpu (catalog + Redis) |"
echo
echo "catalog / bare throughput: $(ratio "$cat_rps" "$bare_rps") (target at least 50%); catalog p99 $cat_p99 (target under 10ms)"
