#!/bin/sh
# Runs each end-to-end script given, each in its own shell with BUILD and
# PYTHON exported. A script exits 0 (pass), 77 (skipped, says why) or other
# (fail). Prints one closing line "e2e: N passed, N failed, N skipped".
set -u
export BUILD="${BUILD:-build}" PYTHON="${PYTHON:-/usr/bin/python3}"
pass=0 fail=0 skip=0 failed=""
for t in "$@"; do
	name=$(basename "$t" .sh)
	log="$BUILD/tests/e2e-$name.log"
	mkdir -p "$BUILD/tests"
	start=$(date +%s)
	sh "$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); echo "e2e $name: ok (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "e2e $name: skipped: $(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); failed="$failed $name"; echo "e2e $name: FAILED (exit $rc, ${secs}s)"
	   sed 's/^/    /' "$log" | tail -n 60 ;;
	esac
done
echo "e2e: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || { echo "failing e2e tests:$failed" >&2; exit 1; }
