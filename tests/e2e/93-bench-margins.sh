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

# near ties: every divergence is one, each with both logprobs within epsilon.
# Through a recording proxy: what the client sent, in arrival order
sim_start tie $SIM --near-ties 0.3
"$PYTHON" tests/e2e/record-proxy.py "$PORT" "$T/proxy.port" "$T/sent.jsonl" 2>"$T/proxy.err" &
PROXYPID=$!
E2E_PIDS="$E2E_PIDS $PROXYPID"
n=0
while [ ! -s "$T/proxy.port" ]; do
	n=$((n + 1)); [ $n -lt 200 ] || { cat "$T/proxy.err"; fail "proxy did not start"; }; sleep 0.05
done
expect_rc 1 $TTAUDIT bench --url "http://127.0.0.1:$(cat "$T/proxy.port")" $RUN -o "$T/tie.jsonl"
kill "$PROXYPID"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/tie.jsonl")
[ "$n_div" -gt 0 ] || fail "near-ties: no divergence"
eq "$(labels "$T/tie.jsonl")" "near-tie=$n_div " "near-ties: labels"
jq -s -e '[.[] | select(.kind == "margin") | (.logprob_reference - .logprob_output | fabs) < .epsilon] | all' \
	"$T/tie.jsonl" >/dev/null || fail "near-ties: a near tie outside epsilon"
contains "$T/out" "MARGINS: $n_div divergences re-scored"
# logprobs and echo only in the quiet pass: no load request carries either,
# each margin request does, one per divergence, every one after the last
# load request (sync-forcing parameters would turn off the path under test)
jq -s -e '[.[] | select(.body != null and (.xid // "" | test("-margin$") | not)) |
	(.body | has("logprobs") or has("echo") or has("prompt_logprobs"))] | any | not' "$T/sent.jsonl" >/dev/null ||
	fail "a load request asked for logprobs or echo"
eq "$(jq -s '[.[] | select(.xid // "" | test("-margin$")) | select(.body.echo == true and .body.logprobs > 0)] | length' 	"$T/sent.jsonl")" "$n_div" "margin requests with echo and logprobs"
jq -s -e '([.[] | select(.xid // "" | test("-correctness-.*[0-9]$")) | .seq] | max) <
	([.[] | select(.xid // "" | test("-margin$")) | .seq] | min)' "$T/sent.jsonl" >/dev/null ||
	fail "a margin request before the end of the load"
# the page of the run draws the labels
expect_rc 0 $TTAUDIT report html "$T/tie.jsonl" -o "$T/tie.html"
grep -q "margins</div><div class=\"value\">$n_div re-scored</div><div>$n_div near-tie, 0 low-probability" "$T/tie.html" ||
	fail "report html: no margins box"
grep -q "correctness</div><div class=\"value\">FAIL" "$T/tie.html" || fail "report html: no correctness box"

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

# low-probability: a moved row computes with the state of the request that
# left it (condense-state under churn): a token the model did not want
sim_start cs $SIM --fault condense-state
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN --workload churn --max-num-seqs 4 -o "$T/cs.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/cs.jsonl")
[ "$n_div" -gt 0 ] || fail "condense-state: no divergence"
eq "$(labels "$T/cs.jsonl")" "low-probability=$n_div " "condense-state: labels"
jq -s -e '[.[] | select(.kind == "margin") | .logprob_reference - .logprob_output >= .epsilon] | all' \
	"$T/cs.jsonl" >/dev/null || fail "condense-state: a low-probability label within epsilon"

# past the vocabulary: oov ids in batched decodes (the reference, alone, has none)
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
	printf '{"id":"l%s","prompt":"a longer prompt number %s about rivers and stones","max_tokens":12}\n' "$i" "$i"
done >"$T/long.jsonl"
sim_start oov $SIM --fault oov --oov-batched
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/long.jsonl" --concurrency 12 --requests 36 \
	--correctness --seed 11 --margins --vocab-size 32768 -o "$T/oov.jsonl"
# without the vocabulary the id is not judged: no past-vocabulary label
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$T/long.jsonl" --concurrency 12 --requests 36 \
	--correctness --seed 11 --margins -o "$T/oov2.jsonl"
sim_stop
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/oov.jsonl")
[ "$n_div" -gt 0 ] || fail "oov: no divergence"
eq "$(labels "$T/oov.jsonl")" "past-vocabulary=$n_div " "oov: labels"
jq -s -e '[.[] | select(.kind == "margin") | .token_id >= 32768] | all' "$T/oov.jsonl" >/dev/null ||
	fail "oov: the id past the vocabulary not recorded"
jq -s -e '[.[] | select(.kind == "margin") | .label != "past-vocabulary"] | all' "$T/oov2.jsonl" >/dev/null ||
	fail "oov: past-vocabulary without a vocabulary size"

# clean: no divergence, no label
sim_start clean $SIM
expect_rc 0 $TTAUDIT bench --url "$URL" $RUN --json -o "$T/clean.jsonl"
sim_stop
eq "$(jget "$T/out" .margins.scored)" 0 "clean: scored"
eq "$(labels "$T/clean.jsonl")" "" "clean: labels"

# llama-server refuses echo (Unsupported param): not evaluable, said why
sim_start llama $SIM --near-ties 0.3 --profile llamacpp --metrics
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/llama.jsonl"
n_div=$(jq -s '[.[] | select(.kind == "request" and .phase == "correctness" and .verdict == "diverged")] | length' "$T/llama.jsonl")
[ "$n_div" -gt 0 ] || fail "llamacpp: no divergence"
eq "$(labels "$T/llama.jsonl")" "not-evaluable=$n_div " "llamacpp: labels"
jq -s -e '[.[] | select(.kind == "margin") | .not_evaluable == "refused" and (.detail | test("Unsupported param: echo")) and .logprob_output == null] | all' \
	"$T/llama.jsonl" >/dev/null || fail "llamacpp: not said why"
contains "$T/out" "margins not evaluable (refused): http 500"

# ttsim's refusal is the real one, byte for byte (recorded from llama-server
# c392e509: fixtures/bench/llamacpp-echo-refused.json)
ECHO='{"prompt":"the quiet river","echo":true,"logprobs":5,"max_tokens":1}'
code=$(curl -s -o "$T/echo.json" -w '%{http_code}' "$URL/v1/completions" -d "$ECHO")
eq "$code" 500 "llamacpp: echo refused with"
cmp "$T/echo.json" "$FIX/bench/llamacpp-echo-refused.json" || fail "llamacpp: not llama-server's refusal"
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --suite "$SUITE" --margins -o "$T/x.jsonl"
sim_stop

# the real llama-server, when one is built: the same refusal, and a margin
# pass that labels nothing but not-evaluable
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ttaudit/llama"
if [ -x "$CACHE/bin/llama-server" ] && [ -s "$CACHE/tiny.gguf" ]; then
	LPORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	ulimit -c 0
	"$CACHE/bin/llama-server" -m "$CACHE/tiny.gguf" --host 127.0.0.1 --port "$LPORT" -np 4 -c 2048 -t 2 --metrics \
		>"$T/llama.log" 2>&1 &
	LPID=$!
	E2E_PIDS="$E2E_PIDS $LPID"
	n=0
	until curl -sf "http://127.0.0.1:$LPORT/health" >/dev/null 2>&1; do
		n=$((n + 1))
		kill -0 "$LPID" 2>/dev/null || { cat "$T/llama.log" >&2; fail "llama-server exited"; }
		[ $n -lt 600 ] || fail "llama-server not ready in 60 s"
		sleep 0.1
	done
	code=$(curl -s -o "$T/echo-real.json" -w '%{http_code}' "http://127.0.0.1:$LPORT/v1/completions" -d "$ECHO")
	eq "$code" 500 "llama-server: echo refused with"
	cmp "$T/echo-real.json" "$FIX/bench/llamacpp-echo-refused.json" || fail "llama-server: refusal changed"
	set +e
	$TTAUDIT bench --url "http://127.0.0.1:$LPORT" --no-progress --suite "$SUITE" --concurrency 4 --requests 24 \
		--correctness --seed 3 --margins -o "$T/real.jsonl" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	[ $rc -le 1 ] || { cat "$T/err"; fail "llama-server: bench exited $rc"; }
	contains "$T/out" "MARGINS: "
	jq -s -e '[.[] | select(.kind == "margin") | .label == "not-evaluable" and .not_evaluable == "refused"] | all' \
		"$T/real.jsonl" >/dev/null || fail "llama-server: a label without prompt logprobs"
	kill "$LPID"
else
	echo "(no built llama-server in $CACHE: the real server's part skipped)"
fi
echo "ok"
