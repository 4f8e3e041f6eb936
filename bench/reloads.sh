#!/usr/bin/env bash
# RSS through reloads: one meridian serving a generated zone of NAMES records reloads it
# RELOADS times through the admin API (POST /api/v1/reload, the same as a change on disk), and
# its resident set size is read from /proc before the first reload (after START_SETTLE seconds)
# and SETTLE seconds after the last. The target (issue 20): RSS back within 20% of its start.
#
# Usage: bench/reloads.sh   Environment: MERIDIAN_BIN, NAMES (20000), RELOADS (400),
# START_SETTLE (8), SETTLE (10).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
BIN="$(bench_meridian_bin "$REPO")"
NAMES="${NAMES:-20000}"
RELOADS="${RELOADS:-400}"
START_SETTLE="${START_SETTLE:-8}"
SETTLE="${SETTLE:-10}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-reloads.XXXXXX")"
SERVER_PID=""
cleanup() {
	bench_stop_pid "$SERVER_PID"
	rm -rf "$WORK"
}
trap cleanup EXIT
{
	echo "records:"
	for i in $(seq 1 "$NAMES"); do
		printf '  n%05d.bench.test.: {mode: failover, backends: [{address: 192.0.2.%d, priority: 1}, {address: 198.51.100.%d, priority: 2}]}\n' "$i" $((i % 250 + 1)) $((i % 250 + 1))
	done
} >"$WORK/zone.yml"
read -r DNS API < <(bench_free_ports 2)
bench_api_corefile "$WORK/Corefile" "$DNS" "$API" "$WORK/zone.yml"
"$BIN" -conf "$WORK/Corefile" >"$WORK/log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$API/livez" >/dev/null && break
	sleep 0.2
done
rss() { awk '/VmRSS/ { print $2 }' "/proc/$SERVER_PID/status"; }
sleep "$START_SETTLE"
START="$(rss)"
T0="$(date +%s.%N)"
for _ in $(seq 1 "$RELOADS"); do
	curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$API/api/v1/reload" >/dev/null
done
T1="$(date +%s.%N)"
PEAK="$(awk '/VmHWM/ { print $2 }' "/proc/$SERVER_PID/status")"
sleep "$SETTLE"
END="$(rss)"
echo "| records | reloads | reload time (s) | RSS at start (MiB) | peak RSS (MiB) | RSS ${SETTLE}s after (MiB) | after / start |"
echo "|---|---|---|---|---|---|---|"
awk -v n="$NAMES" -v r="$RELOADS" -v t0="$T0" -v t1="$T1" -v s="$START" -v p="$PEAK" -v e="$END" \
	'BEGIN { printf "| %d | %d | %.1f | %.1f | %.1f | %.1f | **%.2f** |\n", n, r, t1 - t0, s / 1024, p / 1024, e / 1024, e / s }'
