#!/bin/sh
# ttaudit bench against a real llama-server: closed loops at 1, 4 and 8 (the
# server has 4 slots) with --correctness; every request's token count from
# the chunks equals the server's own usage, and their sum (plus the gate's one
# token) equals the growth of its llamacpp:tokens_predicted_total; a prompt
# past the slot's context (context shift off) is answered with an SSE `error:`
# event inside a 200 and counted a failure with the server's message; the
# server killed (SIGKILL) mid-run: every unfinished request a failure; a 401
# body (--api-key) fails the gate, naming the status.
. tests/e2e/lib.sh
. tests/interop/llama.inc

# 1. load and correctness, token counts three ways
llama_start a -np 4 -c 2048 -t 2 --metrics
m0=$(metric llamacpp:tokens_predicted_total) || fail "no tokens_predicted_total"
expect_rc 0 "$TTAUDIT" bench --url "$LURL" --no-arm-check --no-progress --correctness \
	--input-tokens 16 --output-tokens 8 --prompts 12 --concurrency 1,4,8 --seed 3 --json -o "$T/run.jsonl"
cp "$T/out" "$T/sum.json"
m1=$(metric llamacpp:tokens_predicted_total)
eq "$(jget "$T/sum.json" .correctness.verdict)" PASS "correctness verdict"
eq "$(jget "$T/sum.json" .failed)" 0 "failed requests"
eq "$(jget "$T/sum.json" .requests)" 36 "requests under load (12 at each of 3 levels)"
eq "$(jget "$T/sum.json" '[.cells[] | .concurrency] | sort | join(",")')" 1,4,8 "levels"
eq "$(jq -s '[.[] | select(.kind == "run" and .phase != "reference") | .arrival.max_inflight] | sort | join(",")' "$T/run.jsonl")" '"1,4,8"' \
	"levels reached in flight"
# per request: tokens counted from the chunks = the server's usage.completion_tokens
eq "$(jq -s '[.[] | select(.kind == "request" and (.counted_tokens != .output_tokens or .tps_source != "usage"))] | length' "$T/run.jsonl")" 0 \
	"requests whose chunk count differs from usage"
n_req=$(jq -s '[.[] | select(.kind == "request")] | length' "$T/run.jsonl")
sum_usage=$(jq -s '[.[] | select(.kind == "request") | .output_tokens] | add' "$T/run.jsonl")
sum_count=$(jq -s '[.[] | select(.kind == "request") | .counted_tokens] | add' "$T/run.jsonl")
# the readiness gate generated one token (max_tokens 1) per distinct completion
n_gate=$(jq -s '[.[] | select(.kind == "run") | .identity.ready_report.completion_id] | unique | length' "$T/run.jsonl")
eq "$sum_count" "$sum_usage" "tokens counted vs usage"
eq "$((m1 - m0))" "$((sum_usage + n_gate))" "tokens_predicted_total growth vs usage + gate tokens"
echo "bench: $n_req requests (12 reference + 36 under load): counted $sum_count, usage $sum_usage, /metrics +$((m1 - m0)) (incl. $n_gate gate token)"
llama_stop

# 2. server errors: an SSE error event in a 200 stream is a failure
llama_start e -np 4 -c 2048 -t 2 --metrics --no-context-shift
long=$("$PYTHON" -c 'print(" ".join("river garden kettle meadow stone %d" % i for i in range(150)))')
jq -n -c --arg p "$long" '{id: "ok1", prompt: "the river", max_tokens: 4},
	{id: "long", prompt: $p, max_tokens: 4}, {id: "ok2", prompt: "a kettle", max_tokens: 4}' >"$T/suite.jsonl"
# the wire, byte for byte as recorded
curl -sN "$LURL/v1/completions" -H 'content-type: application/json' \
	-d "$(jq -c --arg p "$long" -n '{prompt: $p, max_tokens: 3, stream: true}')" >"$T/err.sse"
cmp "$T/err.sse" "$FIX/sse/llamacpp-recorded-context-error.sse" || fail "the error event differs from the recorded one"
code=$(curl -s -o "$T/err.json" -w '%{http_code}' "$LURL/v1/completions" -H 'content-type: application/json' \
	-d "$(jq -c --arg p "$long" -n '{prompt: $p, max_tokens: 3}')")
eq "$code" 400 "non-streamed context error status"
cmp "$T/err.json" "$FIX/llamacpp/context-error-400.json" || fail "the 400 body differs from the recorded one"
expect_rc 1 "$TTAUDIT" bench --url "$LURL" --no-arm-check --no-progress --suite "$T/suite.jsonl" --requests 9 \
	--concurrency 3 --json -o "$T/err.jsonl"
eq "$(jget "$T/out" .requests)" 9 "error run requests"
eq "$(jget "$T/out" .failed)" 3 "error run: the 3 long prompts failed"
eq "$(jq -s -c '[.[] | select(.kind == "request" and .ok == false) | .http_status] | unique' "$T/err.jsonl")" '[200]' \
	"the failures came inside 200 streams"
eq "$(jq -s '[.[] | select(.kind == "request" and .ok == false) | tostring | select(contains("exceeds the available context size"))] | length' "$T/err.jsonl")" 3 \
	"the failures carry the server's message"
eq "$(jq -s '[.[] | select(.kind == "request" and .ok)] | length' "$T/err.jsonl")" 6 "the short prompts ok"
echo "errors: 3 of 9 failed by SSE error events (in 200 streams), with the server's message"
llama_stop

# 3. the server killed mid-run (SIGKILL, once 100 tokens were generated: far
# from the 400 x 32 the run asks): the run ends, unfinished requests failed
llama_start k -np 4 -c 2048 -t 2 --metrics
"$TTAUDIT" bench --url "$LURL" --no-arm-check --no-progress --input-tokens 16 --output-tokens 32 --ignore-eos \
	--prompts 400 --concurrency 4 --timeout 60 --json -o "$T/kill.jsonl" >"$T/kill.json" 2>"$T/kill.err" &
BPID=$!
E2E_PIDS="$E2E_PIDS $BPID"
n=0
until [ "$(metric llamacpp:tokens_predicted_total 2>/dev/null || echo 0)" -ge 100 ]; do
	n=$((n + 1))
	kill -0 "$BPID" 2>/dev/null || { cat "$T/kill.json" "$T/kill.err" >&2; fail "bench ended before the kill"; }
	[ $n -lt 1200 ] || fail "no progress in 120 s"
	sleep 0.1
done
llama_stop KILL
set +e; wait "$BPID"; rc=$?; set -e
eq "$rc" 1 "bench exit after the server died"
nf=$(jget "$T/kill.json" .failed)
nok=$(jq -s '[.[] | select(.kind == "request" and .ok)] | length' "$T/kill.jsonl")
nall=$(jq -s '[.[] | select(.kind == "request")] | length' "$T/kill.jsonl")
[ "$nf" -gt 0 ] || fail "no failure counted after the kill"
eq "$((nok + nf))" "$nall" "every request either ok or failed"
[ "$nok" -lt 400 ] || fail "all 400 requests ok though the server was killed"
echo "kill: $nall requests recorded, $nok ok before SIGKILL, $nf failed; failures $(jq -c .failures "$T/kill.json")"

# 4. a 4xx body: a server started with --api-key answers 401 with a JSON
# error body (byte for byte the recorded one); bench without the key, or
# with a wrong one, fails its gate naming the status and the key, and writes
# no request; with the key it runs, and the key is nowhere in its records
llama_start key -np 2 -c 1024 -t 2 --metrics --api-key interop-key-7
code=$(curl -s -o "$T/401.json" -w '%{http_code}' "$LURL/v1/completions" -d '{"prompt":"a","max_tokens":1}')
eq "$code" 401 "completion without the key"
cmp "$T/401.json" "$FIX/llamacpp/api-key-401.json" || fail "the 401 body differs from the recorded one"
B="$TTAUDIT bench --url $LURL --no-arm-check --no-progress --input-tokens 8 --output-tokens 4 --prompts 2 --ready-timeout 10 --json"
expect_rc 1 env -u TTAUDIT_API_KEY -u OPENAI_API_KEY $B -o "$T/nokey.jsonl"
eq "$(jget "$T/out" .gate_failed)" true "gate without the key"
contains "$T/err" "answered 401: the server wants an API key (set TTAUDIT_API_KEY)"
eq "$(jget "$T/out" .requests)" 0 "requests past a failed gate"
expect_rc 1 env -u OPENAI_API_KEY TTAUDIT_API_KEY=wrong-key $B -o "$T/badkey.jsonl"
contains "$T/err" "answered 401: the server wants an API key and refused the one given"
expect_rc 0 env -u OPENAI_API_KEY TTAUDIT_API_KEY=interop-key-7 $B -o "$T/key.jsonl"
eq "$(jget "$T/out" .failed)" 0 "failures with the key"
eq "$(jget "$T/out" .requests)" 2 "requests with the key"
! grep -q interop-key-7 "$T/key.jsonl" "$T/out" "$T/err" || fail "the API key was recorded"
echo "api key: 401 without the key and with a wrong one (gate failed, 0 requests), 2 ok with it, key not recorded"
llama_stop
