#!/usr/bin/env bash
# Every kind of answer, side by side: Meridian's gslb with the fast path, gdnsd, Knot DNS and
# NSD (their Debian packages, each its own process on 127.0.0.1) serving the same zone
# bench.test., measured in one run by query kind:
#   a        A of a GSLB record (www: failover over two addresses; gdnsd simplefo; Knot and NSD
#            a static A)
#   nxdomain a random name for every query (RANDOM names): the random-subdomain flood
#   nodata   AAAA of the IPv4-only www
#   txt      a static TXT record
#   ecs      A of a geo record with an EDNS Client Subnet option (198.51.100.0/24, mapped to the
#            site "here"): Meridian's geoip with use_edns_csubnet and a geoip_custom map, gdnsd's
#            geoip with a nets map; Knot and NSD n/a (no GSLB)
#   tcp      A of www over TCP, TCP_CLIENTS connections pipelining (dnsperf -m tcp)
# Plus NAMES static A names in every zone, so that no server answers from a zone of five names.
#
# The servers run under taskset -c 0, dnsperf under taskset -c 1 (with ISOLATE=1, the default,
# every other task moves off CPU 0 for the run, as in bench/fastpath.sh); idle CPUs poll with
# IDLE_POLL=1. Each server runs with its package's defaults, except NSD's response rate
# limiting, which Debian's build turns on and which is off here (rrl-ratelimit: 0), so that it
# answers at full speed like the others.
#
# ROUNDS rounds; a round takes each measurement of every server back to back, in an order that
# rotates from round to round:
#   - for each kind: a max-qps run (dnsperf -l DURATION), whose queries completed over the
#     server's CPU time (utime + stime of its processes, children included: NSD serves from a
#     child) give the queries per server CPU-second;
#   - for each kind: a run at RATE qps (dnsperf -Q RATE -l LAT_DURATION -v) whose per-query
#     latencies, pooled over the rounds, give p50 and p99 (nearest rank).
# The report gives, per kind, the medians over the rounds as Markdown tables, with the ratio
# Meridian / gdnsd; the load average before and after.
#
# Usage: bench/answers.sh [--quick]
# Environment: see bench/README.md (section answers.sh).
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_quick_arg "$@"

ROUNDS="${ROUNDS:-3}" DURATION="${DURATION:-3}" LAT_DURATION="${LAT_DURATION:-2}"
((QUICK)) && ROUNDS=1 DURATION=1 LAT_DURATION=1
RATE="${RATE:-20000}"
NAMES="${NAMES:-1000}"
RANDOM_NAMES="${RANDOM_NAMES:-200000}"
CLIENTS="${CLIENTS:-4}"
TCP_CLIENTS="${TCP_CLIENTS:-20}"
OUTSTANDING="${OUTSTANDING:-200}"
TIMEOUT="${TIMEOUT:-1}"
READY_TIMEOUT="${READY_TIMEOUT:-30}"
IDLE_POLL="${IDLE_POLL:-1}"
ISOLATE="${ISOLATE:-1}"
KINDS="${KINDS:-a nxdomain nodata txt ecs tcp}"
SERVERS="${SERVERS:-meridian gdnsd knot nsd}"
bench_positive ROUNDS DURATION LAT_DURATION RATE NAMES RANDOM_NAMES CLIENTS TCP_CLIENTS OUTSTANDING TIMEOUT READY_TIMEOUT
for k in $KINDS; do
	[[ "$k" =~ ^(a|nxdomain|nodata|txt|ecs|tcp)$ ]] || {
		echo "KINDS: unknown kind '$k' (a nxdomain nodata txt ecs tcp)" >&2
		exit 2
	}
done
for s in $SERVERS; do
	[[ "$s" =~ ^(meridian|gdnsd|knot|nsd)$ ]] || {
		echo "SERVERS: unknown server '$s' (meridian gdnsd knot nsd)" >&2
		exit 2
	}
done

# --- 1. tools and binary ----------------------------------------------------------------------
bench_need_pkgs dnsperf:dnsperf dig:dnsutils taskset:util-linux gdnsd:gdnsd knotd:knot nsd:nsd
BIN="$(bench_meridian_bin "$BENCH_REPO")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-answers.XXXXXX")"
declare -A PID=() PORT=()
trap bench_cleanup EXIT
IDLE="halt"
((IDLE_POLL)) && bench_hold_idle_poll && IDLE="poll (/dev/cpu_dma_latency held at 0)"

# --- 2. the zone, in each server's format -----------------------------------------------------
TTL=30
WWW1=10.9.0.1 WWW2=10.9.0.2 GEO_HERE=10.8.0.1 GEO_THERE=10.8.0.2
TXT='"v=spf1 ip4:192.0.2.0/24 -all"'
mkdir -p "$WORK/meridian" "$WORK/gdnsd/zones" "$WORK/gdnsd/run" "$WORK/gdnsd/state" "$WORK/knot" "$WORK/nsd"
{
	bench_gslb_static "  txt: ['$TTL TXT $TXT']"
	cat <<EOF
records:
  www.bench.test.: {mode: failover, record_ttl: $TTL, backends: [{address: $WWW1, priority: 1}, {address: $WWW2, priority: 2}]}
  geo.bench.test.:
    mode: geoip
    record_ttl: $TTL
    backends: [{address: $GEO_HERE, location: here}, {address: $GEO_THERE, location: there}]
EOF
} >"$WORK/meridian/bench.yml"
printf 'subnets:\n  - subnet: 198.51.100.0/24\n    location: here\n' >"$WORK/meridian/locations.yml"
bench_zone_file "txt\t$TTL\tIN TXT\t$TXT" "www\t$TTL\tIN A\t$WWW1" "geo\t$TTL\tIN A\t$GEO_HERE" >"$WORK/db.bench.test"
cp "$WORK/db.bench.test" "$WORK/knot/bench.test.zone"
cp "$WORK/db.bench.test" "$WORK/nsd/bench.test.zone"
bench_zone_file "txt\t$TTL\tIN TXT\t$TXT" "www\t$TTL\tDYNA\tsimplefo!www" "geo\t$TTL\tDYNA\tgeoip!geo" >"$WORK/gdnsd/zones/bench.test"

# --- 3. the queries of each kind ---------------------------------------------------------------
for ((i = 0; i < 1000; i++)); do echo "www.bench.test. A"; done >"$WORK/q.a"
cp "$WORK/q.a" "$WORK/q.tcp"
for ((i = 0; i < 1000; i++)); do echo "www.bench.test. AAAA"; done >"$WORK/q.nodata"
for ((i = 0; i < 1000; i++)); do echo "txt.bench.test. TXT"; done >"$WORK/q.txt"
for ((i = 0; i < 1000; i++)); do echo "geo.bench.test. A"; done >"$WORK/q.ecs"
awk -v n="$RANDOM_NAMES" 'BEGIN { srand(38); for (i = 0; i < n; i++) printf "r%08x%04x.bench.test. A\n", int(rand() * 4294967295), i % 65536 }' >"$WORK/q.nxdomain"
ECS_OPTION="8:00011800c63364" # family 1, source /24, scope 0, 198.51.100

# kind_args kind: dnsperf's arguments for the kind.
kind_args() {
	case "$1" in
	tcp) echo "-m tcp -c $TCP_CLIENTS" ;;
	ecs) echo "-c $CLIENTS -E $ECS_OPTION" ;;
	*) echo "-c $CLIENTS" ;;
	esac
}
# serves server kind: whether the server has an answer of that kind (Knot and NSD: no GSLB).
serves() { [[ "$2" != ecs || "$1" == meridian || "$1" == gdnsd ]]; }

# --- 4. servers -------------------------------------------------------------------------------
write_configs() {
	bench_gslb_corefile "$WORK/meridian/Corefile" "${PORT[meridian]:-0}" "$WORK/meridian/bench.yml" \
		"geoip_custom $WORK/meridian/locations.yml" use_edns_csubnet fastpath
	cat >"$WORK/gdnsd/config" <<EOF
options => {
  listen => [ 127.0.0.1:${PORT[gdnsd]:-0} ]
  run_dir => $WORK/gdnsd/run
  state_dir => $WORK/gdnsd/state
}
plugins => {
  simplefo => { www => { primary => $WWW1, secondary => $WWW2, service_types => up } }
  geoip => {
    maps => { nets => { datacenters => [ here, there ], nets => { 198.51.100.0/24 => [ here ] } } }
    resources => { geo => { map => nets, dcmap => { here => $GEO_HERE, there => $GEO_THERE } } }
  }
}
EOF
	bench_knot_conf "$WORK/knot" "${PORT[knot]:-0}"
	cat >"$WORK/nsd/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1@${PORT[nsd]:-0}
    username: ""
    chroot: ""
    zonesdir: "$WORK/nsd"
    pidfile: "$WORK/nsd/nsd.pid"
    database: ""
    zonelistfile: "$WORK/nsd/zone.list"
    xfrdfile: "$WORK/nsd/xfrd.state"
    xfrdir: "$WORK/nsd"
    rrl-ratelimit: 0
    verbosity: 0
remote-control:
    control-enable: no
zone:
    name: bench.test
    zonefile: bench.test.zone
EOF
}

probe() { dig +short +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" "${3:-A}" 2>/dev/null | head -n1; }
ready() {
	local p=${PORT[$1]}
	[[ "$(probe "$p" www.bench.test.)" == "$WWW1" && "$(probe "$p" n00001.bench.test.)" == 10.1.0.1 ]]
}

# launch server log: starts it on CPU 0, in the background (bench_start_servers).
launch() {
	case "$1" in
	meridian) taskset -c 0 "$BIN" -conf "$WORK/meridian/Corefile" >"$2" 2>&1 & ;;
	gdnsd) taskset -c 0 gdnsd -c "$WORK/gdnsd" start >"$2" 2>&1 & ;;
	knot) taskset -c 0 knotd -c "$WORK/knot/knot.conf" >"$2" 2>&1 & ;;
	nsd) taskset -c 0 nsd -d -c "$WORK/nsd/nsd.conf" >"$2" 2>&1 & ;;
	esac
}
# shellcheck disable=SC2086 # the servers' names
bench_start_servers $SERVERS
for s in $SERVERS; do
	[[ "$(probe "${PORT[$s]}" txt.bench.test. TXT)" == "$TXT" ]] || {
		echo "$s does not answer the TXT record" >&2
		exit 1
	}
done

# --- 5. measurements --------------------------------------------------------------------------
mkdir -p "$WORK/res"
if ((ISOLATE)); then
	# shellcheck disable=SC2046
	ISOLATED="$(bench_isolate_cpu 0 "$WORK/isolated" $(for s in $SERVERS; do bench_tree_pids "${PID[$s]}"; done))"
	bench_log "CPU 0 isolated for the servers: $ISOLATED tasks moved off it"
fi

# max_run server kind round: a max-qps run of the kind, when the server serves it.
max_run() {
	local s=$1 kind=$2 out="$WORK/$1.$2.$3.max" cpu done_q
	serves "$s" "$kind" || return 0
	cpu="$(bench_perf_kind "$s" "$kind" "$out" -l "$DURATION" -q "$OUTSTANDING")"
	done_q="$(bench_field 'Queries completed:' "$out")"
	bench_record "$s" "$kind" qpscpu "$(bench_per_cpu "$done_q" "$cpu")"
	bench_record "$s" "$kind" qps "$(printf '%.0f' "$(bench_field 'Queries per second:' "$out")")"
	bench_record "$s" "$kind" lost "$(bench_lost_pct "$out")"
	bench_log "round $3 $s $kind: $(bench_field 'Queries per second:' "$out") qps, server CPU ${cpu}s"
	bench_running "$s"
}
# rate_run server kind round: a run of the kind at RATE qps, when the server serves it.
rate_run() {
	local s=$1 kind=$2 out="$WORK/$1.$2.$3.rate"
	serves "$s" "$kind" || return 0
	bench_perf_kind "$s" "$kind" "$out" -l "$LAT_DURATION" -q 2000 -Q "$RATE" -v >/dev/null
	bench_latencies "$out" >>"$WORK/res/$s.$kind.lat"
	bench_record "$s" "$kind" ratelost "$(bench_lost_pct "$out")"
}
bench_rounds max_run rate_run

# --- 6. report --------------------------------------------------------------------------------
med() { bench_med_file "$WORK/res/$1.$2.$3"; } # server kind metric
pct() { # server kind p (0.5, 0.99): nearest rank over the pooled latencies, in microseconds
	local f="$WORK/res/$1.$2.lat"
	[[ -s "$f" ]] || {
		echo n/a
		return
	}
	sort -n "$f" | awk -v p="$3" '{ v[NR] = $1 } END { k = int(NR * p); if (k < NR * p) k++; if (k < 1) k = 1; print v[k] }'
}
label() {
	case "$1" in
	a) echo "A, a GSLB record" ;;
	nxdomain) echo "a random name (NXDOMAIN)" ;;
	nodata) echo "AAAA of an IPv4-only record (NODATA)" ;;
	txt) echo "a static TXT record" ;;
	ecs) echo "A, a geo record, with ECS" ;;
	tcp) echo "A over TCP, $TCP_CLIENTS pipelining clients" ;;
	esac
}
echo
echo "Servers pinned to CPU 0 (taskset -c 0), dnsperf to CPU 1; $ROUNDS round(s), medians; idle CPUs: $IDLE; CPU 0 isolated: $((ISOLATE))."
echo "Max qps: dnsperf -T 1 -c $CLIENTS (TCP: -m tcp -c $TCP_CLIENTS) -q $OUTSTANDING -l $DURATION; latency: -Q $RATE -q 2000 -l $LAT_DURATION, pooled over the rounds."
echo "Load average before: $LOAD_BEFORE; after: $LOAD_AFTER."
echo
echo "Queries per server CPU-second:"
echo
echo "| query | Meridian | gdnsd | Knot | NSD | Meridian / gdnsd |"
echo "|---|---:|---:|---:|---:|---:|"
for kind in $KINDS; do
	printf '| %s | %s | %s | %s | %s | %s |\n' "$(label "$kind")" "$(med meridian "$kind" qpscpu)" "$(med gdnsd "$kind" qpscpu)" \
		"$(med knot "$kind" qpscpu)" "$(med nsd "$kind" qpscpu)" "$(bench_ratio "$(med meridian "$kind" qpscpu)" "$(med gdnsd "$kind" qpscpu)")"
done
echo
echo "Latency at $RATE qps, p50 / p99 (µs), and the queries lost at max qps / at $RATE qps (%):"
echo
echo "| query | Meridian | gdnsd | Knot | NSD |"
echo "|---|---|---|---|---|"
for kind in $KINDS; do
	line="| $(label "$kind") |"
	for s in meridian gdnsd knot nsd; do
		if [[ " $SERVERS " == *" $s "* ]] && serves "$s" "$kind"; then
			line+=" $(pct "$s" "$kind" 0.5) / $(pct "$s" "$kind" 0.99); lost $(med "$s" "$kind" lost) / $(med "$s" "$kind" ratelost) |"
		else
			line+=" n/a |"
		fi
	done
	echo "$line"
done
