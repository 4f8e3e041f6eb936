#!/usr/bin/env bash
# Soak: two meridian instances in cluster mode (one Redis) serve 50 failover records under a
# fixed dnsperf load each, for DURATION seconds, while the script keeps disturbing them: the
# primary backend flaps (its tcp listener closes and opens every FLAP seconds), and every EVENT
# seconds one of these happens at random: a zone reload (the file rewritten with another TTL),
# a Corefile reload (SIGUSR1), a Redis restart (stopped, then started again on its port), or an
# instance restart (instance A replaced by a new process with SIGUSR2, the restart that loses
# no query; a stop and start would lose those sent while nothing listens, by definition).
#
# It reports, every SAMPLE seconds, each instance's RSS and goroutines; at the end, the queries
# dnsperf sent and lost (must be 0), and, after the flapping stops and the cluster settles, the
# records whose answers differ between the two instances (must be 0).
#
# Usage: bench/soak.sh   Environment: MERIDIAN_BIN, DURATION (600), RATE (2000 per instance),
# FLAP (7), EVENT (15), SAMPLE (30), SETTLE (10), SEED (random).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
bench_need_pkgs dnsperf:dnsperf redis-server:redis-server dig:dnsutils
SRC_BIN="$(bench_meridian_bin "$REPO")"
DURATION="${DURATION:-600}"
RATE="${RATE:-2000}"
FLAP="${FLAP:-7}"
EVENT="${EVENT:-15}"
SAMPLE="${SAMPLE:-30}"
SETTLE="${SETTLE:-10}"
RANDOM="${SEED:-$$}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-soak.XXXXXX")"
PIDS=()

cleanup() {
	bench_stop_pidfile "$WORK/a/pid"
	bench_stop_pidfile "$WORK/b/pid"
	bench_stop_pidfile "$WORK/redis.pid"
	for p in "${PIDS[@]}"; do bench_stop_pid "$p"; done
	rm -rf "$WORK"
}
trap cleanup EXIT

read -r DNS_A DNS_B API_A API_B PROM_A PROM_B REDIS UP1 UP2 < <(bench_free_ports 9)

start_redis() {
	redis-server --port "$REDIS" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
		--pidfile "$WORK/redis.pid" --logfile "$WORK/redis.log" --dir "$WORK"
	for _ in $(seq 1 50); do
		redis-cli -p "$REDIS" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "redis did not start" >&2
	return 1
}
start_redis

# The backends: 127.0.0.1 (priority 1) flaps, 127.0.0.2 (priority 2) is always up. Each check
# connects to a listener that accepts and closes.
cat >"$WORK/listener.py" <<'PY'
import os, socket, sys, time
host, port, flap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
stop = os.path.join(os.path.dirname(sys.argv[0]), "flap.stop")
while True:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(128); s.settimeout(0.1)
    end = time.time() + flap
    while time.time() < end or (flap > 0 and os.path.exists(stop)):
        try:
            c, _ = s.accept(); c.close()
        except socket.timeout:
            pass
    s.close()
    if flap > 0 and not os.path.exists(stop):
        time.sleep(flap)
PY
python3 "$WORK/listener.py" 127.0.0.1 "$UP1" "$FLAP" &
PIDS+=($!)
python3 "$WORK/listener.py" 127.0.0.2 "$UP2" 1000000 &
PIDS+=($!)

write_zone() {
	{
		echo "records:"
		for i in $(seq 1 50); do
			printf '  n%02d.soak.test.: {mode: failover, record_ttl: %d, scrape_interval: 1s, scrape_timeout: 500ms, backends: [{address: 127.0.0.1, priority: 1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}, {address: 127.0.0.2, priority: 2, healthchecks: [{type: tcp, params: {port: %d}}]}]}\n' "$i" "$1" "$UP1" "$UP2"
		done
	} >"$WORK/zone.yml.new"
	mv "$WORK/zone.yml.new" "$WORK/zone.yml"
}
write_zone 30
for i in $(seq 1 50); do printf 'n%02d.soak.test. A\n' "$i"; done >"$WORK/queries"

# instance NAME DNS API PROM: its directory, binary and Corefile, and starts it.
instance() {
	mkdir -p "$WORK/$1"
	cp "$SRC_BIN" "$WORK/$1/meridian"
	cat >"$WORK/$1/Corefile" <<COREFILE
.:$2 {
    bind 127.0.0.1
    prometheus 127.0.0.1:$4
    gslb {
        zone soak.test. $WORK/zone.yml
        redis_enable
        redis_addr 127.0.0.1:$REDIS
        api_enable
        api_listen_addr 127.0.0.1
        api_listen_port $3
    }
}
COREFILE
	(cd "$WORK/$1" && exec ./meridian -conf Corefile -pidfile "$WORK/$1/pid" >>"$WORK/$1/log" 2>&1) &
	for _ in $(seq 1 100); do
		curl -sf "http://127.0.0.1:$3/livez" >/dev/null && return 0
		sleep 0.2
	done
	echo "instance $1 did not start" >&2
	return 1
}
instance a "$DNS_A" "$API_A" "$PROM_A"
instance b "$DNS_B" "$API_B" "$PROM_B"
sleep 3

rss() { awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$(cat "$WORK/$1/pid")/status"; }
goroutines() { curl -sf "http://127.0.0.1:$1/metrics" | awk '/^go_goroutines / { print $2 }'; }
sample() {
	printf '| %5d | %s | %s | %s | %s |\n' "$1" "$(rss a)" "$(goroutines "$PROM_A")" "$(rss b)" "$(goroutines "$PROM_B")" >>"$WORK/samples"
}

upgrade_a() {
	local old new
	old="$(cat "$WORK/a/pid")"
	cp "$SRC_BIN" "$WORK/a/meridian.new" && mv "$WORK/a/meridian.new" "$WORK/a/meridian"
	kill -USR2 "$old"
	for _ in $(seq 1 600); do
		new="$(cat "$WORK/a/pid")"
		[[ "$new" != "$old" ]] && bench_gone "$old" && return 0
		sleep 0.05
	done
	echo "instance a was not replaced" >&2
}

bench_log "soak for ${DURATION}s: $RATE qps per instance, flapping every ${FLAP}s, an event every ${EVENT}s"
dnsperf -s 127.0.0.1 -p "$DNS_A" -d "$WORK/queries" -l "$DURATION" -Q "$RATE" -c 2 -t 2 >"$WORK/dnsperf.a" 2>&1 &
PERF_A=$!
dnsperf -s 127.0.0.1 -p "$DNS_B" -d "$WORK/queries" -l "$DURATION" -Q "$RATE" -c 2 -t 2 >"$WORK/dnsperf.b" 2>&1 &
PERF_B=$!
start="$(date +%s)"
next_event=$((start + EVENT))
next_sample="$start"
declare -A events=()
ttl=30
while (($(date +%s) < start + DURATION)); do
	now="$(date +%s)"
	if ((now >= next_sample)); then
		sample $((now - start))
		next_sample=$((now + SAMPLE))
	fi
	if ((now >= next_event)); then
		case $((RANDOM % 4)) in
		0)
			ttl=$((ttl == 30 ? 20 : 30))
			write_zone "$ttl"
			events[zone_reload]=$((${events[zone_reload]:-0} + 1))
			;;
		1)
			kill -USR1 "$(cat "$WORK/b/pid")"
			events[corefile_reload]=$((${events[corefile_reload]:-0} + 1))
			;;
		2)
			redis-cli -p "$REDIS" shutdown nosave >/dev/null 2>&1 || true
			sleep 2
			start_redis
			events[redis_restart]=$((${events[redis_restart]:-0} + 1))
			;;
		3)
			upgrade_a
			events[instance_restart]=$((${events[instance_restart]:-0} + 1))
			;;
		esac
		next_event=$((now + EVENT))
	fi
	sleep 1
done
wait "$PERF_A" "$PERF_B"
sample "$(($(date +%s) - start))"

# Settle: the primary stays up, and both instances must agree on every record.
touch "$WORK/flap.stop"
sleep "$SETTLE"
disagree=0
for i in $(seq 1 50); do
	a="$(dig +short +norec @127.0.0.1 -p "$DNS_A" "n$(printf %02d "$i").soak.test" A | sort | tr '\n' ' ')"
	b="$(dig +short +norec @127.0.0.1 -p "$DNS_B" "n$(printf %02d "$i").soak.test" A | sort | tr '\n' ' ')"
	[[ "$a" == "$b" ]] || disagree=$((disagree + 1))
done

lost() { awk '/Queries lost:/ { print $3 }' "$1"; }
sent() { awk '/Queries sent:/ { print $3 }' "$1"; }
echo "RSS (MiB) and goroutines over time:"
echo
echo "| t (s) | RSS a | goroutines a | RSS b | goroutines b |"
echo "|---|---|---|---|---|"
cat "$WORK/samples"
echo
printf 'events:'
for e in "${!events[@]}"; do printf ' %s %d,' "$e" "${events[$e]}"; done
echo
echo
echo "| duration (s) | queries sent | lost | records answered differently after ${SETTLE}s |"
echo "|---|---|---|---|"
total_sent=$(($(sent "$WORK/dnsperf.a") + $(sent "$WORK/dnsperf.b")))
total_lost=$(($(lost "$WORK/dnsperf.a") + $(lost "$WORK/dnsperf.b")))
echo "| $DURATION | $total_sent | **$total_lost** | **$disagree** |"
((total_lost == 0 && disagree == 0))
