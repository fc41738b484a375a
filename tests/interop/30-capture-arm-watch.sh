#!/bin/sh
# The capture shim preloaded into a real C++ server: `ttaudit capture
# --all-lines -- llama-server ...` leaves its output as it is without the
# capture (the same lines, numbers aside: timings differ run to run) and
# records every line of it, in order, text for text; `ttaudit arm` reads the
# slot count from that log and /metrics (CONFIRMED for -np 4, FAIL for a
# spec that says -np 2); `ttaudit watch` follows the log as it grows.
. tests/e2e/lib.sh
. tests/interop/llama.inc
SPEC="$PWD/tests/interop/arms.json"

# wait_line FILE PATTERN COUNT: until FILE has COUNT lines matching PATTERN
wait_line() {
	n=0
	until [ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -ge "$3" ]; do
		n=$((n + 1))
		[ $n -lt 1200 ] || { cat "$1" >&2; fail "$1: no '$2' x$3 in 120 s"; }
		sleep 0.1
	done
}
# session NAME: one run with a fixed history: loaded (seen in its log, no
# polling request that would log a line), one completion, idle again, killed
session() {
	llama_start "$1" --no-wait -np 4 -c 2048 -t 2 --metrics
	wait_line "$T/$1.log" 'starting the main loop' 1
	wait_line "$T/$1.log" 'all slots are idle' 1
	curl -sf "$LURL/v1/completions" -H 'content-type: application/json' \
		-d '{"prompt":"the river","max_tokens":4,"temperature":0}' >"$T/$1.resp" || fail "$1: completion failed"
	wait_line "$T/$1.log" 'all slots are idle' 2
	# the session's lines (later requests, e.g. arm's, add more)
	cp "$T/$1.log" "$T/$1.snap"
}

# 1. without and with the capture; watch follows the plain run's log from
# before it exists
"$TTAUDIT" watch --listen 127.0.0.1:0 --port-file "$T/w.port" "$T/plain.log" >"$T/w.out" 2>"$T/w.err" &
WPID=$!
E2E_PIDS="$E2E_PIDS $WPID"
n=0
until [ -s "$T/w.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "watch did not listen"; sleep 0.1; done
WURL="http://127.0.0.1:$(cat "$T/w.port")"
session plain
# the log holds three lines of the chat template that begin with '{{' or
# '{%' (lines 116-118 here): log lines, not malformed audit lines. Once the
# server is gone, one merge line is added to the log: when watch has counted
# that merge it has read every line before it, so its count of malformed
# lines is the whole log's (an ordering, not a wait)
nt=$(grep -c '^{' "$T/plain.log")
[ "$nt" -gt 0 ] || fail "the log has no line beginning with '{' (the chat template is printed elsewhere?)"
llama_stop KILL
printf '{"ev":"merge","step":1,"host_pos":[1],"dev_pos":[2]}\n' >>"$T/plain.log"
n=0
until curl -sf "$WURL/metrics" | grep -q "^ttaudit_merges_total{[^}]*source=\"$T/plain.log\"[^}]*} 1\$"; do
	n=$((n + 1))
	[ $n -lt 600 ] || { curl -s "$WURL/metrics" >&2; fail "watch did not follow the log to the merge after its end"; }
	sleep 0.1
done
curl -sf "$WURL/metrics" | grep -q "^ttaudit_source_up{source=\"$T/plain.log\",host=\"[^\"]*\"} 1\$" || fail "log source not up"
curl -sf "$WURL/metrics" | grep -q "^ttaudit_malformed_lines_total{source=\"$T/plain.log\",host=\"[^\"]*\"} 0\$" ||
	{ curl -s "$WURL/metrics" | grep malformed >&2; cat "$T/w.err" >&2; fail "watch called a line of llama-server's log malformed"; }
echo "watch: followed the live log to its end; its $nt template lines starting with '{' are log lines, 0 malformed"
kill "$WPID"
LLAMA_WRAP="$TTAUDIT capture -o $T/cap.jsonl --all-lines --" session cap
# arm, from the real log and /metrics, while it runs
expect_rc 0 "$TTAUDIT" arm --json --spec "$SPEC" --arm np4 --url "$LURL" --log "$T/cap.log"
eq "$(jget "$T/out" .verdict)" CONFIRMED "arm np4 on -np 4"
eq "$(jget "$T/out" '[.items[] | .verdict] | join(",")')" met,met,met,met,clear "np4 items"
expect_rc 1 "$TTAUDIT" arm --json --spec "$SPEC" --arm np2 --url "$LURL" --log "$T/cap.log"
eq "$(jget "$T/out" .verdict)" FAIL "arm np2 on -np 4"
eq "$(jget "$T/out" '.items[0].verdict')" absent "n_slots = 2 line"
eq "$(jget "$T/out" '.items[3].verdict')" forbidden-present "n_slots = 4 forbidden to np2"
echo "arm: np4 CONFIRMED, np2 FAIL on a -np 4 server"
# the capture's own file as arm evidence too
expect_rc 0 "$TTAUDIT" arm --spec "$SPEC" --arm np4 --url "$LURL" --capture "$T/cap.jsonl"
contains "$T/out" "CONFIRMED"
kill -KILL $(cat /proc/$LPID/task/*/children 2>/dev/null) 2>/dev/null || true
set +e; wait "$LPID"; rc=$?; set -e
eq "$rc" 137 "capture exits as its command did (SIGKILL)"
# numbers and the padding around them vary run to run (timings)
mask() { sed 's/[0-9][0-9.]*/N/g; s/  */ /g' "$1"; }
mask "$T/plain.snap" >"$T/plain.m"
mask "$T/cap.snap" >"$T/cap.m"
np=$(wc -l <"$T/plain.snap"); nc=$(wc -l <"$T/cap.snap")
[ "$np" -gt 100 ] || fail "the plain run printed $np lines"
eq "$nc" "$np" "lines with and without the capture"
cmp "$T/plain.m" "$T/cap.m" || { diff "$T/plain.m" "$T/cap.m" | head >&2; fail "output changed under the capture"; }
# every line of the output is in the capture, in order, as printed
jq -r 'select(.src == "line" or .src == "banner") | .text' "$T/cap.jsonl" >"$T/cap.lines"
nr=$(wc -l <"$T/cap.lines")
eq "$nr" "$(wc -l <"$T/cap.log")" "line records vs lines printed"
cmp "$T/cap.lines" "$T/cap.log" || { diff "$T/cap.lines" "$T/cap.log" | head >&2; fail "a recorded line differs from the printed one"; }
eq "$(jq -s '[.[] | select(.src == "lost")] | length' "$T/cap.jsonl")" 0 "lost records"
echo "capture: session of $np lines without, $nc with (same after masking numbers); $nr of $(wc -l <"$T/cap.log") printed lines recorded, 0 lost"
