#!/usr/bin/env bash
# Health-check load benchmark: CHECKS checks (default 30,000) every INTERVAL (10s) against
# loopback targets that accept connections and never answer, so that every probe runs to its
# TIMEOUT (5s), the worst case. Reports the meridian process's CPU (share of one core) over a
# measurement window after a warm-up, its peak RSS, and the probe rate it achieved.
#
#   bench/health.sh                 # TYPE=tcp, then TYPE=http
#   TYPE=http CHECKS=30000 bench/health.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
CHECKS=${CHECKS:-30000}
INTERVAL=${INTERVAL:-10s}
TIMEOUT=${TIMEOUT:-5s}
WARMUP=${WARMUP:-25}     # seconds: the first cycle is spread over one interval, then steady state
MEASURE=${MEASURE:-30}   # seconds of measurement
PORTS=${PORTS:-200}      # target ports; checks are spread over them
TYPES=${TYPE:-tcp http}

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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$work/blackhole" -ports "$PORTS" >"$work/ports" &
pids+=($!)
for _ in $(seq 100); do [ "$(wc -l <"$work/ports")" -ge "$PORTS" ] && break; sleep 0.1; done
mapfile -t ports <"$work/ports"

clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sys_ticks() { awk '{print $15}' "/proc/$1/stat"; }

echo "| type | checks | interval | timeout | CPU (one core; of it system) | peak RSS | RSS at end | probes completed | cycles skipped | threads |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for type in $TYPES; do
	# One record per 3 backends, each backend with one distinct check (a distinct uri or
	# payload, so that no two checks are deduplicated). TCP checks send and wait for a reply
	# that never comes, HTTP checks wait for a response: every probe runs to its timeout.
	yaml="$work/zone-$type.yml"
	{
		echo "records:"
		for ((r = 0; r < CHECKS / 3; r++)); do
			echo "  r$r.bench.test.:"
			echo "    scrape_interval: $INTERVAL"
			echo "    scrape_timeout: $TIMEOUT"
			echo "    scrape_retries: 0"
			echo "    backends:"
			for b in 0 1 2; do
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
	} >"$yaml"
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
	t0=$(cpu_ticks "$pid")
	s0=$(sys_ticks "$pid")
	sleep "$MEASURE"
	t1=$(cpu_ticks "$pid")
	s1=$(sys_ticks "$pid")
	probes1=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^coredns_gslb_healthcheck_total\{/ {s += $2} END {print s + 0}')
	skipped=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^coredns_gslb_healthcheck_skipped_total\{/ {s += $2} END {print s + 0}')
	if [ -n "${PROFILE_DIR:-}" ]; then
		wait "$profiler"
		curl -s "127.0.0.1:$pprof/debug/pprof/heap" >"$PROFILE_DIR/heap-$type.pprof"
		curl -s "127.0.0.1:$pprof/debug/pprof/heap?debug=1" | grep '^# ' >"$PROFILE_DIR/memstats-$type.txt"
	fi
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
	threads=$(awk '/Threads/ {print $2}' "/proc/$pid/status")
	cpu=$(awk -v a="$t0" -v b="$t1" -v c="$clk" -v m="$MEASURE" 'BEGIN {printf "%.1f", 100 * (b - a) / c / m}')
	sys=$(awk -v a="$s0" -v b="$s1" -v c="$clk" -v m="$MEASURE" 'BEGIN {printf "%.1f", 100 * (b - a) / c / m}')
	rate=$(awk -v a="$probes0" -v b="$probes1" -v m="$MEASURE" 'BEGIN {printf "%.0f", (b - a) / m}')
	expected=$(awk -v n="$CHECKS" -v i="${INTERVAL%s}" 'BEGIN {printf "%.0f", n / i}')
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	printf '| %s | %d | %s | %s | %s%% (%s%%) | %d MB | %d MB | %s/s (expected %s/s) | %s | %s |\n' \
		"$type" "$CHECKS" "$INTERVAL" "$TIMEOUT" "$cpu" "$sys" $((hwm / 1024)) $((rss / 1024)) "$rate" "$expected" "$skipped" "$threads"
done
