#!/usr/bin/env bash
# Whole-process query throughput: Meridian's gslb plugin against CoreDNS's file plugin.
#
# One meridian process serves the same zone (bench.test.) twice, on two loopback ports:
#   127.0.0.1:PORT_GSLB  gslb { zone bench.test. gslb.yml }
#   127.0.0.1:PORT_FILE  file db.bench.test bench.test
# dnsperf sends the same query list (every name, type A) to each port, alternating, for
# ROUNDS rounds of DURATION seconds. The budget (DESIGN.md section 4) is gslb >= 0.95x file.
#
# With --geo, every gslb name is a geoip record (four sites: US, FR, JP, BR) served with a
# generated City database, and every query carries the EDNS Client Subnet 198.18.0.0/24, which
# the database places in San Jose: gslb looks the client up and answers the US site, the file
# zone holds that same address. The budget for geo names is gslb >= 0.9x file.
#
# With --sites, the gslb listener is site a of two sites (docs/sites.md): every gslb name is a
# failover record whose priority-1 backend belongs to site b (the address the file zone holds)
# and whose priority-2 backend to site a. A second meridian process, site b, serves the same
# zone file on PORT_PEER; site a names it in peers (peer_interval 1s) and learns from its
# localtargets that its backends are up, so it answers them. The script waits until site a
# answers site b's address for a sample of names before measuring. Site a keeps reading site b
# every second during the runs. The budget is gslb >= 0.95x file, as without --sites.
#
# With --mode MODE, every gslb name is a record of MODE (two backends) instead of the mix: a
# chain is [priority, rtt, load, hash] with max_answers 1 over two backends of one priority,
# so that each query runs the hash step. The budget for one mode is gslb >= 0.9x file.
#
# Usage: bench/run.sh [--quick] [--geo | --sites | --mode MODE]
# Environment: see bench/README.md.
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: $0 [--quick] [--geo | --sites | --mode MODE]" >&2
	exit 2
}

QUICK=0
GEO=0
SITES=0
MODE=""
while (($#)); do
	case "$1" in
	--quick) QUICK=1 ;;
	--geo) GEO=1 ;;
	--sites) SITES=1 ;;
	--mode)
		MODE="${2:-}"
		[[ -n "$MODE" ]] || usage
		shift
		;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
((GEO + SITES + (${#MODE} > 0) > 1)) && usage

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAMES="${NAMES:-1000}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10}"
if [[ "$QUICK" == 1 ]]; then
	ROUNDS=1
	DURATION=3
fi
# dnsperf parameters (see bench/README.md for why these values).
CLIENTS="${CLIENTS:-4}"          # -c: UDP sockets (distinct source ports)
THREADS="${THREADS:-1}"          # -T: dnsperf threads
OUTSTANDING="${OUTSTANDING:-200}" # -q: queries in flight
DEFAULT_TARGET=0.95
((GEO)) && DEFAULT_TARGET=0.9
[[ -n "$MODE" ]] && DEFAULT_TARGET=0.9
TARGET="${TARGET:-$DEFAULT_TARGET}" # gslb/file ratio to reach
# --geo: the client subnet of every query (ECS option 8: family 1, /24, scope 0, 198.18.0).
GEO_SUBNET=198.18.0.0/24
GEO_ECS=8:00011800c61200
# --sites: how often site a reads site b.
PEER_INTERVAL=1s
MAX_LOST_PCT="${MAX_LOST_PCT:-0.5}"
READY_TIMEOUT="${READY_TIMEOUT:-30}" # seconds to wait for both listeners

for v in NAMES ROUNDS DURATION CLIENTS THREADS OUTSTANDING READY_TIMEOUT; do
	if ! [[ "${!v}" =~ ^[1-9][0-9]*$ ]]; then
		echo "$v must be a positive integer, got '${!v}'" >&2
		exit 2
	fi
done

# --- 1. tools and binary ---------------------------------------------------------------------
bench_need_pkgs dnsperf:dnsperf dig:dnsutils

BIN="$(bench_meridian_bin "$REPO")"

# --- 2. zone, Corefile, server ---------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-bench.XXXXXX")"
SERVER_PID=""
PEER_PID="" # --sites: site b's process
cleanup() {
	bench_stop_pid "$SERVER_PID"
	bench_stop_pid "$PEER_PID"
	if [[ "${KEEP_WORK:-0}" == 1 ]]; then
		echo "work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

# Ports: bench_pick_port (lib.sh). A port taken between the check and the server's bind is
# handled by retrying the start with new ports (see start_server).
FIXED_PORTS=0
[[ -n "${PORT_GSLB:-}${PORT_FILE:-}${PORT_PEER:-}" ]] && FIXED_PORTS=1
PORT_GSLB="${PORT_GSLB:-$(bench_pick_port)}"
PORT_FILE="${PORT_FILE:-$(bench_pick_port "$PORT_GSLB")}"
PORT_PEER="${PORT_PEER:-$(bench_pick_port "$PORT_FILE")}" # used with --sites only

# Names: n00001.bench.test. ... Most are failover (2 backends, priority 1 wins: no health
# checks, so the priority-1 backend is up). Every 50th is roundrobin, every 50th+25 is
# ip-hash, every 50th+12 consistent-hash and every 50th+37 a chain (as --mode chain's), all
# with 2 backends; the file zone holds one A
# record for every name, the priority-1 (or first) address, so both listeners answer one A
# record per query. With
# --sites every name is failover, the priority-1 backend site b's, the priority-2 site a's.
TTL=30
addr() { # address of name i, backend b (1 or 2): 10.b.x.y
	local i=$1 b=$2
	echo "10.$b.$((i / 256 % 256)).$((i % 256))"
}
# shellcheck disable=SC2119 # no records but the static names
bench_zone_file >"$WORK/db.bench.test"

{
	cat <<EOF
soa:
  mname: ns1.bench.test.
  rname: hostmaster.bench.test.
ns:
  - ns1.bench.test.
records:
EOF
	for ((i = 1; i <= NAMES; i++)); do
		if ((GEO)); then
			printf '  n%05d.bench.test.:\n    mode: geoip\n    record_ttl: %d\n    backends:\n' "$i" "$TTL"
			printf '      - {address: %s, country: US}\n      - {address: %s, country: FR}\n' "$(addr "$i" 1)" "$(addr "$i" 2)"
			printf '      - {address: %s, country: JP}\n      - {address: %s, country: BR}\n' "$(addr "$i" 3)" "$(addr "$i" 4)"
			continue
		fi
		if ((SITES)); then
			printf '  n%05d.bench.test.:\n    mode: failover\n    record_ttl: %d\n    backends:\n' "$i" "$TTL"
			printf '      - {address: %s, site: b, priority: 1}\n      - {address: %s, site: a, priority: 2}\n' \
				"$(addr "$i" 1)" "$(addr "$i" 2)"
			continue
		fi
		mode=failover
		if [[ -n "$MODE" ]]; then
			mode=$MODE
		elif ((i % 50 == 0)); then
			mode=roundrobin
		elif ((i % 50 == 25)); then
			mode=ip-hash
		elif ((i % 50 == 12)); then
			mode=consistent-hash
		elif ((i % 50 == 37)); then
			mode=chain
		fi
		printf '  n%05d.bench.test.:\n    mode: %s\n    record_ttl: %d\n' "$i" "$mode" "$TTL"
		if [[ "$mode" == chain ]]; then
			printf '    chain: [priority, rtt, load, hash]\n    max_answers: 1\n'
		fi
		printf '    backends:\n'
		if [[ "$mode" == failover ]]; then
			printf '      - {address: %s, priority: 1}\n      - {address: %s, priority: 2}\n' \
				"$(addr "$i" 1)" "$(addr "$i" 2)"
		else
			printf '      - {address: %s}\n      - {address: %s}\n' "$(addr "$i" 1)" "$(addr "$i" 2)"
		fi
	done
} >"$WORK/gslb.yml"

# --- 3. query list ---------------------------------------------------------------------------
for ((i = 1; i <= NAMES; i++)); do
	printf 'n%05d.bench.test. A\n' "$i"
done | shuf --random-source=<(yes) >"$WORK/queries.txt"

GEO_OPTIONS=""
if ((GEO)); then
	bench_log "writing the City database"
	(cd "$REPO" && go run ./bench/geodb "$WORK/city.mmdb")
	GEO_OPTIONS="use_edns_csubnet
        geoip_maxmind city_db $WORK/city.mmdb"
fi

# write_corefile writes the Corefile of the measured process and, with --sites, site b's
# (Corefile.b); with --sites, the gslb block is site a's, reading site b.
write_corefile() {
	local sites_options=""
	if ((SITES)); then
		sites_options="site a
        peers 127.0.0.1:$PORT_PEER
        peer_interval $PEER_INTERVAL"
		cat >"$WORK/Corefile.b" <<EOF
bench.test:$PORT_PEER {
    bind 127.0.0.1
    gslb {
        zone bench.test. $WORK/gslb.yml
        site b
    }
}
EOF
	fi
	cat >"$WORK/Corefile" <<EOF
bench.test:$PORT_GSLB {
    bind 127.0.0.1
    gslb {
        zone bench.test. $WORK/gslb.yml
        $GEO_OPTIONS
        $sites_options
    }
}
bench.test:$PORT_FILE {
    bind 127.0.0.1
    file $WORK/db.bench.test bench.test
}
EOF
}

probe() { # port name -> first A address or empty
	local subnet=()
	((GEO)) && subnet=(+subnet="$GEO_SUBNET")
	dig +short +time=1 +tries=1 "${subnet[@]}" @127.0.0.1 -p "$1" "$2" A 2>/dev/null | head -n1
}

# start_server: starts meridian (with --sites, site b's first) and waits until both listeners
# answer (with --sites, until site a answers site b's address for a sample of names). Returns
# 1 if a server exited because a port was taken (the caller retries with new ports); exits the
# script on any other failure.
start_server() {
	local first=n00001.bench.test. want port deadline
	want="$(addr 1 1)"
	write_corefile
	if ((SITES)); then
		bench_log "starting site b on 127.0.0.1:$PORT_PEER"
		"$BIN" -conf "$WORK/Corefile.b" >"$WORK/meridian.b.log" 2>&1 &
		PEER_PID=$!
	fi
	bench_log "starting $BIN (gslb on 127.0.0.1:$PORT_GSLB, file on 127.0.0.1:$PORT_FILE, $NAMES names)"
	"$BIN" -conf "$WORK/Corefile" >"$WORK/meridian.log" 2>&1 &
	SERVER_PID=$!
	deadline=$((SECONDS + READY_TIMEOUT))
	for port in "$PORT_GSLB" "$PORT_FILE"; do
		until [[ "$(probe "$port" "$first")" == "$want" ]]; do
			if ! kill -0 "$SERVER_PID" 2>/dev/null || { ((SITES)) && ! kill -0 "$PEER_PID" 2>/dev/null; }; then
				bench_stop_pid "$SERVER_PID"
				bench_stop_pid "$PEER_PID"
				wait "$SERVER_PID" 2>/dev/null || true
				SERVER_PID="" PEER_PID=""
				if grep -qs 'address already in use' "$WORK/meridian.log" "$WORK/meridian.b.log"; then
					return 1
				fi
				echo "meridian exited during startup:" >&2
				cat "$WORK/meridian.log" >&2
				((SITES)) && { echo "site b:" >&2; cat "$WORK/meridian.b.log" >&2; }
				exit 1
			fi
			if ((SECONDS >= deadline)); then
				echo "127.0.0.1:$port did not answer $first with $want within ${READY_TIMEOUT}s" >&2
				cat "$WORK/meridian.log" >&2
				exit 1
			fi
			sleep 0.2
		done
	done
	if ((SITES)); then
		wait_sites "$deadline"
	fi
}

# wait_sites deadline: waits until site a answers site b's address (the priority-1 backend, up
# once site a has read site b's localtargets) for a sample of names; before, it answers its own
# priority-2 backend.
wait_sites() {
	local i n want
	for i in 2 3 $((NAMES / 3)) $((NAMES / 2)) "$NAMES"; do
		((i >= 1 && i <= NAMES)) || continue
		n="$(printf 'n%05d.bench.test.' "$i")"
		want="$(addr "$i" 1)"
		until [[ "$(probe "$PORT_GSLB" "$n")" == "$want" ]]; do
			if ((SECONDS >= $1)); then
				echo "site a does not answer $n with site b's $want within ${READY_TIMEOUT}s (it answers '$(probe "$PORT_GSLB" "$n")')" >&2
				cat "$WORK/meridian.log" >&2
				exit 1
			fi
			sleep 0.2
		done
	done
	bench_log "site a answers site b's backends"
}

attempt=1
until start_server; do
	if [[ "$FIXED_PORTS" == 1 ]] || ((attempt >= 5)); then
		echo "meridian could not bind its ports:" >&2
		cat "$WORK/meridian.log" >&2
		exit 1
	fi
	bench_log "port taken ($(grep -hs -m1 'address already in use' "$WORK/meridian.log" "$WORK/meridian.b.log" | head -n1)); retrying with new ports"
	attempt=$((attempt + 1))
	PORT_GSLB="$(bench_pick_port)"
	PORT_FILE="$(bench_pick_port "$PORT_GSLB")"
	PORT_PEER="$(bench_pick_port "$PORT_FILE")"
done
# Spot-check that both listeners agree on a sample of failover names.
for i in 2 3 $((NAMES / 2)) "$NAMES"; do
	# shellcheck disable=SC2015 # continue is the else of the whole test
	((i >= 1 && i <= NAMES && (GEO || i % 25 != 0) && (i % 50 != 12) && (i % 50 != 37))) && [[ -z "$MODE" || "$MODE" == failover ]] || continue
	n="$(printf 'n%05d.bench.test.' "$i")"
	want="$(addr "$i" 1)"
	g="$(probe "$PORT_GSLB" "$n")"
	f="$(probe "$PORT_FILE" "$n")"
	if [[ "$g" != "$want" ]] || [[ "$f" != "$want" ]]; then
		echo "answers differ for $n: gslb '$g', file '$f', want $want" >&2
		exit 1
	fi
done
bench_log "both listeners ready"

# --- 4. alternating dnsperf rounds -----------------------------------------------------------
declare -a QPS_GSLB=() QPS_FILE=() US_GSLB=() US_FILE=() CL_GSLB=() CL_FILE=()
LOST_FAIL=0
RCODES=""

server_cpu_ticks() { bench_cpu_ticks "$SERVER_PID"; } # meridian's utime + stime, in ticks

# run_perf label port round: runs dnsperf once and writes "qps server_us_per_query
# dnsperf_cpu_pct" to $WORK/result; records rcodes and lost queries. Server CPU per query is
# much less sensitive to other load on the machine than qps.
run_perf() {
	local label=$1 port=$2 round=$3 out qps sent ndone lost pct rc t0 t1 us cl
	out="$WORK/dnsperf-$label-$round.txt"
	t0="$(server_cpu_ticks)"
	# The time keyword reports dnsperf's own CPU use (to check it is not the bottleneck).
	local ecs=()
	((GEO)) && ecs=(-E "$GEO_ECS")
	if ! { TIMEFORMAT='%R %U %S'; time dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" "${ecs[@]}" \
		-l "$DURATION" -c "$CLIENTS" -T "$THREADS" -q "$OUTSTANDING" >"$out" 2>&1; } 2>"$WORK/time"; then
		echo "dnsperf failed against $label (127.0.0.1:$port):" >&2
		cat "$out" >&2
		exit 1
	fi
	t1="$(server_cpu_ticks)"
	qps="$(awk '/Queries per second:/ {print $4}' "$out")"
	sent="$(awk '/Queries sent:/ {print $3}' "$out")"
	ndone="$(awk '/Queries completed:/ {print $3}' "$out")"
	lost="$(awk '/Queries lost:/ {print $3}' "$out")"
	rc="$(sed -n 's/^ *Response codes: *//p' "$out")"
	if [[ -z "$qps" || -z "$sent" || -z "$ndone" || -z "$lost" ]]; then
		echo "could not parse dnsperf output ($out):" >&2
		cat "$out" >&2
		exit 1
	fi
	us="$(awk -v a="$t0" -v b="$t1" -v hz="$BENCH_CLK_TCK" -v n="$ndone" \
		'BEGIN { printf "%.2f", (n > 0 ? 1e6 * (b - a) / hz / n : 0) }')"
	cl="$(awk '{ printf "%.0f", ($1 > 0 ? 100 * ($2 + $3) / $1 : 0) }' "$WORK/time")"
	pct="$(awk -v l="$lost" -v s="$sent" 'BEGIN { printf "%.3f", (s > 0 ? 100 * l / s : 100) }')"
	RCODES+="$(printf '  round %d %-4s sent %-9s lost %-6s (%s%%)  %s' "$round" "$label" "$sent" "$lost" "$pct" "$rc")"$'\n'
	if awk -v p="$pct" -v m="$MAX_LOST_PCT" 'BEGIN { exit !(p > m) }'; then
		LOST_FAIL=1
	fi
	echo "$qps $us $cl" >"$WORK/result"
}

bench_log "dnsperf: $ROUNDS round(s) x ${DURATION}s per listener, -c $CLIENTS -T $THREADS -q $OUTSTANDING"
for ((r = 1; r <= ROUNDS; r++)); do
	# Alternate which listener goes first so drift (thermal, other load) hits both alike.
	if ((r % 2 == 1)); then order=(gslb file); else order=(file gslb); fi
	for label in "${order[@]}"; do
		if [[ "$label" == gslb ]]; then port=$PORT_GSLB; else port=$PORT_FILE; fi
		# run_perf runs in this shell (not a subshell) so RCODES and LOST_FAIL persist.
		run_perf "$label" "$port" "$r"
		read -r qps us cl <"$WORK/result"
		if [[ "$label" == gslb ]]; then
			QPS_GSLB+=("$qps") US_GSLB+=("$us") CL_GSLB+=("$cl")
		else
			QPS_FILE+=("$qps") US_FILE+=("$us") CL_FILE+=("$cl")
		fi
		bench_log "round $r $label: $qps qps, server ${us} us CPU/query, dnsperf ${cl}% CPU"
	done
done

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
	echo "meridian exited during the benchmark:" >&2
	cat "$WORK/meridian.log" >&2
	exit 1
fi
if ((SITES)) && ! kill -0 "$PEER_PID" 2>/dev/null; then
	echo "site b exited during the benchmark:" >&2
	cat "$WORK/meridian.b.log" >&2
	exit 1
fi

# --- 5. report -------------------------------------------------------------------------------
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.2f\n", s / NR }'; }

echo
KIND="mixed failover/roundrobin/ip-hash/consistent-hash/chain"
((GEO)) && KIND="geoip with ECS $GEO_SUBNET"
((SITES)) && KIND="failover, priority 1 at site b, read every $PEER_INTERVAL"
[[ -n "$MODE" ]] && KIND="every name $MODE"
echo "Meridian gslb vs CoreDNS file: $NAMES names ($KIND), $ROUNDS x ${DURATION}s, dnsperf -c $CLIENTS -T $THREADS -q $OUTSTANDING"
echo
echo "| round | gslb qps | file qps | gslb/file | gslb us CPU/q | file us CPU/q | dnsperf CPU % (gslb/file) |"
echo "|------:|---------:|---------:|----------:|--------------:|--------------:|--------------------------:|"
for ((r = 0; r < ROUNDS; r++)); do
	awk -v r=$((r + 1)) -v g="${QPS_GSLB[r]}" -v f="${QPS_FILE[r]}" -v ug="${US_GSLB[r]}" \
		-v uf="${US_FILE[r]}" -v cg="${CL_GSLB[r]}" -v cf="${CL_FILE[r]}" \
		'BEGIN { printf "| %d | %.0f | %.0f | %.3f | %.2f | %.2f | %d / %d |\n", r, g, f, g / f, ug, uf, cg, cf }'
done
mg="$(bench_median "${QPS_GSLB[@]}")"
mf="$(bench_median "${QPS_FILE[@]}")"
ag="$(mean "${QPS_GSLB[@]}")"
af="$(mean "${QPS_FILE[@]}")"
mug="$(bench_median "${US_GSLB[@]}")"
muf="$(bench_median "${US_FILE[@]}")"
aug="$(mean "${US_GSLB[@]}")"
auf="$(mean "${US_FILE[@]}")"
awk -v g="$mg" -v f="$mf" -v ug="$mug" -v uf="$muf" \
	'BEGIN { printf "| median | %.0f | %.0f | %.3f | %.2f | %.2f | |\n", g, f, g / f, ug, uf }'
awk -v g="$ag" -v f="$af" -v ug="$aug" -v uf="$auf" \
	'BEGIN { printf "| mean | %.0f | %.0f | %.3f | %.2f | %.2f | |\n", g, f, g / f, ug, uf }'
echo
awk -v ug="$mug" -v uf="$muf" 'BEGIN { if (ug > 0) printf "server CPU per query, file/gslb (medians): %.3f (above 1: gslb is cheaper)\n", uf / ug }'
echo
echo "Response codes and lost queries:"
printf '%s' "$RCODES"
echo

ratio="$(awk -v g="$mg" -v f="$mf" 'BEGIN { printf "%.3f", g / f }')"
if awk -v r="$ratio" -v t="$TARGET" 'BEGIN { exit !(r >= t) }'; then
	echo "ratio gslb/file (medians) = $ratio, target >= $TARGET: PASS"
else
	echo "ratio gslb/file (medians) = $ratio, target >= $TARGET: BELOW TARGET"
fi

if [[ "$LOST_FAIL" == 1 ]]; then
	echo "FAIL: a run lost more than ${MAX_LOST_PCT}% of its queries" >&2
	exit 1
fi
