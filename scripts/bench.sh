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

part "replay: ttaudit replay --json vs its tree path, the plain-Python replay, jq, simdjson and cat (scripts/bench-replay.py)"
"$PYTHON" scripts/bench-replay.py --build "$BUILD" --work "$BUILD/bench"

if [ -f scripts/bench-shim.sh ]; then
	part "capture: the preload shim vs plain and strace (scripts/bench-shim.sh)"
	BUILD="$BUILD" PYTHON="$PYTHON" sh scripts/bench-shim.sh
else
	part "capture: scripts/bench-shim.sh is absent"
fi

if [ -f scripts/bench-emit.py ]; then
	part "instrumentation: per-call cost of the Python emitter (scripts/bench-emit.py)"
	"$PYTHON" scripts/bench-emit.py
else
	part "instrumentation: scripts/bench-emit.py is absent"
fi

if [ -f scripts/bench-load.sh ]; then
	part "load driver: streams one client core sustains, timestamp error (scripts/bench-load.sh)"
	BUILD="$BUILD" sh scripts/bench-load.sh
else
	part "load driver: scripts/bench-load.sh is absent"
fi

if [ -f scripts/bench-watch.sh ]; then
	part "watch: a followed log growing by 50,000 merge events/s, one core: rate, lag to /metrics, RSS (scripts/bench-watch.sh; BENCH_WATCH_SECONDS=600 for the 10-minute run)"
	BUILD="$BUILD" PYTHON="$PYTHON" sh scripts/bench-watch.sh
else
	part "watch: scripts/bench-watch.sh is absent"
fi
