#!/usr/bin/env bash
# Binary upgrades under load: one meridian serves a zone of failover records with tcp checks,
# dnsperf sends it a fixed RATE of UDP queries for DURATION seconds, and meantime the binary is
# replaced UPGRADES times (a new file renamed over the old, then SIGUSR2; the next one once the
# previous process has exited). dnsperf's "Queries lost" must be 0 (issue 20).
#
# Usage: bench/upgrade.sh   Environment: MERIDIAN_BIN, UPGRADES (20), RATE (5000),
# DURATION (40), FASTPATH (0; 1 turns the fast path on).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
bench_need_pkgs dnsperf:dnsperf
SRC_BIN="$(bench_meridian_bin "$REPO")"
UPGRADES="${UPGRADES:-20}"
RATE="${RATE:-5000}"
DURATION="${DURATION:-40}"
FASTPATH="${FASTPATH:-0}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-upgrade.XXXXXX")"
BACKEND_PID=""
cleanup() {
	bench_stop_pidfile "$WORK/pid"
	bench_stop_pid "$BACKEND_PID"
	rm -rf "$WORK"
}
trap cleanup EXIT

# install: as a package manager replaces a binary, a new file renamed over the old one.
install_bin() {
	cp "$SRC_BIN" "$WORK/meridian.new"
	mv "$WORK/meridian.new" "$WORK/meridian"
}

read -r DNS API UP < <(bench_free_ports 3)
# The backends' health checks connect to a listener that accepts and closes.
python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(128)
while True:
    c,_=s.accept(); c.close()' "$UP" &
BACKEND_PID=$!
{
	echo "records:"
	for i in $(seq 1 100); do
		printf '  n%03d.bench.test.: {mode: failover, scrape_interval: 1s, backends: [{address: 127.0.0.1, priority: 1, healthchecks: [{type: tcp, params: {port: %d}}]}, {address: 127.0.0.2, priority: 2}]}\n' "$i" "$UP"
	done
} >"$WORK/zone.yml"
for i in $(seq 1 100); do printf 'n%03d.bench.test. A\n' "$i"; done >"$WORK/queries"
fast=""
[[ "$FASTPATH" == 1 ]] && fast="fastpath"
cat >"$WORK/Corefile" <<COREFILE
.:$DNS {
    bind 127.0.0.1
    gslb {
        zone bench.test. $WORK/zone.yml
        state_persist_enable
        state_persist_path $WORK/state.json
        api_enable
        api_listen_addr 127.0.0.1
        api_listen_port $API
        api_overrides_file $WORK/overrides.json
        $fast
    }
}
COREFILE
install_bin
(cd "$WORK" && exec ./meridian -conf Corefile -pidfile "$WORK/pid" >"$WORK/log" 2>&1) &
for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$API/livez" >/dev/null && break
	sleep 0.2
done
sleep 2 # the first probes

bench_log "dnsperf at $RATE qps for ${DURATION}s, $UPGRADES upgrades$([[ -n "$fast" ]] && echo ", fast path on")"
dnsperf -s 127.0.0.1 -p "$DNS" -d "$WORK/queries" -l "$DURATION" -Q "$RATE" -c 4 -t 2 >"$WORK/dnsperf" 2>&1 &
PERF=$!
sleep 2
done_upgrades=0
T0="$(date +%s.%N)"
for n in $(seq 1 "$UPGRADES"); do
	old="$(cat "$WORK/pid")"
	install_bin
	kill -USR2 "$old"
	for _ in $(seq 1 600); do
		new="$(cat "$WORK/pid" 2>/dev/null || echo "$old")"
		[[ "$new" != "$old" ]] && bench_gone "$old" && break
		sleep 0.05
	done
	if [[ "$new" == "$old" ]] || ! bench_gone "$old"; then
		echo "upgrade $n: $old was not replaced" >&2
		break
	fi
	done_upgrades=$n
done
T1="$(date +%s.%N)"
wait "$PERF"
sent="$(awk '/Queries sent:/ { print $3 }' "$WORK/dnsperf")"
lost="$(awk '/Queries lost:/ { print $3 }' "$WORK/dnsperf")"
completed="$(awk '/Queries completed:/ { print $3 }' "$WORK/dnsperf")"
echo "| upgrades | time for them (s) | rate (qps) | queries sent | completed | lost |"
echo "|---|---|---|---|---|---|"
awk -v u="$done_upgrades" -v t0="$T0" -v t1="$T1" -v r="$RATE" -v s="$sent" -v c="$completed" -v l="$lost" \
	'BEGIN { printf "| %d | %.1f | %d | %d | %d | **%d** |\n", u, t1 - t0, r, s, c, l }'
[[ "$done_upgrades" == "$UPGRADES" && "$lost" == 0 ]]
