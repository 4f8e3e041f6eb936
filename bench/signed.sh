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

QUICK=0
case "${1:-}" in
--quick) QUICK=1 ;;
"") ;;
*)
	echo "usage: $0 [--quick]" >&2
	exit 2
	;;
esac

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-3}"
if ((QUICK)); then
	ROUNDS=1 DURATION=1
fi
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
BIN="$(bench_meridian_bin "$REPO")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meridian-signed.XXXXXX")"
declare -A PID=() PORT=()
cleanup() {
	local s
	for s in "${!PID[@]}"; do bench_stop_pid "${PID[$s]}"; done
	bench_remove_work
}
trap cleanup EXIT
mkdir -p "$WORK/meridian" "$WORK/knot"
KEY="$(cd "$WORK/meridian" && dnssec-keygen -q -a ECDSAP256SHA256 -f KSK bench.test.)"

# --- 2. the zone, in each server's format -----------------------------------------------------
TTL=30
WWW1=10.9.0.1 WWW2=10.9.0.2
{
	cat <<EOF
soa: {mname: ns1.bench.test., rname: hostmaster.bench.test., serial: 1, minimum: 60}
ns: [ns1.bench.test.]
static:
  ns1: ["A 127.0.0.1"]
EOF
	bench_static_lines "  %s: [\"$TTL A %s\"]\n"
	cat <<EOF
records:
  www.bench.test.: {mode: failover, record_ttl: $TTL, backends: [{address: $WWW1, priority: 1}, {address: $WWW2, priority: 2}]}
EOF
} >"$WORK/meridian/bench.yml"
{
	bench_zone_head
	printf 'www\t%s\tIN A\t%s\n' "$TTL" "$WWW1"
	bench_static_lines "%s\t$TTL\tIN A\t%s\n"
} >"$WORK/knot/bench.test.zone"

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
	cat >"$WORK/meridian/Corefile" <<EOF
bench.test:${PORT[meridian]:-0} {
    bind 127.0.0.1
    gslb {
        zone bench.test. $WORK/meridian/bench.yml
        dnssec {
            key file $WORK/meridian/$KEY
        }
        fastpath
    }
}
EOF
	cat >"$WORK/knot/knot.conf" <<EOF
server:
    rundir: "$WORK/knot"
    listen: 127.0.0.1@${PORT[knot]:-0}
database:
    storage: "$WORK/knot"
policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
zone:
  - domain: bench.test
    storage: "$WORK/knot"
    file: "bench.test.zone"
    zonefile-sync: -1
    dnssec-signing: on
    dnssec-policy: bench
log:
  - target: stderr
    any: warning
EOF
}

probe() { dig +dnssec +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" "${3:-A}" 2>/dev/null; }
ready() { # answers www A signed
	probe "${PORT[$1]}" www.bench.test. | grep -q "RRSIG.*A 13 3"
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
	probe "${PORT[$s]}" www.bench.test. AAAA | grep -q "NSEC.*RRSIG" || {
		echo "$s does not answer NODATA with a signed NSEC record" >&2
		exit 1
	}
done

# --- 5. measurements --------------------------------------------------------------------------
mkdir -p "$WORK/res"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
	read -ra servers <<<"$SERVERS"
	order=()
	for ((k = 0; k < ${#servers[@]}; k++)); do order+=("${servers[$(((k + r - 1) % ${#servers[@]}))]}"); done
	for kind in $KINDS; do
		for s in "${order[@]}"; do
			perf_out="$WORK/$s.$kind.$r"
			t0="$(bench_tree_ticks "${PID[$s]}")"
			# shellcheck disable=SC2046
			if ! taskset -c 1 dnsperf -s 127.0.0.1 -p "${PORT[$s]}" -d "$WORK/q.$kind" -T 1 $(kind_args "$kind") -t "$TIMEOUT" -l "$DURATION" -q "$OUTSTANDING" >"$perf_out" 2>&1; then
				echo "dnsperf failed against $s ($kind):" >&2
				cat "$perf_out" >&2
				exit 1
			fi
			t1="$(bench_tree_ticks "${PID[$s]}")"
			awk -v n="$(bench_field 'Queries completed:' "$perf_out")" -v a="$t0" -v b="$t1" -v hz="$BENCH_CLK_TCK" \
				'BEGIN { printf "%.0f\n", (b > a ? n * hz / (b - a) : 0) }' >>"$WORK/res/$s.$kind"
			bench_log "round $r $s $kind: $(bench_field 'Queries per second:' "$perf_out") qps, $(tail -n1 "$WORK/res/$s.$kind") per CPU-second"
			bench_running "$s"
		done
	done
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- 6. report --------------------------------------------------------------------------------
med() { # server kind
	# shellcheck disable=SC2046
	bench_median $(cat "$WORK/res/$1.$2")
}
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
