#!/bin/sh
# The Python kit (tools/instrument/ttaudit_emit): the emitter's format, wrong
# calls counted (raised only when strict), nothing written with TTAUDIT_EMIT
# off, write failures counted, a model of the merge block whose own counts
# must equal what `ttaudit replay --json` counts, the same run through
# `logging` under `ttaudit capture` (tests/python/test_emit.py); and the
# auto-instrumentation's pieces: name table and config, post-import hook,
# the inline keep found in source, loguru sink, banners, the kit over the
# stand-in generator driven as tt-metal's own keep tests drive it, the
# stand-in engine against its own account, spawn and fork children
# (tests/python/test_kit.py).
# test_emit.py exits 77, naming the command, when a ttaudit command it needs
# is not built.
. tests/e2e/lib.sh

[ -x "$PYTHON" ] || skip "python not found at $PYTHON"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
	skip "$PYTHON is older than 3.9"

rc=0
TMPDIR="$T" BUILD="$BUILD" "$PYTHON" tests/python/test_kit.py -v || rc=$?
TMPDIR="$T" BUILD="$BUILD" "$PYTHON" tests/python/test_emit.py -v || { r=$?; [ "$rc" -ne 0 ] || rc=$r; }
exit "$rc"
