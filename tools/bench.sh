#!/bin/sh
# make bench: every speed and memory goal, measured and printed as ratios
# against its named reference. Nothing here asserts a time; it reports.
# Parts whose script is absent are said to be absent.
set -u
BUILD="${BUILD:-build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
cd "$(dirname "$0")/.."

part() {
	echo
	echo "== $1"
}

part "replay: ttaudit replay --json vs its tree path, the plain-Python replay, jq, simdjson and cat (tools/bench-replay.py)"
"$PYTHON" tools/bench-replay.py --build "$BUILD" --work "$BUILD/bench"

if [ -f tools/bench-shim.sh ]; then
	part "capture: the preload shim vs plain and strace (tools/bench-shim.sh)"
	BUILD="$BUILD" PYTHON="$PYTHON" sh tools/bench-shim.sh
else
	part "capture: tools/bench-shim.sh is absent"
fi

if [ -f tools/bench-emit.py ]; then
	part "instrumentation: per-call cost of the Python emitter (tools/bench-emit.py)"
	"$PYTHON" tools/bench-emit.py
else
	part "instrumentation: tools/bench-emit.py is absent"
fi

if [ -f tools/bench-load.sh ]; then
	part "load driver: streams one client core sustains, timestamp error (tools/bench-load.sh)"
	BUILD="$BUILD" sh tools/bench-load.sh
else
	part "load driver: tools/bench-load.sh is absent"
fi

if [ -f tools/bench-watch.sh ]; then
	part "watch: a followed log growing by 50,000 merge events/s, one core: rate, lag to /metrics, RSS (tools/bench-watch.sh; BENCH_WATCH_SECONDS=600 for the 10-minute run)"
	BUILD="$BUILD" PYTHON="$PYTHON" sh tools/bench-watch.sh
else
	part "watch: tools/bench-watch.sh is absent"
fi
