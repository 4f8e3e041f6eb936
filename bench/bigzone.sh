#!/usr/bin/env bash
# Loading a big zone: how long `meridian check`, a server's start (until it answers) and a
# reload take with a generated zone of NAMES records, and the peak resident set size of each.
# The targets: 100,000 records checked and started in under 2 s within 150 MB (issue 20, the
# plain zone); the mixed zone of 100,000 records started in 1.5 s within 250 MB (issue 38).
#
# The zone bench.test. (about 210 bytes a record) mixes the records of the other benchmarks:
#   16 in 20  mode failover, 2 backends (priority 1 and 2), each with the tcp profile's check
#    3 in 20  mode weighted, 3 backends (weights 1, 2, 3, country US), each with the http profile
#    1 in 20  mode roundrobin, 2 backends in block style, each with an inline tcp check
# with a defaults block (record_ttl 30, scrape_interval 60s) and the two profiles in the file.
# Every backend is a loopback address (127.1.0.0/16 to 127.7.0.0/16) and every check probes
# port 9 there, which refuses: the probes run (and fail) on loopback only.
# SHAPE=plain generates instead the records of bench/reloads.sh: every record failover with two
# backends (priority 1 and 2) and no health check, one line each (about 120 bytes a record).
#
# Each measurement is run RUNS times, one after another; the report gives the best and the
# median of each. On a machine shared with other work the times vary from run to run: the best
# is the closest to what the code costs.
#   check   /usr/bin/time -v meridian check: wall time, CPU time (user and system) and maximum
#           resident set size
#   start   from the server's launch to its first answer for a record (dig every 50 ms), the
#           CPU time it used until then (/proc/PID/stat, every thread), and its VmHWM (peak
#           RSS) then; the server is stopped after each start
#   live    the server's live heap once it answers: HeapAlloc after a collection, read from the
#           pprof plugin's heap profile (/debug/pprof/heap?gc=1&debug=1)
#   reload  POST /api/v1/reload right after the start (and the live heap's collection) (the zone file unchanged, so it is parsed
#           and compiled again while the first probes run), the time the server logs for it,
#           the CPU time the server used from the request until the log line (the probes'
#           included), and the server's VmHWM after it
# On a machine shared with other work the wall times follow its load; the CPU times much less.
#
# Usage: bench/bigzone.sh   Environment: MERIDIAN_BIN, NAMES (100000), RUNS (3), SHAPE (mixed,
# or plain), KEEP (keep the work directory with the zone).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
bench_need_pkgs dig:dnsutils curl:curl
[[ -x /usr/bin/time ]] || bench_need_pkgs gtime:time
BIN="$(bench_meridian_bin "$REPO")"
NAMES="${NAMES:-100000}"
RUNS="${RUNS:-3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-bigzone.XXXXXX")"
SERVER_PID=""
cleanup() {
	bench_stop_pid "$SERVER_PID"
	if [[ -n "${KEEP:-}" ]]; then
		bench_log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

SHAPE="${SHAPE:-mixed}"
case "$SHAPE" in
mixed | plain) ;;
*)
	echo "SHAPE must be mixed or plain, not $SHAPE" >&2
	exit 2
	;;
esac
# The binary runs from a copy written by cp: the pages of a file that the Go linker had just
# written were mapped in larger runs, and the same binary's RssFile (and so its peak RSS) was
# 15 to 23 MiB higher than a copy's.
cp "$BIN" "$WORK/meridian"
BIN="$WORK/meridian"
bench_log "generating $NAMES records ($SHAPE)"
awk -v n="$NAMES" -v shape="$SHAPE" 'BEGIN {
	if (shape == "plain") {
		print "records:"
		for (i = 1; i <= n; i++)
			printf "  n%06d.bench.test.: {mode: failover, backends: [{address: 192.0.2.%d, priority: 1}, {address: 198.51.100.%d, priority: 2}]}\n", i, i % 250 + 1, i % 250 + 1
		exit
	}
	print "healthcheck_profiles:"
	print "  tcp9: {type: tcp, params: {port: 9}}"
	print "  web: {type: http, params: {port: 9, uri: /healthz}}"
	print "defaults:"
	print "  scrape_interval: 60s"
	print "  record_ttl: 30"
	print "records:"
	for (i = 1; i <= n; i++) {
		a = int(i / 250) % 250; b = i % 250 + 1
		printf "  n%06d.bench.test.:\n", i
		if (i % 20 < 16) {
			printf "    mode: failover\n    backends:\n"
			printf "      - {address: 127.1.%d.%d, priority: 1, healthchecks: [tcp9]}\n", a, b
			printf "      - {address: 127.2.%d.%d, priority: 2, healthchecks: [tcp9]}\n", a, b
		} else if (i % 20 < 19) {
			printf "    mode: weighted\n    backends:\n"
			for (j = 1; j <= 3; j++)
				printf "      - {address: 127.%d.%d.%d, weight: %d, country: US, healthchecks: [web]}\n", j + 2, a, b, j
		} else {
			printf "    mode: roundrobin\n    backends:\n"
			for (j = 6; j <= 7; j++)
				printf "      - address: 127.%d.%d.%d\n        healthchecks: [{type: tcp, params: {port: 9, timeout: 2s}}]\n", j, a, b
		}
	}
}' >"$WORK/zone.yml"
bench_log "zone: $(du -h "$WORK/zone.yml" | cut -f1)"

DNS="$(bench_pick_port)"
API="$(bench_pick_port "$DNS")"
PPROF="$(bench_pick_port "$DNS" "$API")"
bench_api_corefile "$WORK/Corefile" "$DNS" "$API" "$WORK/zone.yml"
# The pprof plugin, for the live heap; `meridian check` ignores it.
sed -i "2i\\    pprof 127.0.0.1:$PPROF" "$WORK/Corefile"

now() { date +%s.%N; }
hwm_mib() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# answers: true once the server answers a record's A query with an address (dig +short prints
# its errors on stdout too).
answers() { dig +short +time=1 +tries=1 -p "$DNS" @127.0.0.1 n000001.bench.test. A 2>/dev/null | grep -qE '^[0-9]+\.[0-9.]+$'; }

# live_mb: the server's HeapAlloc after a collection, in MB.
live_mb() {
	curl -s --max-time 60 "http://127.0.0.1:$PPROF/debug/pprof/heap?gc=1&debug=1" |
		awk '/^# HeapAlloc = / { printf "%.1f", $4 / 1e6 }'
}

CHECK_T=() CHECK_C=() CHECK_M=() START_T=() START_C=() START_M=() LIVE=() RELOAD_T=() RELOAD_C=() RELOAD_M=()
# cpu_s PID: the CPU time of the process so far, in seconds.
cpu_s() { awk -v t="$(bench_cpu_ticks "$1")" -v c="$BENCH_CLK_TCK" 'BEGIN { printf "%.2f", t / c }'; }
for run in $(seq 1 "$RUNS"); do
	bench_log "run $run/$RUNS: check"
	/usr/bin/time -v "$BIN" check -conf "$WORK/Corefile" >"$WORK/check.out" 2>"$WORK/check.err" || {
		cat "$WORK/check.out" "$WORK/check.err" >&2
		exit 1
	}
	CHECK_T+=("$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$WORK/check.err")")
	CHECK_C+=("$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$WORK/check.err")")
	CHECK_M+=("$(awk '/Maximum resident set size/ { printf "%.1f", $NF / 1024 }' "$WORK/check.err")")

	bench_log "run $run/$RUNS: start"
	T0="$(now)"
	"$BIN" -conf "$WORK/Corefile" >"$WORK/log" 2>&1 &
	SERVER_PID=$!
	until answers; do
		kill -0 "$SERVER_PID" 2>/dev/null || {
			cat "$WORK/log" >&2
			exit 1
		}
		sleep 0.05
	done
	START_T+=("$(awk -v a="$T0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')")
	START_C+=("$(cpu_s "$SERVER_PID")")
	START_M+=("$(hwm_mib "$SERVER_PID")")
	LIVE+=("$(live_mb)")
	[[ -n "${LIVE[-1]}" ]] || {
		echo "no heap profile from the pprof plugin on port $PPROF" >&2
		exit 1
	}

	bench_log "run $run/$RUNS: reload"
	C0="$(cpu_s "$SERVER_PID")"
	# The API's answer may come after its write timeout (a minute): the time is the one the
	# server logs for the reload ("reloaded 1 zones, N records in 1m2.5s").
	curl -s --max-time 600 -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$API/api/v1/reload" >"$WORK/reload.out" || true
	for _ in $(seq 1 6000); do
		grep -q 'reloaded 1 zones' "$WORK/log" && break
		sleep 0.1
	done
	C1="$(cpu_s "$SERVER_PID")"
	took="$(grep -o 'reloaded 1 zones, [0-9]* records in [0-9hmsµ.]*' "$WORK/log" | tail -1 | awk '{ print $NF }')"
	[[ -n "$took" ]] || {
		cat "$WORK/reload.out" >&2
		grep -v 'is down: connect' "$WORK/log" >&2
		exit 1
	}
	RELOAD_T+=("$(awk -v d="$took" 'BEGIN {
		s = 0
		while (match(d, /^[0-9.]+(h|ms|µs|m|s)/)) {
			v = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			u = v; sub(/^[0-9.]+/, "", u); sub(/[a-zµ]+$/, "", v)
			s += v * (u == "h" ? 3600 : u == "m" ? 60 : u == "s" ? 1 : u == "ms" ? 0.001 : 0.000001)
		}
		printf "%.2f", s
	}')")
	RELOAD_C+=("$(awk -v a="$C0" -v b="$C1" 'BEGIN { printf "%.2f", b - a }')")
	RELOAD_M+=("$(hwm_mib "$SERVER_PID")")
	bench_stop_pid "$SERVER_PID"
	SERVER_PID=""
done

best() { printf '%s\n' "$@" | sort -g | head -1; }
# row STEP TARGET N TIMES... CPUS... RSS...: one line of the report.
row() {
	local what="$1" target="$2" n="$3"
	shift 3
	local t=("${@:1:n}") c=("${@:n+1:n}") m=("${@:2*n+1}")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$what" "$(best "${t[@]}")" "$(bench_median "${t[@]}")" \
		"$(best "${c[@]}")" "$(bench_median "${c[@]}")" "$(best "${m[@]}")" "$(bench_median "${m[@]}")" "$target"
}
echo "$NAMES records ($SHAPE), $(du -h "$WORK/zone.yml" | cut -f1) zone file, $RUNS runs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| step | time best (s) | time median (s) | CPU best (s) | CPU median (s) | peak RSS best (MiB) | peak RSS median (MiB) | target |"
echo "|---|---|---|---|---|---|---|---|"
target="< 2 s, < 150 MB"
start_target="$target"
[[ "$SHAPE" == mixed ]] && target="" start_target="< 1.5 s, < 250 MB"
row "meridian check" "$target" "$RUNS" "${CHECK_T[@]}" "${CHECK_C[@]}" "${CHECK_M[@]}"
row "start until answering" "$start_target" "$RUNS" "${START_T[@]}" "${START_C[@]}" "${START_M[@]}"
row "reload (peak RSS since the start)" "" "$RUNS" "${RELOAD_T[@]}" "${RELOAD_C[@]}" "${RELOAD_M[@]}"
echo
echo "live heap after the start (MB, after a collection): best $(best "${LIVE[@]}"), median $(bench_median "${LIVE[@]}")"
