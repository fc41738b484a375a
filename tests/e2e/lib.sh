# Sourced by every end-to-end test: strict mode, C locale, a private temp dir
# removed on exit, and small assertion helpers. Tests run from the repo root.
set -eu
export LC_ALL=C
: "${BUILD:=build}"
: "${PYTHON:=/usr/bin/python3}"
TTAUDIT="$PWD/$BUILD/ttaudit"
FIX="$PWD/fixtures"
T=$(mktemp -d "${TMPDIR:-/tmp}/ttaudit-e2e.XXXXXX")
# Tests register background pids here; they are stopped on exit.
E2E_PIDS=""
e2e_cleanup() {
	for p in $E2E_PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $E2E_PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap e2e_cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*"; exit 77; }
# expect_rc WANT CMD...: run CMD, fail unless it exits WANT. Output in $T/out, $T/err.
expect_rc() {
	want=$1; shift
	set +e
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $got, want $want"; }
}
# contains FILE STRING: fixed-string grep, fails with the file shown.
contains() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks '$2'"; }; }
lacks() { ! grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$1 has '$2'"; }; }
# jget FILE FILTER: jq -r over a JSON file.
jget() { jq -r "$2" "$1"; }
# eq GOT WANT WHAT
eq() { [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"; }
