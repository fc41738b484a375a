#!/bin/sh
# The capture shim's speed benchmark (part of `make bench`): wall time of
#   (a) a Python logging program writing 100,000 lines, one in ten an audit line
#   (b) a C program making 180,000 unbuffered write(2) calls, same mix
# each run plain, under the shim (preloaded with the environment `ttaudit
# capture` sets; the launcher's own one-time start-up is printed apart), and
# under `strace -f -e trace=write`
# (what users reach for today), printed as ratios to plain. Each figure is the
# fastest of RUNS interleaved runs (default 5; strace, being slow, of 2), with
# the median and the slowest run after it. For (b) a fourth variant, "floor",
# runs without the shim but makes the one write(2) per audit line that the
# shim makes (bench_writes N FILE): the part of the shim's cost that only
# batching records could remove.
# Output goes to a file in a temp dir, as a server's log would. Goal: shim <= 1.03x on (a), <= 1.05x on (b).
#
# usage: tools/bench-shim.sh [BUILD]    (env: PYTHON, RUNS, LINES_PY, WRITES_C)
set -eu
export LC_ALL=C
BUILD=${1:-${BUILD:-build}}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-5}
LINES_PY=${LINES_PY:-100000}
WRITES_C=${WRITES_C:-180000}
TTAUDIT="$PWD/$BUILD/ttaudit"
SHIM="$PWD/$BUILD/libttaudit-shim.so"
CPROG="$PWD/$BUILD/progs/bench_writes"
for f in "$TTAUDIT" "$CPROG" "$PWD/$BUILD/libttaudit-shim.so"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "bench-shim: $f missing (run make)" >&2; exit 2; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/ttaudit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM

cat >"$T/log.py" <<PY
import logging, sys
logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(levelname)s %(asctime)s [generator.py:1930] %(message)s")
log = logging.getLogger("generator")
for i in range($LINES_PY):
    if i % 10 == 0:
        log.info('MERGE_AUDIT {"ev":"merge","step":%d,"host_pos":[22,25,27,25,22,25,27,27],"dev_pos":[23,26,28,26,23,26,28,28]}', i)
    else:
        log.info("decode step %d batch 8 tokens 8 elapsed 0.0123 s", i)
PY

# secs CMD...: wall seconds of one run, output to a file.
secs() {
	s=$(date +%s.%N)
	"$@" >"$T/stdout" 2>"$T/stderr"
	e=$(date +%s.%N)
	echo "$s $e" | awk '{ printf "%.4f\n", $2 - $1 }'
}
best() { sort -n "$1" | head -n 1; }
# "median slowest" of a file of times
spread() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) printf "%s %s", v[int((NR + 1) / 2)], v[NR] }'; }

have_strace=1
command -v strace >/dev/null 2>&1 || have_strace=0

# The variants run interleaved, RUNS rounds, and each keeps its fastest run:
# on a shared machine the minimum is the figure least disturbed by others.
# bench NAME FLOOR CMD...: FLOOR is a file argument that turns CMD into the
# floor variant (appended to CMD), or "" for none.
bench() {
	name=$1 floor=$2; shift 2
	: >"$T/plain"; : >"$T/shim"; : >"$T/strace"; : >"$T/floor"
	i=0
	while [ $i -lt "$RUNS" ]; do
		secs "$@" >>"$T/plain"
		# the environment `ttaudit capture` sets up, without its own start-up
		: >"$T/cap.jsonl"
		secs env TTAUDIT_CAPTURE="$T/cap.jsonl" LD_PRELOAD="$SHIM" "$@" >>"$T/shim"
		if [ -n "$floor" ]; then
			: >"$floor"
			secs "$@" "$floor" >>"$T/floor"
		fi
		[ $have_strace = 0 ] || [ $i -ge 2 ] || secs strace -f -e trace=write -o "$T/strace.out" "$@" >>"$T/strace"
		i=$((i + 1))
	done
	audits=$(grep -c '"src":"audit"' "$T/cap.jsonl" || true)
	awk -v n="$name" -v p="$(best "$T/plain")" -v s="$(best "$T/shim")" -v t="$(best "$T/strace")" -v a="$audits" \
	    -v ps="$(spread "$T/plain")" -v ss="$(spread "$T/shim")" -v f="$(best "$T/floor")" -v fs="$(spread "$T/floor")" 'BEGIN {
		split(ps, P, " "); split(ss, S, " "); split(fs, F, " ")
		printf "%-34s plain %7.3fs   shim %7.3fs (%.3fx, %d audit records)", n, p, s, s / p, a
		if (t != "") printf "   strace %7.3fs (%.2fx)", t, t / p
		printf "\n%-34s   median, slowest: plain %.3f %.3f   shim %.3f %.3f (median %.3fx)\n", "", P[1], P[2], S[1], S[2], S[1] / P[1]
		if (f != "")
			printf "%-34s   floor (no shim, one more write per audit line) %7.3fs (%.3fx), median %.3f (%.3fx)\n", "", f, f / p, F[1], F[1] / P[1] }'
}

echo "capture shim overhead, best of $RUNS interleaved runs (strace: best of 2; ratios to plain)"
bench "(a) python logging, $LINES_PY lines" "" "$PYTHON" "$T/log.py"
bench "(b) C, $WRITES_C unbuffered writes" "$T/floor.jsonl" "$CPROG" "$WRITES_C"

# What `ttaudit capture` adds once per command: its own exec and start-up.
: >"$T/plain"; : >"$T/launch"
i=0
while [ $i -lt "$RUNS" ]; do
	secs env TTAUDIT_CAPTURE="$T/cap.jsonl" LD_PRELOAD="$SHIM" /bin/true >>"$T/plain"
	secs "$TTAUDIT" capture -o "$T/cap.jsonl" -- /bin/true >>"$T/launch"
	i=$((i + 1))
done
awk -v p="$(best "$T/plain")" -v l="$(best "$T/launch")" 'BEGIN {
	printf "ttaudit capture start-up (once per command, before exec): %+.0f ms\n", (l - p) * 1000 }'
