#!/bin/sh
# bench --margins: after the load, the quiet echo pass labels every
# divergence of the correctness stage. ttsim --near-ties flips near ties in
# batched decodes only (near-tie labels), --fault redecode repeats a token
# (duplicated-token), the clean simulator diverges nowhere (no label), and
# llama-server's completions refuse echo (not evaluable, never clean). No
# request of the load carries logprobs or echo.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || skip "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SUITE="$FIX/bench/slot-reuse.jsonl"
SIM="--seed 3 --time-scale 0 --slots 16 --arm stamp"
RUN="--no-progress --suite $SUITE --concurrency 16 --requests 48 --correctness --seed 11 --margins"
labels() { jq -r 'select(.kind == "margin") | .label' "$1" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' '; }

# near ties: every divergence is one, each with both logprobs within epsilon
sim_start tie $SIM --near-ties 0.3
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/tie.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/tie.jsonl")
[ "$n_div" -gt 0 ] || fail "near-ties: no divergence"
eq "$(labels "$T/tie.jsonl")" "near-tie=$n_div " "near-ties: labels"
jq -s -e '[.[] | select(.kind == "margin") | (.logprob_reference - .logprob_output | fabs) < .epsilon] | all' \
	"$T/tie.jsonl" >/dev/null || fail "near-ties: a near tie outside epsilon"
contains "$T/out" "MARGINS: $n_div divergences re-scored"
# a smaller epsilon than the tie makes the same divergences low-probability
sim_start tie2 $SIM --near-ties 0.3
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN --margin-eps 0.001 -o "$T/tie2.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/tie2.jsonl")
eq "$(labels "$T/tie2.jsonl")" "low-probability=$n_div " "epsilon below the tie: low-probability"
# duplicated token: redecode under churn, one token per chunk
sim_start red $SIM --fault redecode --no-merge
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN --workload churn --max-num-seqs 4 -o "$T/red.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/red.jsonl")
[ "$n_div" -gt 0 ] || fail "redecode: no divergence"
eq "$(labels "$T/red.jsonl")" "duplicated-token=$n_div " "redecode: labels"

# clean: no divergence, no label
sim_start clean $SIM
expect_rc 0 $TTAUDIT bench --url "$URL" $RUN --json -o "$T/clean.jsonl"
sim_stop
eq "$(jget "$T/out" .margins.scored)" 0 "clean: scored"
eq "$(labels "$T/clean.jsonl")" "" "clean: labels"

# llama-server refuses echo (Unsupported param): not evaluable, said why
sim_start llama $SIM --near-ties 0.3 --profile llamacpp --metrics
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/llama.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/llama.jsonl")
[ "$n_div" -gt 0 ] || fail "llamacpp: no divergence"
eq "$(labels "$T/llama.jsonl")" "not-evaluable=$n_div " "llamacpp: labels"
jq -s -e '[.[] | select(.kind == "margin") | .not_evaluable == "refused" and (.detail | test("Unsupported param: echo")) and .logprob_output == null] | all' \
	"$T/llama.jsonl" >/dev/null || fail "llamacpp: not said why"
contains "$T/out" "margins not evaluable (refused): http 500"

expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --margins -o "$T/x.jsonl"
echo "ok"
