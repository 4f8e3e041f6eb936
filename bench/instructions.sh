#!/usr/bin/env bash
# Instructions per operation of the query path's micro-benchmarks, counted by valgrind's
# callgrind: a count that other load on the machine does not move (unlike ns/op), for
# comparing two revisions on a shared machine. Each benchmark runs under callgrind twice, with
# 1,000 and 11,000 iterations; the difference over 10,000 is its cost per operation, setup
# and start-up left out. The garbage collector is off (GOGC=off): its share moved a count by a
# few percent from run to run, and allocations are -benchmem's to compare. The maps' random
# hash seeds still move a count by 1 to 2% between runs: differences under 3% are noise.
#
#   bench/instructions.sh [BASE]        # BASE (default HEAD~1) against the working tree
#
# Prints a Markdown table: benchmark, instructions per op at BASE and now, and the ratio.
# Needs valgrind (apt-get install valgrind) and git; builds the test binaries in a temporary
# worktree of BASE.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind" >&2; exit 1; }

work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"

# The benchmarks: package, then the -test.bench expression of each. A level of the expression
# that matches nothing below a benchmark's name (/XXX) runs that benchmark alone, without the
# sub-benchmarks beside it (Respond+Pack), and reports nothing: its count is what it ran.
benches=(
	"internal/answer|BenchmarkAppendFast\$/^failover\$/^A\$/XXX"
	"internal/answer|BenchmarkAppendFast\$/^failover\$/^A\\+count\$/XXX"
	"internal/answer|BenchmarkRespond\$/failover/A\$"
	"internal/answer|BenchmarkRespond\$/ip-hash/A\\+ECS\$"
	"internal/answer|BenchmarkRespond\$/NXDOMAIN\$"
	"internal/answer|BenchmarkRespond\$/NODATA/MX\$"
	"internal/answer|BenchmarkRespondGeo\$"
	"internal/answer|BenchmarkRespondSites\$"
	"internal/answer|BenchmarkAppendFast\$"
	"plugin/gslb|BenchmarkServeDNS\$"
	"plugin/gslb|BenchmarkServeDNS\$/^failover\$/XXX"
)

# build DIR PKG OUT compiles the test binary of PKG in DIR.
build() { (cd "$1" && go test -c -o "$3" "./$2"); }

# count BIN BENCH N prints the instructions of running BENCH N times (asynchronous preemption
# off: its signals confuse callgrind; the garbage collector off).
count() {
	local out="$work/cg.out"
	GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$1" -test.run XXX -test.bench "$2" -test.benchtime "$3x" -test.cpu 1 >/dev/null 2>&1
	awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

# perop BIN BENCH prints the instructions of one operation of BENCH.
perop() {
	local a b
	a=$(count "$1" "$2" 1000)
	b=$(count "$1" "$2" 11000)
	echo $(((b - a) / 10000))
}

echo "| benchmark | $(git rev-parse --short "$base") | now | now / base |"
echo "|---|---:|---:|---:|"
for entry in "${benches[@]}"; do
	pkg=${entry%%|*} bench=${entry#*|}
	bin=$work/$(echo "$pkg" | tr / _)
	[ -x "$bin.base" ] || build "$work/base" "$pkg" "$bin.base"
	[ -x "$bin.now" ] || build . "$pkg" "$bin.now"
	old=$(perop "$bin.base" "$bench")
	new=$(perop "$bin.now" "$bench")
	# shellcheck disable=SC2016 # the backquotes are Markdown's
	printf '| `%s %s` | %d | %d | %.3f |\n' "$pkg" "$bench" "$old" "$new" "$(echo "$new / $old" | bc -l)"
done
