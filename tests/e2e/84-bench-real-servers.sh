#!/bin/sh
# ttaudit bench against the servers as they really are: llama-server's
# surfaces (ttsim --profile llamacpp: /tokenize with `content`, a connection
# closed after every stream while the answer says keep-alive, usage on the
# last chunk, `error:` events, inf in /metrics) at concurrency 1, 4 and 16;
# vLLM with a reasoning parser (thinking text in delta.reasoning) against
# ttsim's send log; vLLM's in-stream error chunk.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || skip "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

# 1. llama-server: no failure manufactured by reused connections, counts from
# its usage, prompts sized with its own tokenizer shape
sim_start llama --profile llamacpp --seed 3 --time-scale 0 --slots 16 --metrics
for c in 1 4 16; do
	expect_rc 0 "$TTAUDIT" bench --url "$URL" --no-progress --input-tokens 64 --output-tokens 8 \
		--prompts 16 --requests 48 --concurrency "$c" -o "$T/l$c.jsonl"
	eq "$(jq -s '[.[] | select(.kind == "request" and .ok != true)] | length' "$T/l$c.jsonl")" 0 "c=$c failures"
	eq "$(jq -s -c '[.[] | select(.kind == "request") | [.tps_source, .output_tokens]] | unique' "$T/l$c.jsonl")" \
		'[["usage",8]]' "c=$c token counts from the server's usage"
	jq -s -e '[.[] | select(.kind == "request") | .prompt_tokens - 64 | fabs <= 2] | all' "$T/l$c.jsonl" >/dev/null ||
		fail "c=$c prompts not within 2 tokens of 64: $(jq -s -c '[.[] | select(.kind == "request") | .prompt_tokens] | unique' "$T/l$c.jsonl")"
	eq "$(jq -s -r '[.[] | select(.kind == "run")][0].identity.sizing' "$T/l$c.jsonl")" "tokenize:content" "c=$c sizing"
	[ "$c" != 1 ] || contains "$T/out" "sent again on a new connection"
done
# at concurrency 1 the reused connection is always one the server closed:
# those requests were sent again, said so, and are not failures
[ "$(jq -s '[.[] | select(.kind == "run")][0].client_loop.retried_dead_connection' "$T/l1.jsonl")" -gt 0 ] ||
	fail "no request met a closed connection at c=1 (the profile does not close after a stream?)"
# chat: the tokenizer applies no chat template, so sizing falls back, and says why
expect_rc 0 "$TTAUDIT" bench --url "$URL" --no-progress --chat --input-tokens 64 --output-tokens 8 \
	--prompts 4 -o "$T/lc.jsonl"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].identity.sizing' "$T/lc.jsonl")" "probe:tokenize-empty" "chat sizing"
jq -s -e '[.[] | select(.kind == "request") | .prompt_tokens - 64 | fabs <= 2] | all' "$T/lc.jsonl" >/dev/null ||
	fail "chat prompts not within 2 tokens of 64"
# readiness: /metrics with inf values parses
expect_rc 0 "$TTAUDIT" ready --url "$URL" --timeout 10
contains "$T/out" "metrics  passed"
sim_stop

# 2. an error event inside a 200 stream is a failure with the server's message
sim_start llerr --profile llamacpp --seed 3 --time-scale 0 --stream-error-rate 1 --metrics
expect_rc 1 "$TTAUDIT" bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 8 --prompts 4 \
	--concurrency 2 -o "$T/le.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | .outcome] | unique' "$T/le.jsonl")" '["server"]' "error events are failures"
jq -s -e '[.[] | select(.kind == "request") | .reason | contains("decode failed (injected fault)")] | all' \
	"$T/le.jsonl" >/dev/null || fail "the server's message is not in the reason"
sim_stop
sim_start vllmerr --seed 3 --time-scale 0 --stream-error-rate 1
expect_rc 1 "$TTAUDIT" bench --url "$URL" --no-progress --chat --input-tokens 16 --output-tokens 8 --prompts 4 \
	-o "$T/ve.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.outcome, .reason]] | unique' "$T/ve.jsonl")" \
	'[["server","error in stream: Internal server error"]]' "vLLM's in-stream error chunk"
sim_stop

# 3. vLLM with a reasoning parser: TTFT at the first output token (thinking
# included), within the client's timing error of ttsim's send of it; the
# answer's first token apart; reasoning tokens counted
sim_start think --seed 3 --time-scale 0.02 --reasoning 4 --send-log "$T/send.jsonl" --no-merge
expect_rc 0 "$TTAUDIT" bench --url "$URL" --no-progress --chat --input-tokens 32 --output-tokens 10 --prompts 4 \
	--concurrency 2 -o "$T/think.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.reasoning_tokens, .answer_tokens]] | unique' "$T/think.jsonl")" \
	'[[4,6]]' "reasoning and answer tokens counted apart"
jq -s -e '[.[] | select(.kind == "request") | .ttft_answer_s > .ttft_s] | all' "$T/think.jsonl" >/dev/null ||
	fail "the first answer token is not after the first output token"

jq -s -r '.[] | select(.kind == "request") | "\(.id) \(.t_sent + .ttft_s)"' "$T/think.jsonl" | sort >"$T/first.txt"
jq -r 'select(.i == 0) | "\(.req) \(.mono_start) \(.mono)"' "$T/send.jsonl" | sort >"$T/sent0.txt"
join "$T/first.txt" "$T/sent0.txt" >"$T/j.txt"
eq "$(wc -l <"$T/j.txt" | tr -d ' ')" 4 "requests joined with the send log"
# fields: id, first output received, its send began, returned: the first
# token's time falls within 1 ms of its send call (it was 4 decode steps
# late when only content counted)
awk '$2 < $3 - 0.0001 || $2 > $4 + 0.001 { bad = bad " " $1 } END { if (bad != "") { print "ttft away from the send:" bad; exit 1 } }' \
	"$T/j.txt" || fail "ttft is not the first reasoning token's time"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].figures.reasoning_tokens' "$T/think.jsonl")" 16 "run reasoning tokens"
sim_stop
