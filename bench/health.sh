#!/usr/bin/env bash
# Health-check load benchmark: CHECKS checks (default 30,000) every INTERVAL (10s) against
# loopback targets that accept connections and never answer, so that every probe runs to its
# TIMEOUT (5s), the worst case. Reports the meridian process's CPU (share of one core) over a
# measurement window after a warm-up, its peak RSS, and the probe rate it achieved.
#
# The http checks are measured side by side with gdnsd's http_status plugin (a C server on one
# event loop, the GSLB the fast path is measured against) probing the same 30,000 checks
# (a service type of its own for each check: its port and url_path, the same interval and
# timeout, all on 127.0.0.1), one after the other, RUNS times: the CPU a core this machine
# gives follows its host from one sitting to another, the ratio of the two much less. gdnsd's
# tcp_connect plugin connects and closes at once, with nothing to send or expect, so the tcp
# checks have no counterpart there. gdnsd's first round starts every check at once; where the
# descriptors are limited (20,000 here) the checks beyond the limit fail that round, and its
# steady state, one check started every 1/3,000 s, holds 15,000 connections as Meridian does.
#
#   bench/health.sh                 # TYPE=tcp, then TYPE=http (and gdnsd's http)
#   TYPE=http CHECKS=30000 RUNS=3 bench/health.sh
#   GDNSD=0 bench/health.sh         # Meridian alone
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
CHECKS=${CHECKS:-30000}
INTERVAL=${INTERVAL:-10s}
TIMEOUT=${TIMEOUT:-5s}
WARMUP=${WARMUP:-25}     # seconds: the first cycle is spread over one interval, then steady state
MEASURE=${MEASURE:-30}   # seconds of measurement
PORTS=${PORTS:-200}      # target ports; checks are spread over them
TYPES=${TYPE:-tcp http}
RUNS=${RUNS:-1}          # runs of each server, alternated
GDNSD=${GDNSD:-1}        # 0: no gdnsd runs

ulimit -n 200000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

bin=${MERIDIAN_BIN:-$repo/bin/meridian}
[ -n "${MERIDIAN_BIN:-}" ] || make -s -C "$repo" build >/dev/null
# The binary runs from a copy written by cp, as in bench/bigzone.sh: the pages of a file that
# the Go linker had just written were mapped in larger runs, and its RssFile (and peak RSS) was
# 15 to 23 MiB higher than a copy's.
cp "$bin" "$work/meridian"
bin=$work/meridian
go build -o "$work/blackhole" "$repo/bench/blackhole"
[ "$GDNSD" = 0 ] || bench_need_pkgs gdnsd:gdnsd

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$work/blackhole" -ports "$PORTS" >"$work/ports" 2>"$work/blackhole.log" &
pids+=($!)
for _ in $(seq 100); do [ "$(wc -l <"$work/ports")" -ge "$PORTS" ] && break; sleep 0.1; done
mapfile -t ports <"$work/ports"

clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sys_ticks() { awk '{print $15}' "/proc/$1/stat"; }
pct() { awk -v a="$1" -v b="$2" -v c="$clk" -v m="$MEASURE" 'BEGIN {printf "%.1f", 100 * (b - a) / c / m}'; }

# meridian_zone TYPE: the zone of CHECKS checks of TYPE.
meridian_zone() {
	local type=$1 r b i port params
	echo "records:"
	for ((r = 0; r < CHECKS / 3; r++)); do
		echo "  r$r.bench.test.:"
		echo "    scrape_interval: $INTERVAL"
		echo "    scrape_timeout: $TIMEOUT"
		echo "    scrape_retries: 0"
		echo "    backends:"
		for b in 0 1 2; do
			# One record per 3 backends, each backend with one distinct check (a distinct uri
			# or payload, so that no two checks are deduplicated). TCP checks send and wait for
			# a reply that never comes, HTTP checks wait for a response: every probe runs to
			# its timeout.
			i=$((r * 3 + b))
			port=${ports[$((i % PORTS))]}
			if [ "$type" = http ]; then
				params="{port: $port, enable_tls: false, uri: /c$i}"
			else
				params="{port: $port, send: \"c$i\", expect: pong}"
			fi
			echo "      - {address: 127.0.0.1, port: $((10000 + i)), healthchecks: [{type: $type, params: $params}]}"
		done
	done
}

# gdnsd_config DIR DNSPORT: gdnsd's configuration of the same http checks in DIR.
gdnsd_config() {
	local dir=$1 i
	mkdir -p "$dir/zones" "$dir/run" "$dir/state"
	{
		echo "options => { listen => [ 127.0.0.1:$2 ], run_dir => $dir/run, state_dir => $dir/state }"
		echo "service_types => {"
		for ((i = 0; i < CHECKS; i++)); do
			echo "  c$i => { plugin => http_status, port => ${ports[$((i % PORTS))]}, url_path => /c$i, interval => ${INTERVAL%s}, timeout => ${TIMEOUT%s} }"
		done
		echo "}"
		printf 'plugins => { multifo => { r => { a => 127.0.0.1, service_types => ['
		for ((i = 0; i < CHECKS; i++)); do printf ' c%d' "$i"; done
		echo ' ] } } }'
	} >"$dir/config"
	printf '@ 300 SOA ns1 admin 1 3600 600 86400 300\n@ 300 NS ns1\nns1 300 A 127.0.0.1\nwww 30 DYNA multifo!r\n' >"$dir/zones/bench.test"
}

# measure_start PID and measure_end PID, MEASURE seconds apart: the process's CPU and system
# CPU in that window (cpu, sys: shares of one core); memory PID: its peak and current RSS and
# its threads (hwm, rss in KiB, threads).
measure_start() { t0=$(cpu_ticks "$1"); s0=$(sys_ticks "$1"); }
measure_end() { cpu=$(pct "$t0" "$(cpu_ticks "$1")"); sys=$(pct "$s0" "$(sys_ticks "$1")"); }
memory() {
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$1/status")
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$1/status")
	threads=$(awk '/Threads/ {print $2}' "/proc/$1/status")
}
stop() {
	kill "$1"
	wait "$1" 2>/dev/null || true
}

echo "| server | type | checks | interval | timeout | CPU (one core; of it system) | peak RSS | RSS at end | probes completed | cycles skipped | threads |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
declare -A sum # the CPU figures of each server and type, summed over the runs

# run_meridian TYPE: Meridian probing the checks of TYPE, one line of the table.
run_meridian() {
	local type=$1
	yaml="$work/zone-$type.yml"
	meridian_zone "$type" >"$yaml"
	dns=$(free_port)
	metrics=$(free_port)
	pprof=$(free_port)
	cat >"$work/Corefile" <<EOC
bench.test:$dns {
    bind 127.0.0.1
    prometheus 127.0.0.1:$metrics
    pprof 127.0.0.1:$pprof
    gslb {
        zone bench.test. $yaml
    }
}
EOC
	"$bin" -conf "$work/Corefile" >"$work/meridian-$type.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	sleep "$WARMUP"
	if [ -n "${PROFILE_DIR:-}" ]; then
		# Profiles only: the CPU figure of a profiled run is a little high.
		mkdir -p "$PROFILE_DIR"
		curl -s "127.0.0.1:$pprof/debug/pprof/profile?seconds=$MEASURE" >"$PROFILE_DIR/cpu-$type.pprof" &
		profiler=$!
	fi
	probes0=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^coredns_gslb_healthcheck_total\{/ {s += $2} END {print s + 0}')
	measure_start "$pid"
	sleep "$MEASURE"
	measure_end "$pid"
	probes1=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^coredns_gslb_healthcheck_total\{/ {s += $2} END {print s + 0}')
	skipped=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^coredns_gslb_healthcheck_skipped_total\{/ {s += $2} END {print s + 0}')
	if [ -n "${PROFILE_DIR:-}" ]; then
		wait "$profiler"
		curl -s "127.0.0.1:$pprof/debug/pprof/heap" >"$PROFILE_DIR/heap-$type.pprof"
		curl -s "127.0.0.1:$pprof/debug/pprof/heap?debug=1" | grep '^# ' >"$PROFILE_DIR/memstats-$type.txt"
	fi
	memory "$pid"
	rate=$(awk -v a="$probes0" -v b="$probes1" -v m="$MEASURE" 'BEGIN {printf "%.0f", (b - a) / m}')
	stop "$pid"
	row meridian "$type" "$rate/s (expected $expected/s)" "$skipped"
}

# row SERVER TYPE PROBES SKIPPED: the table's line of a run, from cpu, sys, hwm, rss, threads.
row() {
	printf '| %s | %s | %d | %s | %s | %s%% (%s%%) | %d MB | %d MB | %s | %s | %s |\n' \
		"$1" "$2" "$CHECKS" "$INTERVAL" "$TIMEOUT" "$cpu" "$sys" $((hwm / 1024)) $((rss / 1024)) "$3" "$4" "$threads"
	sum[$1.$2]=$(awk -v a="${sum[$1.$2]:-0}" -v b="$cpu" 'BEGIN {print a + b}')
}

# run_gdnsd: gdnsd's http_status plugin on the same checks. Its warm-up starts once it serves
# (after its first round, which runs every check to its timeout). gdnsd counts no probes: its
# column says what the schedule asks for.
run_gdnsd() {
	local dir=$work/gdnsd pid
	rm -rf "$dir"
	gdnsd_config "$dir" "$(free_port)"
	gdnsd -c "$dir" start >"$work/gdnsd.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 600); do
		grep -q 'DNS listeners started' "$work/gdnsd.log" && break
		kill -0 "$pid" 2>/dev/null || {
			tail -5 "$work/gdnsd.log" >&2
			exit 1
		}
		sleep 0.1
	done
	sleep "$WARMUP"
	measure_start "$pid"
	sleep "$MEASURE"
	measure_end "$pid"
	memory "$pid"
	stop "$pid"
	row gdnsd http "(expected $expected/s)" -
}

expected=$(awk -v n="$CHECKS" -v i="${INTERVAL%s}" 'BEGIN {printf "%.0f", n / i}')
for type in $TYPES; do
	for ((run = 1; run <= RUNS; run++)); do
		run_meridian "$type"
		if [ "$type" = http ] && [ "$GDNSD" != 0 ]; then
			run_gdnsd
		fi
	done
done
if [[ " $TYPES " == *" http "* ]] && [ "$GDNSD" != 0 ]; then
	echo
	awk -v m="${sum[meridian.http]}" -v g="${sum[gdnsd.http]}" 'BEGIN {
		printf "http, CPU Meridian / gdnsd (means of %s runs): %.2f\n", '"$RUNS"', (g > 0 ? m / g : 0) }'
fi
