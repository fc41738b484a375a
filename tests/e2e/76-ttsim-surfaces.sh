#!/bin/sh
# ttsim serve: the vLLM surfaces with curl - health, models, tokenize,
# detokenize, completions and chat with and without streaming, usage,
# metrics, the prefix cache and its reset, banners, the send log, errors.
. tests/e2e/lib.sh
. tests/e2e/ttsim.inc

sim_start s --seed 5 --time-scale 0 --slots 4 --send-log "$T/send.jsonl"
P='-s -H Content-Type:application/json'

# vLLM's lines as it prints them: process prefixes, the logo's version, the
# engine's lines from the engine process, thousands separators, the TT
# plugin and tt-metal lines, the kit's guard banner through loguru
grep -q '^(APIServer pid=[0-9]*) INFO [0-9-]* [0-9:]* \[utils.py:326\] non-default args: {' "$T/s.err" ||
	fail "no prefixed non-default args line"
contains "$T/s.err" "'max_num_seqs': 4"
grep -q '^(APIServer pid=[0-9]*) INFO .* version 0.16.0+ttsim' "$T/s.err" || fail "no logo version line"
grep -q '^(EngineCore_DP0 pid=[0-9]*) INFO .*\[core.py:108\] Initializing a V1 LLM engine (v0.16.0+ttsim) with config: ' "$T/s.err" ||
	fail "no engine line from the engine process"
contains "$T/s.err" "GPU KV cache size: 524,288 tokens"
contains "$T/s.err" "Maximum concurrency for 131,072 tokens per request: 4.00x"
contains "$T/s.err" "TTModelRunner: trace_mode=all, sample_on_device_mode=decode_only, enable_model_warmup=True"
grep -q '^(EngineCore_DP0 pid=[0-9]*) [0-9-]* [0-9:.]* | INFO | generator_vllm:21 - ttaudit: guard none engaged (unguarded merge)$' "$T/s.err" ||
	fail "no kit banner in loguru form"
contains "$T/s.err" "ttsim: listening on 127.0.0.1:$PORT"
lacks "$T/s.err" "engaged:"
# no colour when the output is not a terminal
lacks "$T/s.err" "$(printf '\033')"

eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" 200 "/health"
curl -s "$URL/v1/models" >"$T/models.json"
eq "$(jget "$T/models.json" '.data[0].id')" "ttsim/qwen36-sim" "model id"
eq "$(jget "$T/models.json" '.data[0].root')" "ttsim/qwen36-sim" "model root"
eq "$(jget "$T/models.json" '.data[0].max_model_len')" 131072 "max_model_len"

# tokenize / detokenize in vLLM's shapes
curl $P "$URL/tokenize" -d '{"prompt":"time river stone garden letter"}' >"$T/tok.json"
eq "$(jget "$T/tok.json" .count)" 5 "tokenize count"
eq "$(jget "$T/tok.json" .max_model_len)" 131072 "tokenize max_model_len"
toks=$(jq -c .tokens "$T/tok.json")
curl $P "$URL/detokenize" -d "{\"tokens\":$toks}" >"$T/detok.json"
eq "$(jget "$T/detok.json" .prompt)" "time river stone garden letter" "detokenize"
curl $P "$URL/tokenize" -d '{"messages":[{"role":"user","content":"hello there"}]}' >"$T/tokc.json"
[ "$(jget "$T/tokc.json" .count)" -gt 2 ] || fail "chat tokenize count"

# completions, not streamed: usage, id, deterministic text
body='{"model":"ttsim/qwen36-sim","prompt":"the river and the stone","max_tokens":7}'
curl $P "$URL/v1/completions" -d "$body" >"$T/c1.json"
curl $P "$URL/v1/completions" -d "$body" >"$T/c2.json"
eq "$(jget "$T/c1.json" .object)" text_completion "object"
eq "$(jget "$T/c1.json" .usage.completion_tokens)" 7 "completion_tokens"
eq "$(jget "$T/c1.json" .usage.prompt_tokens)" 5 "prompt_tokens"
eq "$(jget "$T/c1.json" .usage.total_tokens)" 12 "total_tokens"
eq "$(jget "$T/c1.json" '.choices[0].finish_reason')" length "finish_reason"
case "$(jget "$T/c1.json" .id)" in cmpl-????????????????????????????????) ;; *) fail "id shape: $(jget "$T/c1.json" .id)" ;; esac
eq "$(jget "$T/c1.json" '.choices[0].text')" "$(jget "$T/c2.json" '.choices[0].text')" "same prompt, same text"
[ "$(jget "$T/c1.json" .id)" != "$(jget "$T/c2.json" .id)" ] || fail "ids repeat"

# streamed completion: the same text, then [DONE]; chunks as vLLM dumps them
# (exclude_unset=False: usage null, stop_reason, prompt_token_ids,
# token_ids in every chunk); several tokens to a chunk when they piled up
curl -sN $P "$URL/v1/completions" -H 'X-Request-Id: e2e-7' -d '{"prompt":"the river and the stone","max_tokens":7,"stream":true,"return_token_ids":true}' >"$T/s1.txt"
n=$(grep -c '^data: {' "$T/s1.txt")
[ "$n" -ge 1 ] && [ "$n" -le 7 ] || fail "stream chunks: $n"
eq "$(grep '^data: {' "$T/s1.txt" | sed 's/^data: //' | jq -s '[.[].choices[0].token_ids | length] | add')" 7 "token_ids over the stream"
eq "$(grep -m1 '^data: {' "$T/s1.txt" | sed 's/^data: //' | jq -c '[.usage, .choices[0].stop_reason, .choices[0].prompt_token_ids]')" '[null,null,null]' "completions chunk fields"
eq "$(grep -m1 '^data: {' "$T/s1.txt" | sed 's/^data: //' | jq -r .id)" cmpl-e2e-7 "X-Request-Id is the external id"
eq "$(tail -n 2 "$T/s1.txt" | head -n 1)" "data: [DONE]" "stream ends with [DONE]"
st=$(grep '^data: {' "$T/s1.txt" | sed 's/^data: //' | jq -j '.choices[0].text')
eq "$st" "$(jget "$T/c1.json" '.choices[0].text')" "streamed text"
sid=$(grep -m1 '^data: {' "$T/s1.txt" | sed 's/^data: //' | jq -r .id)

# chat, streamed with usage: role chunk first, usage chunk before [DONE]
curl -sN $P "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"hello there"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}' >"$T/chat.txt"
grep '^data: {' "$T/chat.txt" | sed 's/^data: //' >"$T/chat.jsonl"
eq "$(head -n 1 "$T/chat.jsonl" | jq -r '.choices[0].delta.role')" assistant "role chunk first"
eq "$(tail -n 1 "$T/chat.jsonl" | jq -r .usage.completion_tokens)" 5 "chat usage"
eq "$(tail -n 1 "$T/chat.jsonl" | jq -r '.choices | length')" 0 "usage chunk has no choices"
eq "$(jq -s -r '[.[] | select(.choices | length > 0)] | last | .choices[0].finish_reason' "$T/chat.jsonl")" length "last token carries finish_reason"
eq "$(jq -s -r '[.[] | select(.choices | length > 0)] | last | .choices[0] | has("stop_reason") and has("token_ids")' "$T/chat.jsonl")" true "finishing chunk fields"
eq "$(head -n 1 "$T/chat.jsonl" | jq -r .object)" chat.completion.chunk "chunk object"
case "$(head -n 1 "$T/chat.jsonl" | jq -r .id)" in chatcmpl-*) ;; *) fail "chat id" ;; esac
curl $P "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":[{"type":"text","text":"hello there"}]}],"max_completion_tokens":5}' >"$T/chat.json"
eq "$(jget "$T/chat.json" '.choices[0].message.role')" assistant "chat message role"
eq "$(jget "$T/chat.json" '.choices[0].message.content')" "$(jq -j '.choices[0].delta.content // ""' "$T/chat.jsonl")" "chat text, streamed or not"

# the send log: one line per streamed token, with a monotonic time
eq "$(jq -r --arg id "$sid" 'select(.req == $id) | .i' "$T/send.jsonl" | tr '\n' ' ')" "0 1 2 3 4 5 6 " "send log indices"
jq -e 'select(.mono <= 0)' "$T/send.jsonl" >/dev/null && fail "send log mono not positive"
# the send call that carried the token: began, then returned
jq -e 'select((.mono_start | type) != "number" or .mono_start > .mono or .mono_start <= 0)' "$T/send.jsonl" \
	>/dev/null && fail "send log mono_start missing or after mono"

# prefix cache: a long prompt twice counts hits; after a reset it does not
long=$(seq 1 200 | sed 's/^/word/' | tr '\n' ' ')
hits() { curl -s "$URL/metrics" | sed -n 's/^vllm:prefix_cache_hits_total{[^}]*} \([0-9.]*\)$/\1/p'; }
h0=$(hits)
curl $P "$URL/v1/completions" -d "{\"prompt\":\"$long\",\"max_tokens\":2}" >/dev/null
h1=$(hits)
curl $P "$URL/v1/completions" -d "{\"prompt\":\"$long\",\"max_tokens\":2}" >/dev/null
h2=$(hits)
eq "$h1" "$h0" "a cold prompt hits nothing"
[ "${h2%.*}" -ge $(( ${h1%.*} + 192 )) ] || fail "warm prompt: hits $h1 -> $h2"
eq "$(curl -s -X POST -o /dev/null -w '%{http_code}' "$URL/reset_prefix_cache")" 200 "reset_prefix_cache"
curl $P "$URL/v1/completions" -d "{\"prompt\":\"$long\",\"max_tokens\":2}" >/dev/null
eq "$(hits)" "$h2" "after a reset the prompt is cold again"

# metrics: the families a benchmark reads
curl -s "$URL/metrics" >"$T/metrics.txt"
for m in 'vllm:cache_config_info{' 'vllm:num_requests_running{' 'vllm:num_requests_waiting{' \
	'vllm:prompt_tokens_total{' 'vllm:generation_tokens_total{' 'vllm:prefix_cache_queries_total{' \
	'vllm:time_to_first_token_seconds_bucket{' 'vllm:inter_token_latency_seconds_bucket{' \
	'vllm:request_time_per_output_token_seconds_bucket{' \
	'vllm:e2e_request_latency_seconds_count{' 'vllm:request_success_total{'; do
	contains "$T/metrics.txt" "$m"
done
grep -q '^vllm:cache_config_info{.*} 1.0$' "$T/metrics.txt" || fail "cache_config_info value"
grep -q '^vllm:num_requests_running{.*} 0.0$' "$T/metrics.txt" || fail "running after the requests"
lacks "$T/metrics.txt" "vllm:time_per_output_token_seconds"

# errors: vLLM's nested shape (PR #22099), and the server keeps serving
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" -d '{"prompt": oops}')
eq "$code" 400 "malformed JSON status"
eq "$(jget "$T/e.json" .error.type)" BadRequestError "error type"
eq "$(jget "$T/e.json" .error.code)" 400 "error code"
eq "$(jget "$T/e.json" .error.param)" null "error param"
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" -d '{"prompt":"a","max_tokens":500000}')
eq "$code" 400 "huge max_tokens"
contains "$T/e.json" "maximum context length is 131072 tokens"
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" -d '{"prompt":["a",1]}')
eq "$code" 400 "wrong prompt type"
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/chat/completions" -d '{"model":"gpt-x","messages":[{"role":"user","content":"a"}]}')
eq "$code" 404 "unknown model"
contains "$T/e.json" 'The model `gpt-x` does not exist.'
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/completions")" 405 "GET on a POST route"
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/nope")" 404 "unknown route"
head -c 9000000 /dev/zero | tr '\0' 'a' >"$T/big.txt"
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" --data-binary @"$T/big.txt")
eq "$code" 400 "oversized body"
eq "$(curl $P "$URL/v1/completions" -d "$body" | jq -r .usage.completion_tokens)" 7 "still serving"

# the audit: the engine process's loguru lines, request ids suffixed as the
# engine's are (<external id>-<8 hex>)
grep -q '^(EngineCore_DP0 pid=[0-9]*) .* | INFO | generator:1930 - MERGE_AUDIT {"ev":"config","slots":4' "$T/s.err" ||
	fail "no audit config line from the engine process"
grep -q 'MERGE_AUDIT {"ev":"merge",' "$T/s.err" || fail "no merge event on stderr"
grep -q '"req":"cmpl-e2e-7-[0-9a-f]\{8\}"' "$T/s.err" || fail "engine id not suffixed"
sim_stop

# reasoning (a reasoning parser): thinking text in delta.reasoning, then the
# answer; an in-stream error as vLLM sends it; 0.10's field and error shape
sim_start r --seed 5 --time-scale 0 --reasoning 3 --stream-error-rate 1 --no-merge
curl -sN $P "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"hello"}],"max_tokens":6,"stream":true}' >"$T/r.txt"
grep '^data: {' "$T/r.txt" | sed 's/^data: //' >"$T/r.jsonl"
eq "$(sed -n 2p "$T/r.jsonl" | jq -r '.choices[0].delta | keys[0]')" reasoning "thinking text in delta.reasoning"
contains "$T/r.txt" 'data: {"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}'
eq "$(tail -n 2 "$T/r.txt" | head -n 1)" "data: [DONE]" "an in-stream error, then [DONE]"
sim_stop
sim_start old --seed 5 --time-scale 0 --reasoning 2 --vllm-version 0.10 --no-merge
curl -sN $P "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"hello"}],"max_tokens":4,"stream":true}' >"$T/o.txt"
grep '^data: {' "$T/o.txt" | sed 's/^data: //' >"$T/o.jsonl"
eq "$(sed -n 2p "$T/o.jsonl" | jq -r '.choices[0].delta | keys[0]')" reasoning_content "0.10: delta.reasoning_content"
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" -d '{"prompt": oops}')
eq "$(jget "$T/e.json" .object)" error "0.10: the flat error body"
contains "$T/old.err" "vLLM API server version 0.10.1+ttsim"
curl -s "$URL/metrics" >"$T/m10.txt"
contains "$T/m10.txt" "vllm:time_per_output_token_seconds_bucket{"
contains "$T/m10.txt" "vllm:gpu_prefix_cache_hits_total{"
grep -q '"req":"chatcmpl-[0-9a-f]\{32\}"' "$T/old.err" || fail "0.10: the engine id is the response id"
sim_stop

# the capability gate (tt-metal PR #54565): a model that declares
# supports_async_decode False, or does not declare it (absent means not
# supported), never keeps, and each refusal is the kit's gate event; no
# variable overrides it (TT_FORCE_ASYNC_AHEAD_KEEP is read by no upstream
# generator, and ttsim ignores it too)
sim_start gate --seed 5 --time-scale 0 --supports-async-decode false
sim_load 20
sim_stop
contains "$T/gate.err" "Async scheduling was requested, but TT model"
contains "$T/gate.err" "ttaudit: gate: Qwen3_6ForCausalLM declares model_capabilities['supports_async_decode'] False: the keep does not run"
grep -q 'MERGE_AUDIT {"ev":"gate","step":[0-9]*,"keep":false,"supports_async_decode":false,"force":false,"reason":"model declares supports_async_decode False"}' "$T/gate.err" ||
	fail "no gate event"
lacks "$T/gate.err" 'MERGE_AUDIT {"ev":"merge"'
TT_FORCE_ASYNC_AHEAD_KEEP=1 sim_start undeclared --seed 5 --time-scale 0 --supports-async-decode undeclared
sim_load 20
sim_stop
contains "$T/undeclared.err" "does not declare model_capabilities['supports_async_decode']: the keep does not run (an absent key means not supported)"
grep -q 'MERGE_AUDIT {"ev":"gate","step":[0-9]*,"keep":false,"force":false,"reason":"model does not declare supports_async_decode (absent means not supported)"}' "$T/undeclared.err" ||
	fail "no gate event for an undeclared capability"
lacks "$T/undeclared.err" 'MERGE_AUDIT {"ev":"merge"'
lacks "$T/undeclared.err" '"keep":true'
lacks "$T/undeclared.err" "forced"
# replay of that audit: the keep never ran, every rule not evaluable
sed -n 's/.*MERGE_AUDIT //p' "$T/undeclared.err" >"$T/undeclared.jsonl"
expect_rc 0 "$TTAUDIT" replay "$T/undeclared.jsonl"
contains "$T/out" "the keep never ran (the capability gate refused it on"
sim_start declared --seed 5 --time-scale 0 --supports-async-decode true
sim_load 20
sim_stop
lacks "$T/declared.err" '"ev":"gate"'
grep -q 'MERGE_AUDIT {"ev":"merge"' "$T/declared.err" || fail "a declared capability made no merge"
expect_rc 2 "$TTSIM" serve --supports-async-decode maybe
contains "$T/err" "want true, false or undeclared"

# the engine process's name: the TT fork's dev branch numbers it
# (EngineCore_DP0, the default), vLLM main does not without data parallelism
sim_start main --seed 5 --time-scale 0 --vllm-branch main
sim_stop
grep -q '^(EngineCore pid=[0-9]*) ' "$T/main.err" || fail "vLLM main's engine is not EngineCore"
lacks "$T/main.err" "(EngineCore_DP0 pid="
expect_rc 2 "$TTSIM" serve --vllm-branch trunk
contains "$T/err" "want dev or main"

# colour as on a terminal (VLLM_LOGGING_COLOR=1 forces it): the process
# prefix cyan, the level green; the message itself carries none
VLLM_LOGGING_COLOR=1 sim_start colour --seed 5 --time-scale 0
sim_stop
grep -q "$(printf '\033\\[36m(APIServer pid=[0-9]*)\033\\[0m \033\\[32mINFO\033\\[0m')" "$T/colour.err" || fail "no colour when forced"
grep -q "$(printf '\033\\[36m(EngineCore_DP0 pid=[0-9]*)\033\\[0m .*GPU KV cache size: 1,048,576 tokens$')" "$T/colour.err" ||
	fail "engine lines not coloured"
