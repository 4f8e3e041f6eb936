# shellcheck shell=bash
# Shared shell functions of the bench/ scripts. Source it; it defines functions and a few
# read-only settings, and runs nothing else.
#
#   bench_log MSG...            "== MSG" on stderr
#   bench_need_pkgs CMD:PKG...  apt-get installs PKG for each CMD not on PATH (sudo if not root)
#   bench_port_in_use PORT      true if any TCP or UDP socket, listening or not, uses PORT
#   bench_pick_port [AVOID...]  prints a free port below the ephemeral range, not one of AVOID
#   bench_stop_pid PID          stops the process (SIGTERM, then waits) if it runs
#   bench_gone PID              true once the process has exited, its last thread too (also when
#                               it is a zombie nobody reaps: a binary upgrade's parent)
#   bench_stop_pidfile FILE     SIGTERM to the PID in FILE (no child of this shell after an
#                               upgrade), then waits until it has exited
#   bench_free_ports N          prints N distinct free loopback TCP ports, on one line
#   bench_api_corefile FILE DNS API ZONE
#                               writes to FILE a Corefile that serves the zone file ZONE as
#                               bench.test. on 127.0.0.1:DNS, with the admin API on port API
#   bench_cpu_ticks PID         utime + stime of the process (all its threads), in clock ticks
#   bench_tree_pids PID         PID and its descendants' PIDs, one a line
#   bench_tree_ticks PID        bench_cpu_ticks of PID and its descendants, added up
#   bench_median N...           the median (mean of the middle two for an even count)
#   bench_field KEY FILE        the first word after "KEY" on the first line of FILE holding it
#                               (dnsperf's report: "Queries per second:")
#   bench_lost_pct FILE         the queries a dnsperf report counts lost, in % of those sent
#   bench_quick_arg ARG...      sets QUICK from the arguments ([--quick]), else exits with usage
#   bench_start_servers S...    starts each server S on a free port and waits until it is ready,
#                               with the caller's functions and globals
#   bench_stop_servers          stops every server of PID, and empties it
#   bench_cleanup               bench_stop_servers, bench_restore_cpus, bench_remove_work
#   bench_rotate R S...         S... rotated for round R (the first round: as given), on one line
#   bench_perf_kind S KIND OUT ARG...
#                               dnsperf of KIND's queries against server S; prints its CPU seconds
#   bench_per_cpu N SECONDS     N / SECONDS, rounded (0 when SECONDS is 0)
#   bench_record A B C VALUE    appends VALUE to the results file $WORK/res/A.B.C
#   bench_latencies FILE        a dnsperf -v report's per-query latencies, in microseconds
#   bench_med_file FILE         bench_median of the values in FILE, or n/a when it has none
#   bench_static_addr I         the address of static name I (10.1.x.y)
#   bench_rounds FUNC...        ROUNDS rounds of FUNC S KIND ROUND for each kind and server
#   bench_gslb_static [LINE...] the start of a gslb zone file: SOA, NS, static names (LINE... too)
#   bench_gslb_corefile FILE PORT ZONE LINE...
#                               writes a Corefile: gslb serves ZONE as bench.test. on PORT
#   bench_knot_conf DIR PORT [SECTIONS [ZONE_LINES]]
#                               writes DIR/knot.conf: Knot DNS serves DIR/bench.test.zone on PORT
#   bench_static_lines FORMAT   the zone's NAMES static names n00001... (addresses 10.1.x.y),
#                               each printed with FORMAT (name, address)
#   bench_zone_file [RECORD...] bench.test.'s zone file: SOA, NS, ns1, RECORD..., static names
#   bench_ratio A B             A / B with two decimals ("n/a" when either is, or B is 0)
#   bench_remove_work           removes $WORK, unless KEEP_WORK=1 (then says where it is)
#   bench_positive VAR...       exits (status 2) unless each variable VAR is a positive integer
#   bench_running S             exits, with its log ($WORK/S.log), unless server S (PID[S]) runs

# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_CLK_TCK="$(getconf CLK_TCK)"
# shellcheck disable=SC2034
BENCH_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # the repository's top directory

bench_log() { echo "== $*" >&2; }

# bench_meridian_bin REPO: prints the meridian binary to measure: $MERIDIAN_BIN, or REPO's
# bin/meridian built now; exits when it is not an executable.
bench_meridian_bin() {
	local bin="${MERIDIAN_BIN:-}"
	if [[ -z "$bin" ]]; then
		bench_log "building meridian"
		make -C "$1" build >&2
		bin="$1/bin/meridian"
	fi
	[[ -x "$bin" ]] || {
		echo "meridian binary not found or not executable: $bin" >&2
		exit 1
	}
	echo "$bin"
}

# bench_hold_idle_poll: holds the kernel's CPU latency limit at 0 us for as long as the calling
# shell runs (the limit lasts while /dev/cpu_dma_latency stays open), so that idle CPUs poll
# instead of halting, as tuned's latency-performance profile does. Fails, changing nothing,
# where the device is not writable (not root).
bench_hold_idle_poll() {
	[[ -w /dev/cpu_dma_latency ]] || return 1
	exec {BENCH_IDLE_FD}>/dev/cpu_dma_latency || return 1
	echo 0 >&"$BENCH_IDLE_FD"
}

# bench_cpus_without LIST CPU: prints the kernel CPU list LIST ("0-3,6") without CPU, comma
# separated (empty when LIST is CPU alone).
bench_cpus_without() {
	local part c kept=() parts
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		for ((c = ${part%-*}; c <= ${part#*-}; c++)); do ((c == $2)) || kept+=("$c"); done
	done
	(
		IFS=,
		echo "${kept[*]}"
	)
}

# bench_isolate_cpu CPU SAVE PID...: gives CPU to the processes PID... alone. Every other task
# that may run on CPU and on others (every thread of every other process, the kernel's unbound
# threads) moves to the others; SAVE gets a "tid list" line for each, for bench_restore_cpus.
# Per-CPU kernel threads stay (the kernel refuses to move them). Prints how many moved.
bench_isolate_cpu() {
	local cpu=$1 save=$2 keep=" ${*:3} " t pid tid k v list others n=0
	: >"$save"
	for t in /proc/[0-9]*/task/[0-9]*; do
		pid=${t#/proc/} tid=${t##*/}
		pid=${pid%%/*}
		[[ "$keep" == *" $pid "* ]] && continue
		list=""
		while read -r k v; do [[ "$k" == Cpus_allowed_list: ]] && list=$v && break; done 2>/dev/null <"$t/status" || continue
		[[ -n "$list" ]] || continue
		others="$(bench_cpus_without "$list" "$cpu")"
		[[ -n "$others" && "$others" != "$list" ]] || continue
		taskset -pc "$others" "$tid" >/dev/null 2>&1 || continue
		echo "$tid $list" >>"$save"
		n=$((n + 1))
	done
	echo "$n"
}

# bench_restore_cpus SAVE: gives the tasks bench_isolate_cpu moved their CPUs back (those still
# running), and empties SAVE.
bench_restore_cpus() {
	local tid list
	[[ -f "$1" ]] || return 0
	while read -r tid list; do taskset -pc "$list" "$tid" >/dev/null 2>&1 || true; done <"$1"
	: >"$1"
}

bench_need_pkgs() {
	local spec pkgs=() sudo_cmd=()
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null || pkgs+=("${spec#*:}")
	done
	((${#pkgs[@]} > 0)) || return 0
	bench_log "installing: ${pkgs[*]}"
	[[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
	"${sudo_cmd[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${pkgs[@]}"
}

# Ports are picked below the kernel's ephemeral range (so no outgoing connection holds them)
# and checked against every socket, listening or not. A port can still be taken between the
# check and a server's bind: callers retry the start with new ports.
BENCH_EPHEMERAL_LO="$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
BENCH_PORT_LO=10000
BENCH_PORT_HI=$((BENCH_EPHEMERAL_LO > BENCH_PORT_LO + 1000 ? BENCH_EPHEMERAL_LO - 1 : 32767))

bench_port_in_use() {
	ss -Hanu "sport = :$1" 2>/dev/null | grep -q . ||
		ss -Hant "sport = :$1" 2>/dev/null | grep -q .
}

bench_pick_port() {
	local p a taken
	for _ in $(seq 1 100); do
		p=$((BENCH_PORT_LO + RANDOM % (BENCH_PORT_HI - BENCH_PORT_LO + 1)))
		taken=0
		for a in "$@"; do [[ "$p" == "$a" ]] && taken=1; done
		if ((!taken)) && ! bench_port_in_use "$p"; then
			echo "$p"
			return 0
		fi
	done
	echo "no free port found in $BENCH_PORT_LO-$BENCH_PORT_HI" >&2
	return 1
}

bench_stop_pid() {
	if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
	fi
}

bench_gone() {
	[[ ! -d "/proc/$1" ]] && return 0
	local state
	state="$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null || echo X)"
	[[ "$state" == Z || "$state" == X ]] && (($(find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) <= 1))
}

bench_stop_pidfile() {
	[[ -f "$1" ]] || return 0
	local pid
	pid="$(cat "$1")"
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		bench_gone "$pid" && return 0
		sleep 0.1
	done
}

bench_free_ports() {
	python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])' "$1"
}

bench_api_corefile() {
	cat >"$1" <<COREFILE
.:$2 {
    bind 127.0.0.1
    gslb {
        zone bench.test. $4
        api_enable
        api_listen_addr 127.0.0.1
        api_listen_port $3
        api_allow_unauthenticated
    }
}
COREFILE
}

# The fields after the process name, which may hold spaces and parentheses (NSD names its
# processes "nsd: main", "nsd: server 1"): utime and stime are the 12th and 13th after it.
bench_cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

bench_tree_pids() {
	local p children=("$1")
	while ((${#children[@]})); do
		printf '%s\n' "${children[@]}"
		# shellcheck disable=SC2046
		read -ra children <<<"$(for p in "${children[@]}"; do cat "/proc/$p/task/"*/children 2>/dev/null; done | tr '\n' ' ')"
	done
}

bench_tree_ticks() {
	local p n=0
	for p in $(bench_tree_pids "$1"); do n=$((n + $(bench_cpu_ticks "$p" 2>/dev/null || echo 0))); done
	echo "$n"
}

bench_field() { awk -v k="$1" 'index($0, k) { sub(/^.*: */, ""); print $1; exit }' "$2"; }

bench_lost_pct() {
	awk -v s="$(bench_field 'Queries sent:' "$1")" -v l="$(bench_field 'Queries lost:' "$1")" 'BEGIN { printf "%.2f", (s > 0 ? 100 * l / s : 100) }'
}

bench_median() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_quick_arg ARG...: the scripts' arguments: QUICK=1 with --quick, else 0; exits (status 2)
# with the usage on any other argument.
bench_quick_arg() {
	QUICK=0
	while (($#)); do
		case "$1" in
		--quick) QUICK=1 ;;
		*)
			echo "usage: $0 [--quick]" >&2
			exit 2
			;;
		esac
		shift
	done
}

# bench_start_servers S...: starts each server S on a port of its own, picked anew (up to 5
# times) when another process took it first, and waits until it answers. It uses the caller's
# associative arrays PORT (set here) and PID, READY_TIMEOUT and WORK, and its functions
# write_configs (writes every server's configuration from PORT), launch S LOG (starts S in the
# background, its output to LOG) and ready S (true once S answers). Optional: the ports of
# BENCH_AVOID_PORTS are never picked, and a function start_failed S LOG, called when S exits
# during start-up (not for a taken port), may return 0 to go on without S (no PID[S]). Exits
# on a server that fails.
bench_start_servers() {
	local s attempt rc
	for s in "$@"; do
		for ((attempt = 1; ; attempt++)); do
			# shellcheck disable=SC2086,SC2048 # ports are numbers
			PORT["$s"]="$(bench_pick_port ${PORT[*]:-} ${BENCH_AVOID_PORTS:-})"
			write_configs
			rc=0
			bench_start_server "$s" || rc=$?
			((rc != 1)) && break
			((attempt < 5)) || {
				echo "$s could not bind a port:" >&2
				cat "$WORK/$s.log" >&2
				exit 1
			}
			bench_log "$s: port ${PORT[$s]} taken, retrying with another"
		done
	done
	bench_log "servers ready: $(for s in "$@"; do [[ -z "${PID[$s]:-}" ]] || printf '%s on %s (pid %s); ' "$s" "${PORT[$s]}" "${PID[$s]}"; done)"
}

# bench_start_server S: launches S and waits until it is ready (see bench_start_servers);
# returns 1 when its port was taken, 2 when start_failed gave it up.
bench_start_server() {
	local s=$1 log="$WORK/$1.log" deadline
	launch "$s" "$log"
	PID["$s"]=$!
	deadline=$((SECONDS + READY_TIMEOUT))
	until ready "$s"; do
		if ! kill -0 "${PID[$s]}" 2>/dev/null; then
			wait "${PID[$s]}" 2>/dev/null || true
			unset "PID[$s]"
			grep -qsi 'address already in use\|Address in use' "$log" && return 1
			if declare -F start_failed >/dev/null && start_failed "$s" "$log"; then
				return 2
			fi
			echo "$s exited during startup:" >&2
			cat "$log" >&2
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "$s (127.0.0.1:${PORT[$s]}) not ready within ${READY_TIMEOUT}s:" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.2
	done
}

bench_stop_servers() {
	local s
	for s in "${!PID[@]}"; do
		bench_stop_pid "${PID[$s]}"
		unset "PID[$s]"
	done
}

bench_cleanup() {
	bench_stop_servers
	bench_restore_cpus "$WORK/isolated"
	bench_remove_work
}

bench_rotate() {
	local r=$1 k
	shift
	for ((k = 0; k < $#; k++)); do printf '%s ' "${@:$(((k + r - 1) % $# + 1)):1}"; done
	echo
}

# bench_perf_kind S KIND OUT ARG...: runs dnsperf (on CPU 1, one thread) of the queries
# $WORK/q.KIND against server S, with the caller's kind_args KIND and -t TIMEOUT, and ARG...;
# its report to OUT. Prints the CPU seconds of S (and its children) over the run; exits when
# dnsperf fails.
bench_perf_kind() {
	local s=$1 kind=$2 report=$3 t0 t1
	shift 3
	t0="$(bench_tree_ticks "${PID[$s]}")"
	# shellcheck disable=SC2046
	if ! taskset -c 1 dnsperf -s 127.0.0.1 -p "${PORT[$s]}" -d "$WORK/q.$kind" -T 1 $(kind_args "$kind") -t "$TIMEOUT" "$@" >"$report" 2>&1; then
		echo "dnsperf failed against $s ($kind):" >&2
		cat "$report" >&2
		exit 1
	fi
	t1="$(bench_tree_ticks "${PID[$s]}")"
	awk -v a="$t0" -v b="$t1" -v hz="$BENCH_CLK_TCK" 'BEGIN { printf "%.3f\n", (b - a) / hz }'
}

bench_per_cpu() { awk -v n="$1" -v c="$2" 'BEGIN { printf "%.0f\n", (c > 0 ? n / c : 0) }'; }

bench_record() { echo "$4" >>"$WORK/res/$1.$2.$3"; }

# Per-query lines: "> RCODE NAME TYPE LATENCY_SECONDS".
bench_latencies() { awk '$1 == ">" && NF == 5 { printf "%.0f\n", $5 * 1e6 }' "$1"; }

bench_med_file() {
	if [[ -s "$1" ]]; then
		# shellcheck disable=SC2046
		bench_median $(cat "$1")
	else
		echo n/a
	fi
}

bench_static_addr() { echo "10.1.$(($1 / 256 % 256)).$(($1 % 256))"; }

# bench_rounds FUNC...: ROUNDS rounds; in each, for each kind of KINDS, each FUNC in turn runs
# as FUNC S KIND ROUND for each server S of SERVERS, in an order that rotates from round to round
# (so that a slow spell of the host falls on the servers alike). Sets LOAD_BEFORE and LOAD_AFTER,
# the load averages before and after.
bench_rounds() {
	local r kind f s order
	LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
	for ((r = 1; r <= ROUNDS; r++)); do
		# shellcheck disable=SC2086 # the servers' names
		read -ra order <<<"$(bench_rotate "$r" $SERVERS)"
		for kind in $KINDS; do
			for f in "$@"; do
				for s in "${order[@]}"; do "$f" "$s" "$kind" "$r"; done
			done
		done
	done
	# shellcheck disable=SC2034 # the caller's report
	LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_gslb_static [LINE...]: the start of a gslb zone file for bench.test.: SOA, NS, and the
# static names: ns1, the lines LINE..., and the NAMES static names (TTL).
bench_gslb_static() {
	cat <<YAML
soa: {mname: ns1.bench.test., rname: hostmaster.bench.test., serial: 1, minimum: 60}
ns: [ns1.bench.test.]
static:
  ns1: ["A 127.0.0.1"]
YAML
	(($#)) && printf '%s\n' "$@"
	bench_static_lines "  %s: [\"$TTL A %s\"]\n"
}

# bench_gslb_corefile FILE PORT ZONE LINE...: writes to FILE a Corefile in which the gslb plugin
# serves the zone file ZONE as bench.test. on 127.0.0.1:PORT, with the lines LINE... in its block.
bench_gslb_corefile() {
	local file=$1 port=$2 zone=$3 line
	shift 3
	{
		printf 'bench.test:%s {\n    bind 127.0.0.1\n    gslb {\n        zone bench.test. %s\n' "$port" "$zone"
		for line in "$@"; do printf '        %s\n' "$line"; done
		printf '    }\n}\n'
	} >"$file"
}

# bench_knot_conf DIR PORT [SECTIONS [ZONE_LINES]]: writes DIR/knot.conf, in which Knot DNS
# serves bench.test. from DIR/bench.test.zone on 127.0.0.1:PORT, its state in DIR, warnings to
# stderr; the text SECTIONS (whole lines) before the zone section, ZONE_LINES in it.
bench_knot_conf() {
	cat >"$1/knot.conf" <<KNOT
server:
    rundir: "$1"
    listen: 127.0.0.1@$2
database:
    storage: "$1"
${3:-}zone:
  - domain: bench.test
    storage: "$1"
    file: "bench.test.zone"
${4:-}log:
  - target: stderr
    any: warning
KNOT
}

bench_static_lines() {
	local i
	for ((i = 1; i <= NAMES; i++)); do
		# shellcheck disable=SC2059 # the format is the caller's
		printf "$1" "$(printf 'n%05d' "$i")" "10.1.$((i / 256 % 256)).$((i % 256))"
	done
}

# bench_zone_file [RECORD...]: the zone file of bench.test.: SOA, NS, ns1's A, the records
# RECORD... (a line each, \t for a tab), and the NAMES static names (TTL).
bench_zone_file() {
	cat <<ZONE
\$ORIGIN bench.test.
\$TTL 3600
@	IN SOA	ns1.bench.test. hostmaster.bench.test. 1 7200 3600 1209600 60
@	IN NS	ns1.bench.test.
ns1	IN A	127.0.0.1
ZONE
	(($#)) && printf '%b\n' "$@"
	bench_static_lines "%s\t$TTL\tIN A\t%s\n"
}

bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

bench_remove_work() {
	if [[ "${KEEP_WORK:-0}" == 1 ]]; then
		echo "work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}

bench_positive() {
	local v
	for v in "$@"; do
		[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || {
			echo "$v must be a positive integer, got '${!v}'" >&2
			exit 2
		}
	done
}

bench_running() {
	kill -0 "${PID[$1]}" 2>/dev/null || {
		echo "$1 exited:" >&2
		cat "$WORK/$1.log" >&2
		exit 1
	}
}
