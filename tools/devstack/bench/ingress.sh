#!/usr/bin/env bash
# Load benchmark of the dev stack's ingress against nginx, both proxying the
# same bare Go upstream, on loopback only. Each measurement is one wrk run of
# BENCH_DURATION (default 8s) after a 2s warm-up, at 50 connections and 2
# threads. The four targets are measured in turn for BENCH_ROUNDS rounds
# (default 3) so that other load on the machine hits them alike; the table
# shows each target's median round. docs/benchmarks.md records the figures.
set -euo pipefail

cd "$(dirname "$0")/../../.."
duration=${BENCH_DURATION:-8s}
rounds=${BENCH_ROUNDS:-3}
conns=${BENCH_CONNECTIONS:-50}
threads=${BENCH_THREADS:-2}
base=${BENCH_PORT_BASE:-18080}
up_port=$((base + 1)) nginx_port=$((base + 2)) ingress_port=$((base + 3)) std_port=$((base + 4))
path=/api/v1/listings

if ! command -v wrk >/dev/null || ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing wrk and nginx" >&2
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx >&2
	else
		echo "ingress.sh needs wrk and nginx (Debian: apt-get install wrk nginx)" >&2
		exit 1
	fi
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

for port in "$up_port" "$nginx_port" "$ingress_port" "$std_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "port $port is in use; set BENCH_PORT_BASE" >&2
		exit 1
	fi
done

go build -o "$work/upstream" ./tools/devstack/bench/upstream
go build -o "$work/ingressbench" ./tools/devstack/bench/ingressbench

wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on port $1" >&2
	exit 1
}

"$work/upstream" -addr "127.0.0.1:$up_port" &
up_pid=$!
pids+=($up_pid)
wait_port "$up_port"

mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<NGINX
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx/error.log warn;
daemon on;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $work/nginx/body;
	proxy_temp_path $work/nginx/proxy;
	fastcgi_temp_path $work/nginx/fastcgi;
	uwsgi_temp_path $work/nginx/uwsgi;
	scgi_temp_path $work/nginx/scgi;
	upstream quarters { server 127.0.0.1:$up_port; keepalive 256; }
	server {
		listen 127.0.0.1:$nginx_port;
		location / {
			proxy_pass http://quarters;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$host;
			proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
			proxy_set_header X-Forwarded-Proto \$scheme;
		}
	}
}
NGINX
"$nginx_bin" -p "$work/nginx" -c "$work/nginx.conf"
wait_port "$nginx_port"

"$work/ingressbench" -listen "127.0.0.1:$ingress_port" -upstream "127.0.0.1:$up_port" &
ingress_pid=$!
pids+=($ingress_pid)
wait_port "$ingress_port"
# The same ingress on net/http's Transport (httputil.ReverseProxy's
# default): the comparison that justifies the ingress's own pool.
"$work/ingressbench" -standard-transport -listen "127.0.0.1:$std_port" -upstream "127.0.0.1:$up_port" &
std_pid=$!
pids+=($std_pid)
wait_port "$std_port"
nginx_pids=$(cat "$work/nginx.pid"; pgrep -P "$(cat "$work/nginx.pid")")

# cpu_ticks PID... prints the user+system CPU ticks the processes have used.
cpu_ticks() {
	local total=0 pid
	for pid in "$@"; do
		total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$total"
}
hz=$(getconf CLK_TCK)

# measure NAME PORT PID... prints "requests/s p99 cpu-µs-per-request" of one
# wrk run after a warm-up; the CPU is what the listed processes used, which
# other load on the machine does not inflate the way it cuts throughput.
measure() {
	local name=$1 port=$2
	shift 2
	local url="http://127.0.0.1:$port$path"
	wrk -t"$threads" -c"$conns" -d2s "$url" >/dev/null
	local before after
	before=$(cpu_ticks "$@")
	wrk -t"$threads" -c"$conns" -d"$duration" --latency "$url" >"$work/$name.txt"
	after=$(cpu_ticks "$@")
	local rps p99 reqs errors
	rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/$name.txt")
	p99=$(awk '$1 == "99%" {print $2}' "$work/$name.txt")
	reqs=$(awk '/requests in/ {print $1}' "$work/$name.txt")
	errors=$(awk '/Non-2xx|Socket errors/' "$work/$name.txt")
	if [ -n "$errors" ]; then echo "$name: $errors" >&2; fi
	awk -v r="$rps" -v p="$p99" -v t=$((after - before)) -v hz="$hz" -v n="$reqs" \
		'BEGIN {printf "%s %s %.1f\n", r, p, t * 1e6 / hz / n}'
}

for round in $(seq "$rounds"); do
	measure bare "$up_port" "$up_pid" >>"$work/bare.rounds"
	# shellcheck disable=SC2086 # one pid per word
	measure nginx "$nginx_port" $nginx_pids >>"$work/nginx.rounds"
	measure ingress "$ingress_port" "$ingress_pid" >>"$work/ingress.rounds"
	measure std "$std_port" "$std_pid" >>"$work/std.rounds"
	echo "round $round (requests/s, p99, proxy CPU µs/request): bare $(tail -1 "$work/bare.rounds"), nginx $(tail -1 "$work/nginx.rounds"), ingress $(tail -1 "$work/ingress.rounds"), ingress on net/http's Transport $(tail -1 "$work/std.rounds")" >&2
done
# median prints the median round (by requests/s) of a target.
median() { sort -n "$work/$1.rounds" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'; }
read -r bare_rps bare_p99 bare_cpu < <(median bare)
read -r nginx_rps nginx_p99 nginx_cpu < <(median nginx)
read -r ingress_rps ingress_p99 ingress_cpu < <(median ingress)
read -r std_rps std_p99 std_cpu < <(median std)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100 * a / b}'; }
echo
echo "wrk -t$threads -c$conns -d$duration --latency http://127.0.0.1:PORT$path, median of $rounds rounds ($(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "| target | requests/s | p99 | vs bare upstream | CPU µs per request (of the server or proxy) |"
echo "|---|---:|---:|---:|---:|"
echo "| bare Go upstream | $bare_rps | $bare_p99 | 100% | $bare_cpu (upstream) |"
echo "| nginx → upstream (keepalive) | $nginx_rps | $nginx_p99 | $(ratio "$nginx_rps" "$bare_rps") | $nginx_cpu (nginx) |"
echo "| devstack ingress → upstream | $ingress_rps | $ingress_p99 | $(ratio "$ingress_rps" "$bare_rps") | $ingress_cpu (ingress) |"
echo "| devstack ingress on net/http's Transport → upstream | $std_rps | $std_p99 | $(ratio "$std_rps" "$bare_rps") | $std_cpu (ingress) |"
echo
echo "ingress / nginx throughput: $(ratio "$ingress_rps" "$nginx_rps") (target at least 60%); nginx / ingress CPU per request: $(ratio "$nginx_cpu" "$ingress_cpu")"
echo "ingress on net/http's Transport / nginx throughput: $(ratio "$std_rps" "$nginx_rps")"
