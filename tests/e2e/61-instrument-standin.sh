#!/bin/sh
# The instrumentation kit on a stand-in of the real stack (tests/standin/:
# tt-metal's generator at 50868c00, its keep inline in decode_forward; the TT
# plugin's persistent batch, runner and decode submission; vLLM's engine-core
# entry, each at its real module path and in upstream's shapes): the stand-in
# server runs under `ttaudit capture` and `python3 -m ttaudit_emit.run`, its
# engine core a multiprocessing spawn child, over torch tensors; the audit must
# equal the stand-in's own account of the keep, merge by merge, and replay to
# the counts worked out for the scenario (the code's keep, an undeclared
# capability, the seeds' batch guard applied as a patch and confirmed by
# `ttaudit arm`), and the server must serve unchanged with an unwritable sink,
# a renamed target or the kit off (tests/python/test_standin.py).
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
