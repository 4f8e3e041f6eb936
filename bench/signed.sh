#!/usr/bin/env bash
# Signed answers, side by side: Meridian's gslb with the fast path and its own signer (a CSK,
# ECDSA P-256) and Knot DNS (Debian's package) signing the same zone bench.test. itself
# (automatic signing, ECDSA P-256, one key: single-type-signing), each its own process on
# 127.0.0.1, measured in one run by query kind:
#   a         A of www without the DO bit: an unsigned answer (Meridian: a GSLB record,
#             failover over two addresses; Knot: a static A)
#   a-do      the same with the DO bit: the A RRset and its RRSIG
#   nodata-do AAAA of the IPv4-only www with the DO bit: SOA, NSEC and their RRSIGs
# Plus NAMES static A names in both zones.
#
# The servers run under taskset -c 0, dnsperf under taskset -c 1. ROUNDS rounds; a round takes
# a max-qps run (dnsperf -l DURATION) of each kind for each server back to back, the order of
# the servers rotating from round to round; the queries completed over the server's CPU time
# (utime + stime of its processes) give the queries per server CPU-second. The report gives
# the medians over the rounds as a Markdown table, with the ratios Meridian / Knot and, for
# Meridian, signed / unsigned; the load average before and after.
#
# Usage: bench/signed.sh [--quick]
# Environment: see bench/README.md (section signed.sh).
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_quick_arg "$@"

ROUNDS="${ROUNDS:-3}" DURATION="${DURATION:-3}"
((QUICK)) && ROUNDS=1 DURATION=1
NAMES="${NAMES:-1000}"
CLIENTS="${CLIENTS:-4}"
OUTSTANDING="${OUTSTANDING:-200}"
TIMEOUT="${TIMEOUT:-1}"
READY_TIMEOUT="${READY_TIMEOUT:-30}"
KINDS="a a-do nodata-do"
SERVERS="meridian knot"
bench_positive ROUNDS DURATION NAMES CLIENTS OUTSTANDING TIMEOUT READY_TIMEOUT

# --- 1. tools, binary and key -----------------------------------------------------------------
bench_need_pkgs dnsperf:dnsperf dig:dnsutils taskset:util-linux knotd:knot dnssec-keygen:bind9-dnsutils
BIN="$(bench_meridian_bin "$BENCH_REPO")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-signed.XXXXXX")"
declare -A PID=() PORT=()
trap bench_cleanup EXIT
mkdir -p "$WORK/meridian" "$WORK/knot"
KEY="$(cd "$WORK/meridian" && dnssec-keygen -q -a ECDSAP256SHA256 -f KSK bench.test.)"

# --- 2. the zone, in each server's format -----------------------------------------------------
TTL=30
WWW1=10.9.0.1 WWW2=10.9.0.2
{
	# shellcheck disable=SC2119 # no static lines of its own
	bench_gslb_static
	cat <<EOF
records:
  www.bench.test.: {mode: failover, record_ttl: $TTL, backends: [{address: $WWW1, priority: 1}, {address: $WWW2, priority: 2}]}
EOF
} >"$WORK/meridian/bench.yml"
bench_zone_file "www\t$TTL\tIN A\t$WWW1" >"$WORK/knot/bench.test.zone"

# --- 3. the queries of each kind ---------------------------------------------------------------
for ((i = 0; i < 1000; i++)); do echo "www.bench.test. A"; done >"$WORK/q.a"
cp "$WORK/q.a" "$WORK/q.a-do"
for ((i = 0; i < 1000; i++)); do echo "www.bench.test. AAAA"; done >"$WORK/q.nodata-do"
kind_args() { # dnsperf's arguments for the kind
	case "$1" in
	*-do) echo "-c $CLIENTS -D" ;;
	*) echo "-c $CLIENTS" ;;
	esac
}

# --- 4. servers -------------------------------------------------------------------------------
write_configs() {
	bench_gslb_corefile "$WORK/meridian/Corefile" "${PORT[meridian]:-0}" "$WORK/meridian/bench.yml" \
		"dnssec {" "    key file $WORK/meridian/$KEY" "}" fastpath
	bench_knot_conf "$WORK/knot" "${PORT[knot]:-0}" "policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
" "    zonefile-sync: -1
    dnssec-signing: on
    dnssec-policy: bench
"
}

# probe port name [type]: dig's whole answer (read to its end, not by grep -q: under pipefail, dig
# killed by SIGPIPE would fail the check).
probe() { dig +dnssec +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" "${3:-A}" 2>/dev/null; }
ready() { # answers www A signed
	probe "${PORT[$1]}" www.bench.test. | grep "RRSIG.*A 13 3" >/dev/null
}
# launch server log: starts it on CPU 0, in the background (bench_start_servers).
launch() {
	case "$1" in
	meridian) taskset -c 0 "$BIN" -conf "$WORK/meridian/Corefile" >"$2" 2>&1 & ;;
	knot) taskset -c 0 knotd -c "$WORK/knot/knot.conf" >"$2" 2>&1 & ;;
	esac
}
# shellcheck disable=SC2086 # the servers' names
bench_start_servers $SERVERS
for s in $SERVERS; do
	probe "${PORT[$s]}" www.bench.test. AAAA | grep "NSEC.*RRSIG" >/dev/null || {
		echo "$s does not answer NODATA with a signed NSEC record" >&2
		exit 1
	}
done

# --- 5. measurements --------------------------------------------------------------------------
mkdir -p "$WORK/res"
# measure server kind round: a max-qps run of the kind.
measure() {
	local s=$1 kind=$2 out="$WORK/$1.$2.$3" cpu
	cpu="$(bench_perf_kind "$s" "$kind" "$out" -l "$DURATION" -q "$OUTSTANDING")"
	bench_per_cpu "$(bench_field 'Queries completed:' "$out")" "$cpu" >>"$WORK/res/$s.$kind"
	bench_log "round $3 $s $kind: $(bench_field 'Queries per second:' "$out") qps, $(tail -n1 "$WORK/res/$s.$kind") per CPU-second"
	bench_running "$s"
}
bench_rounds measure

# --- 6. report --------------------------------------------------------------------------------
med() { bench_med_file "$WORK/res/$1.$2"; } # server kind
label() {
	case "$1" in
	a) echo "www A, no DO (unsigned)" ;;
	a-do) echo "www A, DO (A + RRSIG)" ;;
	nodata-do) echo "www AAAA, DO (NODATA: SOA, NSEC + RRSIGs)" ;;
	esac
}
echo
echo "Servers pinned to CPU 0 (taskset -c 0), dnsperf to CPU 1; $ROUNDS round(s), medians."
echo "dnsperf -T 1 -c $CLIENTS -q $OUTSTANDING -l $DURATION (DO: -D)."
echo "Load average before: $LOAD_BEFORE; after: $LOAD_AFTER."
echo
echo "Queries per server CPU-second:"
echo
echo "| query | Meridian | Knot | Meridian / Knot |"
echo "|---|---:|---:|---:|"
for kind in $KINDS; do
	printf '| %s | %s | %s | %s |\n' "$(label "$kind")" "$(med meridian "$kind")" "$(med knot "$kind")" "$(bench_ratio "$(med meridian "$kind")" "$(med knot "$kind")")"
done
echo
echo "Meridian, signed A / unsigned A: $(bench_ratio "$(med meridian a-do)" "$(med meridian a)"); Knot: $(bench_ratio "$(med knot a-do)" "$(med knot a)")."
