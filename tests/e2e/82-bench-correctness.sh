#!/bin/sh
# ttaudit bench --correctness: the reference at concurrency 1, temperature 0,
# then the same bodies under load. `ttsim --arm bare` with rows reused
# (concurrency above the slots, a chain of request shapes where one ends at
# the position the next starts at, fixtures/bench/slot-reuse.jsonl) hands a
# new request the last token of the one that left its row: the stage must
# catch them, and pass the same workload under `--arm stamp`. An `expect`
# string missing is a wrong answer, told apart from divergent phrasing.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SUITE="$FIX/bench/slot-reuse.jsonl"
SIM="--seed 3 --time-scale 0 --slots 16 --no-audit"
RUN="--no-progress --suite $SUITE --concurrency 32 --requests 200 --correctness --seed 11"

sim_start bare $SIM --arm bare
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/bare.jsonl"
head -n 1 "$T/out" | grep -q '^CORRECTNESS: FAIL: [1-9][0-9]* failing of 200 requests: [0-9.]*%, 95% CI [0-9.]*% to [0-9.]*%$' ||
	{ cat "$T/out"; fail "bare: failing not said first, with its interval"; }
contains "$T/out" "diverged at token"
# every record is JSON whose objects name each member once (the summary had
# "correctness" twice: a boolean, then the stage's object)
"$PYTHON" - "$T/bare.jsonl" <<'PY' || fail "a record names a member twice"
import json, sys
def once(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        sys.exit(f"{sys.argv[1]}: member(s) {dup} named twice")
    return dict(pairs)
for line in open(sys.argv[1]):
    json.loads(line, object_pairs_hook=once)
PY
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
head -n 1 "$T/out" | grep -q '^CORRECTNESS: PASS: 0 failing of 200 requests: rules out only rates above 1.83% at 95%$' ||
	{ cat "$T/out"; fail "stamp: not clean, or 0 of 200 not said as the rates it rules out"; }
eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "identical")] | length' \
	"$T/stamp.jsonl")" 200 "stamp identical"

# the seeds' question: 0 of 192 against a baseline of 0.48% per request is
# no PASS: it rules out only rates above 1.90%, and 767 requests would do
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --concurrency 32 --requests 192 \
	--correctness --seed 11 --baseline 0.0048 -o "$T/b192.jsonl"
contains "$T/out" "CORRECTNESS: INCONCLUSIVE: 0 failing of 192 requests: rules out only rates above 1.90% at 95%"
contains "$T/out" "INCONCLUSIVE: server 0: 0 failing of 192 rules out only rates above 1.90% at 95%, not the baseline 0.48%; 767 requests would (ttaudit plan --baseline 0.0048 --target 0)"
contains "$T/out" "correctness: INCONCLUSIVE, 0 failing of 192"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --concurrency 32 --requests 192 \
	--correctness --seed 11 --baseline 0.0048 --json -o "$T/b192.jsonl"
eq "$(jget "$T/out" .correctness.verdict)" INCONCLUSIVE "JSON verdict of 0 of 192 against 0.48%"
eq "$(jget "$T/out" '.cells[0].correctness.requests_to_rule_out_baseline')" 767 "requests that would rule out 0.48%"
eq "$(jget "$T/out" '.cells[0].correctness.failing_rate.hi | . * 10000 | round')" 190 "0 of 192: upper end"
# as many as `ttaudit plan --baseline 0.0048 --target 0` says: PASS
n=$($TTAUDIT plan --baseline 0.0048 --target 0 --json | jq .n_to_bound)
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --concurrency 32 --requests "$n" \
	--correctness --seed 11 --baseline 0.0048 -o "$T/bn.jsonl"
contains "$T/out" "CORRECTNESS: PASS: 0 failing of $n requests: rules out only rates above 0.480% at 95%"
# a baseline without the stage that could check it is a usage error
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --baseline 0.0048 -o "$T/x.jsonl"

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
contains "$T/out" "CORRECTNESS: PASS: 0 failing of 4 requests"
jq -c 'if .id == "a" then .expect = [$w, "never-in-any-output"] else . end' --arg w "$word" "$T/two.jsonl" >"$T/wrong.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/wrong.jsonl" --concurrency 2 --requests 4 \
	--correctness --seed 1 -o "$T/wrong.out.jsonl"
contains "$T/out" "CORRECTNESS: FAIL: 2 failing of 4 requests: 50.0%, 95% CI 6.76% to 93.2%; the reference itself has wrong or failed answers"
eq "$(jq -s -c '[.[] | select(.kind == "request" and .phase == "correctness") | [.prompt_index, .verdict, .missing]] | sort' \
	"$T/wrong.out.jsonl")" '[[0,"wrong","never-in-any-output"],[0,"wrong","never-in-any-output"],[1,"identical",null],[1,"identical",null]]' \
	"wrong verdicts"
eq "$(jq -s '[.[] | select(.kind == "summary")][0].correctness.reference_wrong' "$T/wrong.out.jsonl")" 1 "reference wrong"
echo "ok"
