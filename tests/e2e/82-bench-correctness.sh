#!/bin/sh
# ttaudit bench --correctness: the reference at concurrency 1, temperature 0,
# then the same bodies under load. `ttsim --arm bare` with rows reused
# (concurrency above the slots, a chain of request shapes where one ends at
# the position the next starts at, fixtures/bench/slot-reuse.jsonl) hands a
# new request the last token of the one that left its row: the stage must
# catch them, and pass the same workload under `--arm stamp`. An `expect`
# string missing is a wrong answer, told apart from divergent phrasing.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || skip "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SUITE="$FIX/bench/slot-reuse.jsonl"
SIM="--seed 3 --time-scale 0 --slots 16 --no-audit"
RUN="--no-progress --suite $SUITE --concurrency 32 --requests 200 --correctness --seed 11"

sim_start bare $SIM --arm bare
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/bare.jsonl"
head -n 1 "$T/out" | grep -q '^CORRECTNESS: [1-9][0-9]* failing of 200$' || { cat "$T/out"; fail "bare: failing not said first"; }
contains "$T/out" "diverged at token"
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/bare.jsonl")
[ "$n_div" -gt 0 ] || fail "bare: no diverged request recorded"
# each divergence names the token and shows both texts from there
jq -s -e '[.[] | select(.kind == "request" and .verdict == "diverged") |
	(.diverged_at >= 0 and (.reference_from | length) > 0 and (.output_from | length) > 0)] | all' \
	"$T/bare.jsonl" >/dev/null || fail "bare: divergence detail"
# the reference pass: one request per prompt, concurrency 1, temperature 0
jq -s '[.[] | select(.kind == "run" and .phase == "reference")][0]' "$T/bare.jsonl" >"$T/ref.json"
eq "$(jget "$T/ref.json" .arrival.concurrency)" 1 "reference concurrency"
eq "$(jget "$T/ref.json" .temperature)" 0 "reference temperature"
eq "$(jget "$T/ref.json" .figures.requests)" 24 "reference requests"
jq -s '[.[] | select(.kind == "run" and .phase == "correctness")][0]' "$T/bare.jsonl" >"$T/cor.json"
eq "$(jget "$T/cor.json" .correctness.failing)" "$n_div" "run record failing count"
eq "$(jget "$T/cor.json" .temperature)" 0 "correctness temperature"
eq "$(jget "$T/cor.json" .cache_claim)" warm "correctness is not a cold claim"
sim_stop

sim_start stamp $SIM --arm stamp
expect_rc 0 $TTAUDIT bench --url "$URL" $RUN -o "$T/stamp.jsonl"
head -n 1 "$T/out" | grep -q '^CORRECTNESS: 0 failing of 200$' || { cat "$T/out"; fail "stamp: not clean"; }
eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "identical")] | length' \
	"$T/stamp.jsonl")" 200 "stamp identical"

# expect: a string the output has passes; one it lacks is wrong, in the
# reference too, even where the text is identical to the reference
printf '%s\n' '{"id":"a","prompt":"the quiet river","max_tokens":6}' \
	'{"id":"b","prompt":"a stone garden","max_tokens":6}' >"$T/two.jsonl"
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/two.jsonl" --concurrency 2 --requests 4 \
	--correctness --seed 1 -o "$T/two.out.jsonl"
word=$(jq -r 'select(.kind == "request" and .phase == "reference" and .prompt_index == 0) | .text' \
	"$T/two.out.jsonl" | awk '{ print $NF }')
[ -n "$word" ] || fail "no reference text recorded"
jq -c --arg w "$word" 'if .id == "a" then .expect = [$w] else . end' "$T/two.jsonl" >"$T/right.jsonl"
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/right.jsonl" --concurrency 2 --requests 4 \
	--correctness --seed 1 -o "$T/right.out.jsonl"
contains "$T/out" "CORRECTNESS: 0 failing of 4"
jq -c 'if .id == "a" then .expect = [$w, "never-in-any-output"] else . end' --arg w "$word" "$T/two.jsonl" >"$T/wrong.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/wrong.jsonl" --concurrency 2 --requests 4 \
	--correctness --seed 1 -o "$T/wrong.out.jsonl"
contains "$T/out" "CORRECTNESS: 2 failing of 4; the reference itself has wrong or failed answers"
eq "$(jq -s -c '[.[] | select(.kind == "request" and .phase == "correctness") | [.prompt_index, .verdict, .missing]] | sort' \
	"$T/wrong.out.jsonl")" '[[0,"wrong","never-in-any-output"],[0,"wrong","never-in-any-output"],[1,"identical",null],[1,"identical",null]]' \
	"wrong verdicts"
eq "$(jq -s '[.[] | select(.kind == "summary")][0].correctness.reference_wrong' "$T/wrong.out.jsonl")" 1 "reference wrong"
echo "ok"
