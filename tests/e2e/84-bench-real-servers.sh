#!/bin/sh
# ttaudit bench against the servers as they really are: llama-server's
# surfaces (ttsim --profile llamacpp: /tokenize with `content`, a connection
# closed after every stream while the answer says keep-alive, usage on the
# last chunk, `error:` events, inf in /metrics) at concurrency 1, 4 and 16;
# vLLM with a reasoning parser (thinking text in delta.reasoning) against
# ttsim's send log; vLLM's in-stream error chunk.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
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
# the bytes as llama-server's source writes them (fixtures/sse/README.md):
# ordered_json, so keys in the order the code inserts them; one event per
# token; the last chunk with no text, finish_reason, usage and timings; the
# request's model echoed; ids chatcmpl- and 32 letters or digits for both
shape() {
	grep '^data: {' "$1" | sed 's/^data: //' |
		jq -c '[keys_unsorted, (.choices[0] // {} | keys_unsorted), (.choices[0].delta // {} | keys_unsorted),
			(.usage // {} | keys_unsorted), (.timings // {} | keys_unsorted)]' | sort -u
}
curl -sN -H Content-Type:application/json "$URL/v1/chat/completions" \
	-d '{"model":"tiny.gguf","messages":[{"role":"user","content":"hello there"}],"max_tokens":3,"stream":true}' >"$T/lc.sse"
eq "$(shape "$T/lc.sse")" "$(shape "$FIX/sse/llamacpp-chat.sse")" "llama-server chat chunk shapes"
eq "$(grep -c '^data: {' "$T/lc.sse")" 4 "one event per token and the last chunk"
eq "$(grep '^data: {' "$T/lc.sse" | sed 's/^data: //' | jq -r '.model' | sort -u)" tiny.gguf "the request's model echoed"
grep '^data: {' "$T/lc.sse" | sed 's/^data: //' | jq -r .id | grep -qvE '^chatcmpl-[0-9A-Za-z]{32}$' && fail "llama-server chat id shape"
curl -sN -H Content-Type:application/json "$URL/v1/completions" \
	-d '{"model":"tiny.gguf","prompt":"time river","max_tokens":2,"stream":true}' >"$T/lk.sse"
eq "$(shape "$T/lk.sse")" "$(shape "$FIX/sse/llamacpp-completions.sse")" "llama-server completions chunk shapes"
grep '^data: {' "$T/lk.sse" | sed 's/^data: //' | jq -r .id | grep -qvE '^chatcmpl-[0-9A-Za-z]{32}$' && fail "llama-server completions id shape"
eq "$(tail -n 2 "$T/lk.sse" | head -n 1)" "data: [DONE]" "llama-server [DONE]"
# the other routes in llama-server's shapes
eq "$(curl -s -H Content-Type:application/json "$URL/detokenize" -d '{"tokens":[1,2]}' | jq -c 'keys_unsorted')" '["content"]' "detokenize"
eq "$(curl -s "$URL/v1/models" | jq -c '[keys_unsorted, (.data[0] | keys_unsorted)]')" \
	'[["object","data"],["id","object","created","owned_by","meta"]]' "models"
eq "$(curl -s -o "$T/nf.json" -w '%{http_code}' "$URL/nosuch")" 404 "unknown route"
eq "$(jq -c . "$T/nf.json")" '{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}' "unknown route body"
sim_stop

# 2. an error event inside a 200 stream is a failure with the server's message
sim_start llerr --profile llamacpp --seed 3 --time-scale 0 --stream-error-rate 1 --metrics
expect_rc 1 "$TTAUDIT" bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 8 --prompts 4 \
	--concurrency 2 -o "$T/le.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | .outcome] | unique' "$T/le.jsonl")" '["server"]' "error events are failures"
jq -s -e '[.[] | select(.kind == "request") | .reason | contains("Input prompt is too big compared to KV size")] | all' \
	"$T/le.jsonl" >/dev/null || fail "the server's message is not in the reason"
# the event as the fixture has it: an error field, the error object bare, then [DONE]
curl -sN -H Content-Type:application/json "$URL/v1/chat/completions" \
	-d '{"messages":[{"role":"user","content":"hello"}],"max_tokens":3,"stream":true}' >"$T/le.sse"
eq "$(grep '^error: ' "$T/le.sse")" "$(grep '^error: ' "$FIX/sse/llamacpp-error.sse")" "llama-server error event"
eq "$(tail -n 2 "$T/le.sse" | head -n 1)" "data: [DONE]" "[DONE] after the error"
sim_stop
# an API key: every route but /health and the models needs it (401 Invalid API Key)
sim_start llkey --profile llamacpp --seed 3 --time-scale 0 --api-key k3y
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" 200 "llama-server health without the key"
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/models")" 200 "llama-server models without the key"
eq "$(curl -s -H Content-Type:application/json "$URL/tokenize" -d '{"content":"a b"}')" \
	'{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}' "llama-server without the key"
eq "$(curl -s -H 'Authorization: Bearer k3y' -H Content-Type:application/json "$URL/tokenize" -d '{"content":"a b"}' | jq -c '.tokens | length')" 2 "llama-server with the key"
sim_stop
sim_start vllmerr --seed 3 --time-scale 0 --stream-error-rate 1
expect_rc 1 "$TTAUDIT" bench --url "$URL" --no-progress --chat --input-tokens 16 --output-tokens 8 --prompts 4 \
	-o "$T/ve.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.outcome, .reason]] | unique' "$T/ve.jsonl")" \
	'[["server","error in stream: Internal server error"]]' "vLLM's in-stream error chunk"
sim_stop

# 3. vLLM with a reasoning parser: TTFT at the first output token (thinking
# included), not at the answer's first token 4 decode steps later; reasoning
# tokens counted. Decode steps of ~25 ms (--time-scale 2) tell the two apart
# by ~100 ms, a margin no client delay on a loaded machine reaches (at 0.02
# the whole difference was 1 ms, and the check flaked under load).
sim_start think --seed 3 --time-scale 2 --reasoning 4 --send-log "$T/send.jsonl" --no-merge
expect_rc 0 "$TTAUDIT" bench --url "$URL" --no-progress --chat --input-tokens 32 --output-tokens 10 --prompts 4 \
	--concurrency 2 -o "$T/think.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.reasoning_tokens, .answer_tokens]] | unique' "$T/think.jsonl")" \
	'[[4,6]]' "reasoning and answer tokens counted apart"
jq -s -e '[.[] | select(.kind == "request") | .ttft_answer_s > .ttft_s] | all' "$T/think.jsonl" >/dev/null ||
	fail "the first answer token is not after the first output token"

jq -s -r '.[] | select(.kind == "request") | "\(.id) \(.t_sent + .ttft_s)"' "$T/think.jsonl" | sort >"$T/first.txt"
jq -r 'select(.i == 0) | "\(.req) \(.mono_start)"' "$T/send.jsonl" | sort >"$T/sent0.txt"
jq -r 'select(.i == 4) | "\(.req) \(.mono_start)"' "$T/send.jsonl" | sort >"$T/sent4.txt"
join "$T/first.txt" "$T/sent0.txt" | join - "$T/sent4.txt" >"$T/j.txt"
eq "$(wc -l <"$T/j.txt" | tr -d ' ')" 4 "requests joined with the send log"
# fields: id, first output received, the send of the first (reasoning)
# token began, the send of the first answer token began: received after the
# first was sent (0.1 ms for the clocks' reads) and before the answer's was
awk '$2 < $3 - 0.0001 || $2 >= $4 { bad = bad " " $1 } END { if (bad != "") { print "ttft not at the first token:" bad; exit 1 } }' \
	"$T/j.txt" || fail "ttft is not the first reasoning token's time"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].figures.reasoning_tokens' "$T/think.jsonl")" 16 "run reasoning tokens"
sim_stop
