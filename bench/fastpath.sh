#!/usr/bin/env bash
# Side by side: CoreDNS's file plugin, Meridian's gslb plugin (fast path off, and on with
# FASTPATH=1) and gdnsd, serving the same zone bench.test. on loopback.
#
# The zone holds NAMES static names (plain A) and three steered names:
#   wgt  weighted, two addresses, weights 3:1         (gslb mode weighted; gdnsd weighted)
#   fo   failover, 127.0.0.1 then 127.0.0.2, both     (gslb mode failover with tcp checks;
#        checked by TCP connect to a local listener    gdnsd simplefo, tcp_connect service type)
#   geo  chosen by the client's network: 127.0.0.0/8  (gslb mode geoip with a geoip_custom map;
#        is site "here", any other network "there"     gdnsd geoip with a nets map)
# The file server holds one A record for each of them (the answer the others give 127.0.0.1,
# the 3-weight address for wgt). The query list is a quarter of each kind: every static name
# once, and each steered name NAMES/3 times, shuffled.
#
# Every server is its own process: meridian -conf (file), meridian -conf (gslb), meridian -conf
# (gslb with a fastpath line, FASTPATH=1 only) and gdnsd start. The TCP check targets are two
# listeners on 127.0.0.1:PORT_CHECK and 127.0.0.2:PORT_CHECK (bench/blackhole -close: each
# closes what it accepts at once, on one thread; socat's fork started a process on the
# servers' core for every check).
#
# With IDLE_POLL=1 (the default) the run holds the kernel's CPU latency limit at 0
# (/dev/cpu_dma_latency, as tuned's latency-performance profile does), so that idle CPUs poll
# instead of halting: on a virtual machine a halted CPU's wake-up goes through the host and
# added about 30 us to every server's latency at 20k qps. With ISOLATE=1 (the default) the
# pinned phase gives CPU 0 to the servers alone: every other task that may run elsewhere (the
# check targets, the kernel's unbound threads, every other process) moves off it for the
# phase and back after. Else the host's memory monitor (kdamond, runs of 0.2 to 4 ms) went to
# whichever CPU was idler, and so fell more often on the server that used less CPU.
#
# Two phases, each with its own start of every server: "pinned" (servers under taskset -c 0,
# dnsperf under taskset -c 1) and "unpinned". In each phase, ROUNDS rounds; a round takes
# each measurement of every server back to back, in an order that rotates from round to round
# (so that a slow spell of the host falls on the servers alike):
#   - max qps: dnsperf -l DURATION -c CLIENTS -T THREADS -q OUTSTANDING; the server's CPU
#     time over the run (utime+stime from /proc/PID/stat) gives the cores it used and the
#     qps per server core (qps / (CPU seconds / wall seconds));
#   - the same for each kind of KINDS on its own (its names only), KIND_DURATION s;
#   - latency at each rate of RATES: dnsperf -Q RATE -l LAT_DURATION -v, whose per-query lines
#     carry each query's latency; p50, p99 and p99.9 by nearest rank over the queries of all
#     rounds (pooled: a round at 1k qps alone holds too few queries for a p99.9).
# The report gives medians over the rounds (qps) as Markdown tables, with the ratios gslb/gdnsd and
# gslb/file (and fast/gdnsd, fast/file). When the binary rejects fastpath, its column is n/a.
#
# Usage: bench/fastpath.sh [--quick]
# Environment: see bench/README.md (section fastpath.sh).
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_quick_arg "$@"

FASTPATH="${FASTPATH:-0}"
NAMES="${NAMES:-1000}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-4}"
LAT_DURATION="${LAT_DURATION:-2}"
if ((QUICK)); then
	ROUNDS=1
	DURATION=2
	KIND_DURATION=1
	LAT_DURATION=1
fi
RATES="${RATES:-1000 20000 100000}"
PHASES="${PHASES:-pinned unpinned}"
CLIENTS="${CLIENTS:-4}"
THREADS="${THREADS:-1}"
OUTSTANDING="${OUTSTANDING:-200}"
LAT_OUTSTANDING="${LAT_OUTSTANDING:-2000}"
TIMEOUT="${TIMEOUT:-1}"
READY_TIMEOUT="${READY_TIMEOUT:-30}"
WEIGHT_SAMPLES="${WEIGHT_SAMPLES:-400}"
FAILOVER_CHECK="${FAILOVER_CHECK:-$((1 - QUICK))}"
FAILOVER_TIMEOUT="${FAILOVER_TIMEOUT:-30}"
GDNSD_BIN="${GDNSD_BIN:-gdnsd}"
KIND="${KIND:-mix}"
[[ "$KIND" =~ ^(mix|static|wgt|fo|geo)$ ]] || {
	echo "KIND must be mix, static, wgt, fo or geo, got '$KIND'" >&2
	exit 2
}
KINDS="${KINDS-static wgt fo geo}"
for k in $KINDS; do
	[[ "$k" =~ ^(static|wgt|fo|geo)$ ]] || {
		echo "KINDS must be kinds of static, wgt, fo and geo, got '$k'" >&2
		exit 2
	}
done
KIND_DURATION="${KIND_DURATION:-2}"

bench_positive NAMES ROUNDS DURATION KIND_DURATION LAT_DURATION CLIENTS THREADS OUTSTANDING LAT_OUTSTANDING TIMEOUT READY_TIMEOUT WEIGHT_SAMPLES FAILOVER_TIMEOUT
for r in $RATES; do
	[[ "$r" =~ ^[1-9][0-9]*$ ]] || {
		echo "RATES must be positive integers, got '$r'" >&2
		exit 2
	}
done
for p in $PHASES; do
	[[ "$p" == pinned || "$p" == unpinned ]] || {
		echo "PHASES must be pinned and/or unpinned, got '$p'" >&2
		exit 2
	}
done
IDLE_POLL="${IDLE_POLL:-1}"
ISOLATE="${ISOLATE:-1}"
for v in FASTPATH FAILOVER_CHECK IDLE_POLL ISOLATE; do
	[[ "${!v}" == 0 || "${!v}" == 1 ]] || {
		echo "$v must be 0 or 1, got '${!v}'" >&2
		exit 2
	}
done

# --- 1. tools and binary ---------------------------------------------------------------------
bench_need_pkgs dnsperf:dnsperf dig:dnsutils taskset:util-linux "$GDNSD_BIN:gdnsd"
BIN="$(bench_meridian_bin "$BENCH_REPO")"
command -v "$GDNSD_BIN" >/dev/null || {
	echo "gdnsd not found: $GDNSD_BIN" >&2
	exit 1
}

SERVERS=(file gslb)
((FASTPATH)) && SERVERS+=(fast)
SERVERS+=(gdnsd)
if [[ -n "${ONLY:-}" ]]; then
	read -ra only <<<"$ONLY"
	for s in "${only[@]}"; do
		[[ " ${SERVERS[*]} " == *" $s "* ]] || {
			echo "ONLY names a server this run has not ($s): ${SERVERS[*]}" >&2
			exit 2
		}
	done
	SERVERS=("${only[@]}")
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-fastpath.XXXXXX")"
declare -A PID=() PORT=()
CHECK_PIDS=()
FAST_NA="" # the reason the fast path column is n/a
cleanup() {
	local p
	for p in "${CHECK_PIDS[@]}"; do bench_stop_pid "$p"; done
	bench_cleanup
}
trap cleanup EXIT

go build -o "$WORK/blackhole" "$BENCH_REPO/bench/blackhole"
IDLE="halt (IDLE_POLL=0)"
if ((IDLE_POLL)); then
	if bench_hold_idle_poll; then
		IDLE="poll (/dev/cpu_dma_latency held at 0)"
	else
		IDLE="halt (/dev/cpu_dma_latency is not writable here)"
	fi
fi

# --- 2. zone data ----------------------------------------------------------------------------
TTL=30
WGT_HEAVY=10.9.0.1 WGT_LIGHT=10.9.0.2
FO_PRIMARY=127.0.0.1 FO_SECONDARY=127.0.0.2
GEO_HERE=10.8.0.1 GEO_THERE=10.8.0.2
PORT_CHECK="$(bench_pick_port)"
BENCH_AVOID_PORTS=$PORT_CHECK # no server takes the check targets' port

bench_zone_file "wgt\t$TTL\tIN A\t$WGT_HEAVY" "fo\t$TTL\tIN A\t$FO_PRIMARY" "geo\t$TTL\tIN A\t$GEO_HERE" >"$WORK/db.bench.test"

# gslb's files have a directory of their own: Meridian watches the directories of its files, and
# every write to another file of such a directory (the dnsperf output of a latency run, with a
# line per query) would wake its watcher.
GSLB_CONF="$WORK/gslb"
mkdir -p "$GSLB_CONF"

# gdnsd reads every file of its zones directory as the zone of that name.
mkdir -p "$WORK/gdnsd/zones" "$WORK/gdnsd/run" "$WORK/gdnsd/state"
{
	cat <<EOF
\$TTL 60
@	SOA	ns1 hostmaster 1 7200 3600 1209600 60
@	NS	ns1
ns1	A	127.0.0.1
wgt	$TTL	DYNA	weighted!wgt
fo	$TTL	DYNA	simplefo!fo
geo	$TTL	DYNA	geoip!geo
EOF
	bench_static_lines "%s\t$TTL\tA\t%s\n"
} >"$WORK/gdnsd/zones/bench.test"

{
	cat <<EOF
soa:
  mname: ns1.bench.test.
  rname: hostmaster.bench.test.
ns:
  - ns1.bench.test.
static:
  ns1: ["A 127.0.0.1"]
EOF
	bench_static_lines "  %s: [\"$TTL A %s\"]\n"
	cat <<EOF
records:
  wgt.bench.test.:
    mode: weighted
    record_ttl: $TTL
    backends:
      - {address: $WGT_HEAVY, weight: 3}
      - {address: $WGT_LIGHT, weight: 1}
  fo.bench.test.:
    mode: failover
    record_ttl: $TTL
    scrape_interval: 2s
    scrape_timeout: 1s
    backends:
      - {address: $FO_PRIMARY, priority: 1, healthchecks: [{type: tcp, params: {port: $PORT_CHECK}}]}
      - {address: $FO_SECONDARY, priority: 2, healthchecks: [{type: tcp, params: {port: $PORT_CHECK}}]}
  geo.bench.test.:
    mode: geoip
    record_ttl: $TTL
    backends:
      - {address: $GEO_HERE, location: here}
      - {address: $GEO_THERE, location: there}
EOF
} >"$GSLB_CONF/gslb.yml"
printf 'subnets:\n  - subnet: 127.0.0.0/8\n    location: here\n' >"$GSLB_CONF/locations.yml"

# queries_of kind: the query list of kind: mix (a quarter of each kind), or one kind only.
queries_of() {
	{
		if [[ "$1" == mix || "$1" == static ]]; then
			for ((i = 1; i <= NAMES; i++)); do printf 'n%05d.bench.test. A\n' "$i"; done
		fi
		for ((i = 1; i <= (NAMES + 2) / 3; i++)); do
			case "$1" in
			mix) printf 'wgt.bench.test. A\nfo.bench.test. A\ngeo.bench.test. A\n' ;;
			wgt | fo | geo) printf '%s.bench.test. A\n' "$1" "$1" "$1" ;;
			esac
		done
	} | shuf --random-source=<(yes)
}
queries_of "$KIND" >"$WORK/queries.txt"
for k in $KINDS; do queries_of "$k" >"$WORK/queries.$k.txt"; done

# write_configs writes every server's configuration for the ports in PORT.
write_configs() {
	bench_gslb_corefile "$WORK/Corefile.gslb" "${PORT[gslb]:-0}" "$GSLB_CONF/gslb.yml" "geoip_custom $GSLB_CONF/locations.yml"
	bench_gslb_corefile "$WORK/Corefile.fast" "${PORT[fast]:-0}" "$GSLB_CONF/gslb.yml" "geoip_custom $GSLB_CONF/locations.yml" fastpath
	cat >"$WORK/Corefile.file" <<EOF
bench.test:${PORT[file]:-0} {
    bind 127.0.0.1
    file $WORK/db.bench.test bench.test
}
EOF
	cat >"$WORK/gdnsd/config" <<EOF
options => {
  listen => [ 127.0.0.1:${PORT[gdnsd]:-0} ]
  run_dir => $WORK/gdnsd/run
  state_dir => $WORK/gdnsd/state
}
service_types => {
  tcpcheck => { plugin => tcp_connect, port => $PORT_CHECK, interval => 2, timeout => 1, up_thresh => 2, ok_thresh => 1, down_thresh => 2 }
}
plugins => {
  weighted => { wgt => { heavy = [ $WGT_HEAVY, 3 ], light = [ $WGT_LIGHT, 1 ] } }
  simplefo => { fo => { primary => $FO_PRIMARY, secondary => $FO_SECONDARY, service_types => tcpcheck } }
  geoip => {
    maps => { nets => { datacenters => [ here, there ], nets => { 127.0.0.0/8 => [ here ] } } }
    resources => { geo => { map => nets, dcmap => { here => $GEO_HERE, there => $GEO_THERE } } }
  }
}
EOF
}

# --- 3. check targets and servers ------------------------------------------------------------
# start_check i: starts the check target of the failover address i (0: primary, 1: secondary).
FO_ADDRS=("$FO_PRIMARY" "$FO_SECONDARY")
start_check() {
	"$WORK/blackhole" -close -addr "${FO_ADDRS[$1]}" -ports 1 -port "$PORT_CHECK" >/dev/null 2>>"$WORK/checks.log" &
	CHECK_PIDS[$1]=$!
}
start_check 0
start_check 1

probe() { # port name -> first A address or empty
	dig +short +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" A 2>/dev/null | head -n1
}

# ready server: true once the server answers every kind as expected (and, for gdnsd, its
# checks of both failover addresses are up).
ready() {
	local p=${PORT[$1]} w
	[[ "$(probe "$p" n00001.bench.test.)" == "$(bench_static_addr 1)" ]] || return 1
	[[ "$(probe "$p" fo.bench.test.)" == "$FO_PRIMARY" ]] || return 1
	[[ "$(probe "$p" geo.bench.test.)" == "$GEO_HERE" ]] || return 1
	w="$(probe "$p" wgt.bench.test.)"
	[[ "$w" == "$WGT_HEAVY" || "$w" == "$WGT_LIGHT" ]] || return 1
	if [[ "$1" == gdnsd ]]; then
		[[ "$(gdnsdctl -c "$WORK/gdnsd" states 2>/dev/null | grep -c '/tcpcheck": {"state": "UP"')" == 2 ]] || return 1
	fi
}

# launch server log: starts it in the background, on CPU 0 in the pinned phase (PHASE).
launch() {
	local pin=()
	[[ "$PHASE" == pinned ]] && pin=(taskset -c 0)
	if [[ "$1" == gdnsd ]]; then
		"${pin[@]}" "$GDNSD_BIN" -c "$WORK/gdnsd" start >"$2" 2>&1 &
	else
		"${pin[@]}" "$BIN" -conf "$WORK/Corefile.$1" >"$2" 2>&1 &
	fi
}

# start_failed server log: true (its column n/a) when it is the fast path and the binary
# rejects the option.
start_failed() {
	[[ "$1" == fast ]] && grep -qs 'unknown option "fastpath"' "$2" || return 1
	FAST_NA="$(grep -m1 -o 'unknown option "fastpath"' "$2")"
	bench_log "fast path: the binary rejects it ($FAST_NA): column n/a"
}

# start_all phase: picks ports and starts every server (the fast path's may turn out n/a).
start_all() {
	local s servers=()
	PHASE=$1
	bench_log "$PHASE: starting the servers"
	for s in "${SERVERS[@]}"; do [[ "$s" == fast && -n "$FAST_NA" ]] || servers+=("$s"); done
	bench_start_servers "${servers[@]}"
}

# --- 4. answers: weights and failover ---------------------------------------------------------
# Before the first phase's measurements: the weighted name's share of the 3-weight address over
# WEIGHT_SAMPLES queries, and (FAILOVER_CHECK=1) the time each steering server takes to move fo
# to the secondary once the primary's check target stops, and back once it restarts.
CHECKS_REPORT=""
check_weights() {
	local s out heavy total
	for s in gslb fast gdnsd; do
		[[ -n "${PID[$s]:-}" ]] || continue
		# shellcheck disable=SC2046
		out="$(dig +short +time=1 +tries=1 @127.0.0.1 -p "${PORT[$s]}" $(for ((i = 0; i < WEIGHT_SAMPLES; i++)); do printf 'wgt.bench.test. A '; done))"
		heavy="$(grep -cx "$WGT_HEAVY" <<<"$out" || true)"
		total="$(grep -cxE "$WGT_HEAVY|$WGT_LIGHT" <<<"$out" || true)"
		CHECKS_REPORT+="wgt: $s answered $WGT_HEAVY to $heavy of $total queries (weight 3 of 4: 75% expected)."$'\n'
		if ((total < WEIGHT_SAMPLES)) || ((heavy * 100 < total * 55 || heavy * 100 > total * 95)); then
			echo "$s: wgt answered $WGT_HEAVY to $heavy of $total (of $WEIGHT_SAMPLES) queries, not about 3 in 4" >&2
			exit 1
		fi
	done
}
# wait_fo want what: waits until every steering server answers fo with want; notes how long.
wait_fo() {
	local s t0=$SECONDS deadline=$((SECONDS + FAILOVER_TIMEOUT)) pending
	declare -A took=()
	while :; do
		pending=0
		for s in gslb fast gdnsd; do
			[[ -n "${PID[$s]:-}" && -z "${took[$s]:-}" ]] || continue
			if [[ "$(probe "${PORT[$s]}" fo.bench.test.)" == "$1" ]]; then
				took[$s]=$((SECONDS - t0))
			else
				pending=1
			fi
		done
		((pending)) || break
		if ((SECONDS >= deadline)); then
			echo "fo: not every server answers $1 within ${FAILOVER_TIMEOUT}s after $2 (done: ${!took[*]})" >&2
			exit 1
		fi
		sleep 0.2
	done
	for s in "${!took[@]}"; do CHECKS_REPORT+="fo: $s answered $1 ${took[$s]}s after $2."$'\n'; done
}
check_failover() {
	bench_stop_pid "${CHECK_PIDS[0]}"
	wait_fo "$FO_SECONDARY" "the primary's check target stopped"
	start_check 0
	wait_fo "$FO_PRIMARY" "it restarted"
}

# --- 5. measurements -------------------------------------------------------------------------
# Results: $WORK/res/PHASE.SERVER.METRIC, one value per round.
mkdir -p "$WORK/res"

# perf phase server out queries args...: runs dnsperf on the query list queries (pinned to
# core 1 in the pinned phase) against the server; prints "wall_seconds server_cpu_seconds"
# (wall: the whole dnsperf process).
perf() {
	local phase=$1 s=$2 out=$3 queries=$4 pin=() t0 t1 w0 w1
	shift 4
	[[ "$phase" == pinned ]] && pin=(taskset -c 1)
	t0="$(bench_cpu_ticks "${PID[$s]}")"
	w0="$(date +%s.%N)"
	if ! "${pin[@]}" dnsperf -s 127.0.0.1 -p "${PORT[$s]}" -d "$queries" -c "$CLIENTS" -T "$THREADS" "$@" >"$out" 2>&1; then
		echo "dnsperf failed against $s:" >&2
		cat "$out" >&2
		exit 1
	fi
	w1="$(date +%s.%N)"
	t1="$(bench_cpu_ticks "${PID[$s]}")"
	awk -v a="$t0" -v b="$t1" -v w0="$w0" -v w1="$w1" -v hz="$BENCH_CLK_TCK" 'BEGIN { printf "%.3f %.3f\n", w1 - w0, (b - a) / hz }'
}


# measure_max phase server round [kind]: one max-qps run of the query list of kind (none: the
# list of KIND), DURATION s (a kind's own: KIND_DURATION s); records qps, cores, qps per core
# and lost, under the metric names prefixed "kind." for a kind's own.
measure_max() {
	local phase=$1 s=$2 r=$3 kind=${4:-} out res wall cpu qps done_q queries="$WORK/queries.txt" pfx="" seconds=$DURATION
	if [[ -n "$kind" ]]; then
		queries="$WORK/queries.$kind.txt" pfx="$kind." seconds=$KIND_DURATION
	fi
	out="$WORK/$phase.$s.$r.${pfx}max.txt"
	res="$(perf "$phase" "$s" "$out" "$queries" -l "$seconds" -q "$OUTSTANDING" -t "$TIMEOUT")"
	read -r wall cpu <<<"$res"
	qps="$(bench_field 'Queries per second:' "$out")"
	done_q="$(bench_field 'Queries completed:' "$out")"
	bench_record "$phase" "$s" "${pfx}qps" "$(printf '%.0f' "$qps")"
	# Cores used: over dnsperf's sending time, not its start and its wait for the last answers
	# (the server is idle then).
	bench_record "$phase" "$s" "${pfx}cores" "$(awk -v c="$cpu" -v w="$(bench_field 'Run time (s):' "$out")" 'BEGIN { printf "%.2f", (w > 0 ? c / w : 0) }')"
	bench_record "$phase" "$s" "${pfx}qpscore" "$(bench_per_cpu "$done_q" "$cpu")"
	bench_record "$phase" "$s" "${pfx}lost" "$(bench_lost_pct "$out")"
	bench_log "$phase round $r $s${kind:+ ($kind)}: $qps qps, server CPU ${cpu}s over ${wall}s"
}

# measure_rate phase server round rate: one run at the fixed rate, LAT_DURATION s.
measure_rate() {
	local phase=$1 s=$2 r=$3 rate=$4 out="$WORK/$1.$2.$3.q$4.txt"
	perf "$phase" "$s" "$out" "$WORK/queries.txt" -l "$LAT_DURATION" -q "$LAT_OUTSTANDING" -Q "$rate" -t "$TIMEOUT" -v >/dev/null
	bench_record "$phase" "$s" "q$rate.qps" "$(printf '%.0f' "$(bench_field 'Queries per second:' "$out")")"
	bench_record "$phase" "$s" "q$rate.lost" "$(bench_lost_pct "$out")"
	# The latencies, pooled over the rounds.
	bench_latencies "$out" >>"$WORK/res/$phase.$s.q$rate.lat"
}

checked=0
for phase in $PHASES; do
	start_all "$phase"
	if ((!checked)); then
		check_weights
		((FAILOVER_CHECK)) && check_failover
		checked=1
	fi
	if [[ "$phase" == pinned ]] && ((ISOLATE)); then
		ISOLATED="$(bench_isolate_cpu 0 "$WORK/isolated" "${PID[@]}")"
		bench_log "pinned: CPU 0 isolated, $ISOLATED tasks moved off it"
	fi
	bench_log "$phase: $ROUNDS round(s): max qps ${DURATION}s${KINDS:+, each of $KINDS ${KIND_DURATION}s}, rates $RATES ${LAT_DURATION}s each"
	for ((r = 1; r <= ROUNDS; r++)); do
		# Measurement by measurement, every server back to back, in an order that rotates
		# from round to round: the host's slow spells fall on the servers alike.
		servers=()
		for s in "${SERVERS[@]}"; do [[ -n "${PID[$s]:-}" ]] && servers+=("$s"); done
		read -ra order <<<"$(bench_rotate "$r" "${servers[@]}")"
		for s in "${order[@]}"; do measure_max "$phase" "$s" "$r" && bench_running "$s"; done
		for kind in $KINDS; do
			for s in "${order[@]}"; do measure_max "$phase" "$s" "$r" "$kind" && bench_running "$s"; done
		done
		for rate in $RATES; do
			for s in "${order[@]}"; do measure_rate "$phase" "$s" "$r" "$rate" && bench_running "$s"; done
		done
	done
	bench_stop_servers
	bench_restore_cpus "$WORK/isolated"
done

# --- 6. report -------------------------------------------------------------------------------
med() { bench_med_file "$WORK/res/$1.$2.$3"; } # phase server metric -> median or n/a
# percentiles phase server rate: computes p50, p99 and p99.9 (nearest rank) of the pooled
# latencies into the results.
percentiles() {
	local f="$WORK/res/$1.$2.q$3"
	[[ -s "$f.lat" ]] || return 0
	# A histogram of the integer microseconds, its few thousand distinct values sorted.
	awk '{ n[$1]++ } END { for (v in n) print v, n[v] }' "$f.lat" | sort -n |
		awk -v pfx="$f" '{ v[NR] = $1; c[NR] = $2; t += $2 } END {
			split("p50 0.5 p99 0.99 p999 0.999", p, " ")
			for (i = 1; i < 6; i += 2) {
				k = int(t * p[i + 1]); if (k < t * p[i + 1]) k++; if (k < 1) k = 1
				sum = 0
				for (j = 1; j <= NR; j++) { sum += c[j]; if (sum >= k) break }
				print v[j] > (pfx "." p[i])
			}
		}'
}
row() { # phase label metric [noratio]: with noratio, the ratio cells stay empty
	local phase=$1 label=$2 metric=$3 s line g f d x
	line="| $label |"
	for s in file gslb fast gdnsd; do line+=" $(med "$phase" "$s" "$metric") |"; done
	g="$(med "$phase" gslb "$metric")" f="$(med "$phase" file "$metric")"
	d="$(med "$phase" gdnsd "$metric")" x="$(med "$phase" fast "$metric")"
	if [[ -n "${4:-}" ]]; then
		echo "$line | | | |"
		return
	fi
	line+=" $(bench_ratio "$g" "$d") | $(bench_ratio "$g" "$f") | $(bench_ratio "$x" "$d") | $(bench_ratio "$x" "$f") |"
	echo "$line"
}

echo
queried="a quarter of the queries each"
[[ "$KIND" != mix ]] && queried="queries to $KIND only"
echo "Side by side: ${SERVERS[*]}. $NAMES static names + wgt, fo, geo ($queried), medians of $ROUNDS round(s)."
[[ -n "$KINDS" ]] && echo "By kind: a max-qps run of each kind's names alone ($KINDS), dnsperf -l $KIND_DURATION."
echo "max qps: dnsperf -l $DURATION -c $CLIENTS -T $THREADS -q $OUTSTANDING -t $TIMEOUT; latency: dnsperf -Q RATE -l $LAT_DURATION -c $CLIENTS -T $THREADS -q $LAT_OUTSTANDING -t $TIMEOUT -v."
[[ -n "$FAST_NA" ]] && echo "fast path: n/a, the binary rejects the option ($FAST_NA)."
((FASTPATH)) || echo "fast path: n/a, not run (FASTPATH=1 runs it)."
echo "Idle CPUs: $IDLE."
if [[ " $PHASES " == *" pinned "* ]]; then
	if ((ISOLATE)); then
		echo "Pinned phase: CPU 0 isolated for the servers (${ISOLATED:-0} other tasks moved off it; ISOLATE=0 leaves them)."
	else
		echo "Pinned phase: CPU 0 shared with the machine's other tasks (ISOLATE=0)."
	fi
fi
echo "qps rows: medians over the rounds; latency percentiles: nearest rank over the queries of all rounds, pooled."
printf '%s' "$CHECKS_REPORT"
echo "Ratios are of the medians; for latencies, lower is better (a ratio below 1: Meridian is faster)."
for phase in $PHASES; do
	for s in "${SERVERS[@]}"; do
		for rate in $RATES; do percentiles "$phase" "$s" "$rate"; done
	done
	echo
	if [[ "$phase" == pinned ]]; then
		echo "### Pinned (server taskset -c 0, dnsperf taskset -c 1)"
	else
		echo "### Unpinned"
	fi
	echo
	echo "| metric | file | gslb | fast | gdnsd | gslb/gdnsd | gslb/file | fast/gdnsd | fast/file |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	row "$phase" "max qps" qps
	row "$phase" "server cores used" cores noratio
	row "$phase" "qps per server core" qpscore
	row "$phase" "lost % (max qps)" lost noratio
	for kind in $KINDS; do
		row "$phase" "$kind only: max qps" "$kind.qps"
		row "$phase" "$kind only: qps per server core" "$kind.qpscore"
		row "$phase" "$kind only: lost %" "$kind.lost" noratio
	done
	for rate in $RATES; do
		row "$phase" "$rate qps: achieved" "q$rate.qps"
		row "$phase" "$rate qps: p50 us" "q$rate.p50"
		row "$phase" "$rate qps: p99 us" "q$rate.p99"
		row "$phase" "$rate qps: p99.9 us" "q$rate.p999"
		row "$phase" "$rate qps: lost %" "q$rate.lost" noratio
	done
done
