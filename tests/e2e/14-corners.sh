#!/bin/sh
# ttaudit replay against the independent reference replay (scripts/replay_ref.py)
# on random audits that explore the corners of the format: widths across the
# 64-slot windows, int64 extremes, fields null or of a wrong type, ids with
# NULs and lone surrogates, duplicate and escaped member names, gate and trace
# events, several processes with lost and uncertain records, gzip, BOM.
. tests/e2e/lib.sh

"$PYTHON" tests/e2e/14-corners.py "$TTAUDIT" "$T" 400 18 >"$T/log" 2>&1 || { cat "$T/log" >&2; fail "ttaudit and the reference differ"; }
contains "$T/log" "400 random audits, 0 differences"
echo ok
