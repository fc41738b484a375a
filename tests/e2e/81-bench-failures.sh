#!/bin/sh
# ttaudit bench: HTTP errors, resets, stalls and truncated streams are
# failures with a reason each, counted per cause; a run with failures says so
# on its first line and exits 1. A clean server gives none of it.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

sim_start clean --seed 4 --time-scale 0 --slots 8
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 8 --prompts 8 \
	--concurrency 8 --requests 40 -o "$T/clean.jsonl"
lacks "$T/out" "FAILURES"
eq "$(jq -s '[.[] | select(.kind == "request" and .ok)] | length' "$T/clean.jsonl")" 40 "clean requests ok"
sim_stop

# every fault at once; the stall (1 s) is longer than the client's --stall limit
sim_start faulty --seed 4 --time-scale 0 --slots 8 --error-rate 0.12 --reset-rate 0.12 \
	--truncate-rate 0.12 --stall-rate 0.08 --stall-time 1.5
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 8 --prompts 8 \
	--concurrency 8 --requests 60 --stall 0.4 -o "$T/f.jsonl"
head -n 1 "$T/out" | grep -q '^FAILURES: [0-9]* of 60 requests failed (' || { cat "$T/out"; fail "failures not said first"; }
jq -s '[.[] | select(.kind == "request" and (.ok | not))] | group_by(.outcome) |
	map({key: .[0].outcome, value: length}) | from_entries' "$T/f.jsonl" >"$T/by.json"
for cause in http reset truncated stall; do
	[ "$(jq ".$cause // 0" "$T/by.json")" -gt 0 ] || { cat "$T/by.json"; fail "no $cause failure counted"; }
done
# the run record counts the same, and says it has failures
jq -s '[.[] | select(.kind == "run")][0]' "$T/f.jsonl" >"$T/run.json"
eq "$(jget "$T/run.json" .has_failures)" true "has_failures"
eq "$(jq -S -c '.figures.failures' "$T/run.json")" "$(jq -S -c . "$T/by.json")" "failures by cause in the run record"
eq "$(jget "$T/run.json" '.figures.ok + .figures.failed')" 60 "ok + failed"
# reasons are specific
jq -s -r '.[] | select(.kind == "request" and (.ok | not)) | "\(.outcome): \(.reason)"' "$T/f.jsonl" >"$T/reasons.txt"
grep -q '^http: http 500' "$T/reasons.txt" || { cat "$T/reasons.txt"; fail "http reason"; }
grep -q '^stall: no data for 0.4 s after' "$T/reasons.txt" || { cat "$T/reasons.txt"; fail "stall reason"; }
grep -q '^truncated: ' "$T/reasons.txt" || { cat "$T/reasons.txt"; fail "truncated reason"; }
grep -q '^reset: .*after [0-9]* content chunks' "$T/reasons.txt" || { cat "$T/reasons.txt"; fail "reset reason"; }
# failed requests never count toward throughput: output tokens are the ok requests' only
eq "$(jget "$T/run.json" .figures.output_tokens)" \
	"$(jq -s '[.[] | select(.kind == "request" and .ok) | .output_tokens] | add' "$T/f.jsonl")" "tokens of ok requests"
# the JSON summary carries the same
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 8 --prompts 8 \
	--concurrency 8 --requests 30 --stall 0.4 --json -o "$T/f2.jsonl"
[ "$(jget "$T/out" .failed)" -gt 0 ] || fail "json summary failed count"
echo "ok"
