#!/bin/sh
# Runs each cmocka binary given; prints one closing line "unit: N passed, N failed".
set -u
pass=0 fail=0 failed=""
for t in "$@"; do
	if "$t" >"$t.log" 2>&1; then
		pass=$((pass + 1))
		grep -h '^\[  PASSED  \]' "$t.log" | sed "s|^|$(basename "$t"): |"
	else
		fail=$((fail + 1))
		failed="$failed $(basename "$t")"
		cat "$t.log"
	fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { echo "failing unit suites:$failed" >&2; exit 1; }
