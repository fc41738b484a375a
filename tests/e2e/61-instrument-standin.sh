#!/bin/sh
# The instrumentation kit on a stand-in of the real stack (tests/standin/:
# tt-metal's generator, the TT plugin and vLLM's engine-core entry at their
# real module paths): the stand-in server runs under `ttaudit capture` and
# `python3 -m ttaudit_emit.run`, its engine core a multiprocessing spawn child;
# the audit must equal the stand-in's own account of its keep decisions and
# replay to the counts worked out by hand (unguarded keep, slot-reuse mask,
# capability gate off, TT_FORCE_ASYNC_AHEAD_KEEP=1, the batch guard with
# `ttaudit arm`), and the server must serve unchanged with a broken sink, an
# unconfigured stdlib logger or a renamed function (tests/python/test_standin.py).
. tests/e2e/lib.sh

case "$BUILD" in
*asan*) skip "the capture shim is not preloaded into python under sanitizers" ;;
esac
[ -x "$PYTHON" ] || skip "python not found at $PYTHON"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
	skip "$PYTHON is older than 3.9"

rc=0
TMPDIR="$T" BUILD="$BUILD" "$PYTHON" tests/python/test_standin.py -v || rc=$?
exit "$rc"
