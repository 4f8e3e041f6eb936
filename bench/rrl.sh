#!/usr/bin/env bash
# The targets of response rate limiting (issue 40), in one run, on loopback, with the fast path:
#
#   1. cost: two meridian processes serve the same zone (NAMES static names, a gslb block with
#      `fastpath 1`), one without rate limiting ("off"), one with `rrl` and
#      `rrl_responses_per_second RRL_RATE` ("on"), whose accounts (client network, name, type)
#      dnsperf never takes over their rate: every name once per pass of the query list. Each
#      round runs dnsperf (on CPU 1) at max qps against each, alternately, the servers on CPU 0;
#      qps per server core = queries answered / server CPU seconds. Target: on >= 0.95 x off.
#   2. a flood: one meridian, `rrl_responses_per_second FLOOD_LIMIT` (slip 2), gets a victim
#      client's queries (dnsperf -Q VICTIM_RATE -v from 127.0.1.1, p99 of its latencies)
#      without a flood, then with a flood of one name at FLOOD_RATE qps from 127.0.0.1
#      (bench/flood: open loop, sendmmsg, counts what comes back), both on CPU 1. Targets:
#      the victim's p99 within 2x of the unflooded run; the full answers the flooding address
#      got <= FLOOD_LIMIT x (the flood's seconds + 1), the rest slips (TC) or nothing.
#
# The flood's two runs stand for three machines on two cores. With ISOLATE=1 (the default)
# CPU 0 is the server's alone for them (every other task moves to CPU 1, as in fastpath.sh):
# another tenant's run of a few milliseconds on the server's core lets 200k qps fill the
# socket's queue, and the victim waits behind it. With VICTIM_RT=1 (the default) the victim's
# dnsperf runs at real-time priority (chrt -f 10), so that the flood's sender and the tasks
# moved to CPU 1 do not delay the victim's own clock, which a flood from another machine
# could not; the flood itself keeps its rate (the report says which it reached).
#
# Usage: bench/rrl.sh [--quick]
# Environment: MERIDIAN_BIN, NAMES (1000), ROUNDS (3), DURATION (5), RRL_RATE (1000),
# FLOOD_RATE (200000), FLOOD_SECONDS (10), FLOOD_LIMIT (20), VICTIM_RATE (2000), ISOLATE (1),
# VICTIM_RT (1), KEEP_WORK (0). See bench/README.md (section rrl.sh).
set -euo pipefail

QUICK=0
[[ "${1:-}" == "--quick" ]] && QUICK=1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

NAMES="${NAMES:-1000}"
ROUNDS="${ROUNDS:-$((QUICK ? 1 : 3))}"
DURATION="${DURATION:-$((QUICK ? 2 : 5))}"
RRL_RATE="${RRL_RATE:-1000}"
FLOOD_RATE="${FLOOD_RATE:-200000}"
FLOOD_SECONDS="${FLOOD_SECONDS:-$((QUICK ? 3 : 10))}"
FLOOD_LIMIT="${FLOOD_LIMIT:-20}"
VICTIM_RATE="${VICTIM_RATE:-2000}"
ISOLATE="${ISOLATE:-1}"
VICTIM_RT="${VICTIM_RT:-1}"
KEEP_WORK="${KEEP_WORK:-0}"

bench_need_pkgs dnsperf:dnsperf dig:dnsutils taskset:util-linux chrt:util-linux curl:curl
BIN="$(bench_meridian_bin "$ROOT")"
WORK="$(mktemp -d)"
(cd "$ROOT" && go build -o "$WORK/flood" ./bench/flood)
PIDS=()
declare -A PID # each server's pid, by name (off, on, flood)
cleanup() {
	for p in "${PIDS[@]}"; do bench_stop_pid "$p"; done
	bench_restore_cpus "$WORK/isolated"
	((KEEP_WORK)) || rm -rf "$WORK"
}
trap cleanup EXIT

# The zone: NAMES static names, and the query list: each once, shuffled.
{
	echo "static:"
	for i in $(seq -f '%05g' 1 "$NAMES"); do echo "  n$i: [\"A 10.0.$((10#$i / 250)).$((10#$i % 250))\"]"; done
	echo "records:"
	echo "  www.bench.test.: {backends: [{address: 10.9.9.9}]}"
} >"$WORK/zone.yml"
seq -f 'n%05g.bench.test A' 1 "$NAMES" | shuf >"$WORK/q.names"
echo "www.bench.test A" >"$WORK/q.www"

# start NAME PORT METRICS EXTRA: a meridian on CPU 0 serving the zone with the gslb options EXTRA.
start() {
	cat >"$WORK/Corefile.$1" <<COREFILE
bench.test:$2 {
    bind 127.0.0.1
    prometheus 127.0.0.1:$3
    gslb {
        zone bench.test. $WORK/zone.yml
        fastpath 1
$4
    }
}
COREFILE
	taskset -c 0 "$BIN" -conf "$WORK/Corefile.$1" >"$WORK/log.$1" 2>&1 &
	PIDS+=($!)
	PID[$1]=$!
	for _ in $(seq 1 100); do
		dig +short +time=1 +tries=1 -p "$2" @127.0.0.1 n00001.bench.test A 2>/dev/null | grep -q . && return 0
		sleep 0.2
	done
	echo "meridian ($1) did not start:" >&2
	cat "$WORK/log.$1" >&2
	exit 1
}

read -r P_OFF P_ON M_OFF M_ON <<<"$(bench_free_ports 4)"
start off "$P_OFF" "$M_OFF" ""
start on "$P_ON" "$M_ON" "        rrl
        rrl_responses_per_second $RRL_RATE"

# perf PORT QUERIES OUT ARGS...: dnsperf on CPU 1; prints the server's CPU ticks used.
perf() {
	local port="$1" list="$2" out="$3" pid="$4"
	shift 4
	local before after
	before="$(bench_cpu_ticks "$pid")"
	taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$list" -T 1 -c 4 -q 200 -t 2 "$@" >"$out" 2>&1
	after="$(bench_cpu_ticks "$pid")"
	echo $((after - before))
}

bench_log "cost: $ROUNDS round(s) of $DURATION s at max qps against each"
declare -a PER_OFF PER_ON QPS_OFF QPS_ON
for r in $(seq 1 "$ROUNDS"); do
	order=(off on)
	((r % 2)) || order=(on off)
	for s in "${order[@]}"; do
		port="P_${s^^}"
		ticks="$(perf "${!port}" "$WORK/q.names" "$WORK/perf.$s.$r" "${PID[$s]}" -l "$DURATION")"
		done_q="$(bench_field 'Queries completed:' "$WORK/perf.$s.$r")"
		qps="$(bench_field 'Queries per second:' "$WORK/perf.$s.$r")"
		per="$(awk -v q="$done_q" -v t="$ticks" -v hz="$BENCH_CLK_TCK" 'BEGIN { printf "%.0f", (t > 0 ? q / (t / hz) : 0) }')"
		if [[ "$s" == off ]]; then
			PER_OFF+=("$per") QPS_OFF+=("$qps")
		else
			PER_ON+=("$per") QPS_ON+=("$qps")
		fi
		bench_log "round $r $s: $qps qps, $per qps per server core"
	done
done

# The flood, against "on" restarted with the flood's limit.
bench_stop_pid "${PID[on]}"
read -r P_FLOOD M_FLOOD <<<"$(bench_free_ports 2)"
start flood "$P_FLOOD" "$M_FLOOD" "        rrl
        rrl_responses_per_second $FLOOD_LIMIT"
ISOLATED="no (ISOLATE=0)"
if ((ISOLATE)); then
	ISOLATED="yes, $(bench_isolate_cpu 0 "$WORK/isolated" "${PID[flood]}") tasks moved off it"
	bench_log "CPU 0 isolated for the flood's runs: $ISOLATED"
fi
VICTIM_PRIO=()
if ((VICTIM_RT)) && chrt -f 10 true 2>/dev/null; then
	VICTIM_PRIO=(chrt -f 10)
fi
victim() {
	"${VICTIM_PRIO[@]}" taskset -c 1 dnsperf -s 127.0.0.1 -p "$P_FLOOD" -a 127.0.1.1 -d "$WORK/q.names" -Q "$VICTIM_RATE" -q 2000 -l "$FLOOD_SECONDS" -t 2 -v >"$1" 2>&1
}
p99() { awk '/^> / { print $NF }' "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6f", v[int(NR * 0.99 + 0.5)] }'; }
metric() { curl -s "http://127.0.0.1:$M_FLOOD/metrics" | awk -v k="$1" 'index($0, k) == 1 { printf "%.0f\n", $2 }'; }

bench_log "victim alone: $VICTIM_RATE qps for $FLOOD_SECONDS s"
victim "$WORK/victim.alone"
bench_log "victim under a flood of $FLOOD_RATE qps from 127.0.0.1"
taskset -c 1 "$WORK/flood" -server "127.0.0.1:$P_FLOOD" -from 127.0.0.1 -name www.bench.test -rate "$FLOOD_RATE" -duration "${FLOOD_SECONDS}s" >"$WORK/flood.out" 2>&1 &
FLOOD_PID=$!
victim "$WORK/victim.flooded"
wait "$FLOOD_PID"
bench_restore_cpus "$WORK/isolated"
slipped="$(metric 'coredns_gslb_rrl_responses_total{decision="slipped",kind="positive"}')"
dropped="$(metric 'coredns_gslb_rrl_responses_total{decision="dropped",kind="positive"}')"
p99_alone="$(p99 "$WORK/victim.alone")"
p99_flooded="$(p99 "$WORK/victim.flooded")"

med_per_off="$(bench_median "${PER_OFF[@]}")"
med_per_on="$(bench_median "${PER_ON[@]}")"
ratio="$(awk -v a="$med_per_on" -v b="$med_per_off" 'BEGIN { printf "%.3f", a / b }')"
flood_sent="$(bench_field 'sent:' "$WORK/flood.out")"
flood_qps="$(bench_field 'rate:' "$WORK/flood.out")"
flood_allowed="$(bench_field 'answered:' "$WORK/flood.out")"
flood_tc="$(bench_field 'truncated:' "$WORK/flood.out")"
limit="$(awk -v l="$FLOOD_LIMIT" -v d="$FLOOD_SECONDS" 'BEGIN { print l * (d + 1) }')"
p99_ratio="$(awk -v a="$p99_flooded" -v b="$p99_alone" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"

echo
echo "## Response rate limiting (bench/rrl.sh), $(date -u +%Y-%m-%d), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Servers on CPU 0, dnsperf on CPU 1, fast path on; $ROUNDS round(s) of $DURATION s."
echo
echo "| | rrl off | rrl on ($RRL_RATE/s, no client over it) | on/off |"
echo "|---|---|---|---|"
echo "| qps (median) | $(bench_median "${QPS_OFF[@]}") | $(bench_median "${QPS_ON[@]}") | |"
echo "| qps per server core (median) | $med_per_off | $med_per_on | $ratio |"
echo
echo "Flood: $flood_sent queries of one name from 127.0.0.1 in $FLOOD_SECONDS s ($flood_qps qps asked $FLOOD_RATE), limit $FLOOD_LIMIT/s, slip 2;"
echo "a victim of another network at $VICTIM_RATE qps$( ((${#VICTIM_PRIO[@]})) && echo ", at real-time priority (${VICTIM_PRIO[*]})"); CPU 0 the server's alone: $ISOLATED."
echo
echo "| | value |"
echo "|---|---|"
echo "| victim p99 alone | ${p99_alone} s |"
echo "| victim p99 under the flood | ${p99_flooded} s ($p99_ratio x) |"
echo "| flood answered in full, at the flooding address | $flood_allowed (limit x (seconds + 1): $limit) |"
echo "| flood slipped (TC), at the flooding address | $flood_tc (the server: $slipped) |"
echo "| flood dropped (the server's count) | $dropped |"
echo "| victim lost alone, under the flood | $(bench_lost_pct "$WORK/victim.alone") %, $(bench_lost_pct "$WORK/victim.flooded") % |"
echo
verdict() { if awk "BEGIN { exit !($1) }"; then echo PASS; else echo "BELOW TARGET"; fi; }
echo "- cost: on/off $ratio, target >= 0.95: $(verdict "$ratio >= 0.95")"
echo "- victim p99 under the flood: $p99_ratio x, target <= 2: $(verdict "$p99_ratio <= 2")"
echo "- flood answered: $flood_allowed, target <= $limit: $(verdict "$flood_allowed <= $limit")"
