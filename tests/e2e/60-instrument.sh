#!/bin/sh
# The Python emitter (tools/instrument/ttaudit_emit.py): format, wrong calls
# raising, nothing written with TTAUDIT_EMIT off, write failures counted; a
# model of the generator's merge block whose own counts must equal what
# `ttaudit replay --json` counts on the emitted audit; and the same run through
# `logging` under `ttaudit capture` read back as the same events.
# tests/python/test_emit.py exits 77, naming the command, when a ttaudit
# command it needs is not built.
. tests/e2e/lib.sh

[ -x "$PYTHON" ] || skip "python not found at $PYTHON"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
	skip "$PYTHON is older than 3.9"

rc=0
TMPDIR="$T" BUILD="$BUILD" "$PYTHON" tests/python/test_emit.py -v || rc=$?
exit "$rc"
