#!/bin/sh
# The interop stage: a real llama.cpp llama-server, built from its source
# tarball by llama-server.sh (about 4 minutes on 2 cores, once; cached), and
# the tests of tests/interop/ run against it.
#   LLAMA_CPP_TARBALL  the source (default: ../shared/upstream/ beside the tree)
#   LLAMA_SERVER_SH    the build script (default: ../shared/tools/llama-server.sh)
# Without the source it says "skipped: no llama.cpp source (PATH)" and passes;
# with CI=true a missing source is a failure.
set -u
export BUILD="${BUILD:-build}" PYTHON="${PYTHON:-/usr/bin/python3}"
TARBALL=${LLAMA_CPP_TARBALL:-../shared/upstream/llama.cpp-c392e509-server-src.tar.xz}
SCRIPT=${LLAMA_SERVER_SH:-../shared/tools/llama-server.sh}
if [ ! -f "$TARBALL" ]; then
	if [ "${CI:-}" = true ]; then
		echo "interop: FAILED: no llama.cpp source ($TARBALL); CI needs it" >&2
		exit 1
	fi
	echo "interop: skipped: no llama.cpp source ($TARBALL)"
	exit 0
fi
[ -f "$SCRIPT" ] || { echo "interop: FAILED: no build script ($SCRIPT)" >&2; exit 1; }
# The script reads ../upstream/<tarball> beside itself: a copy of it (and of
# the model maker beside it) in a scratch tree whose upstream/ holds the
# tarball given, so LLAMA_CPP_TARBALL is the source it builds.
W=$(mktemp -d "${TMPDIR:-/tmp}/ttaudit-interop.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/tools" "$W/upstream"
cp "$SCRIPT" "$W/tools/llama-server.sh"
cp "$(dirname "$SCRIPT")/make_tiny_gguf.py" "$W/tools/" 2>/dev/null || true
ln -s "$(realpath "$TARBALL")" "$W/upstream/llama.cpp-c392e509-server-src.tar.xz"
echo "interop: llama-server from $TARBALL (cached after the first build)"
CACHE=$(nice bash "$W/tools/llama-server.sh" | tail -n 1) && [ -x "$CACHE/bin/llama-server" ] ||
	{ echo "interop: FAILED: llama-server.sh could not build llama-server" >&2; exit 1; }
# the tests fail, never skip, when the server is missing under this stage
export TTAUDIT_LLAMA_CACHE="$CACHE" TTAUDIT_INTEROP=1
sh tests/run-e2e.sh $(ls tests/interop/[0-9]*.sh | sort)
