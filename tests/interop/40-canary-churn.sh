#!/bin/sh
# ttaudit bench --correctness canary and --workload churn against a real
# llama.cpp llama-server (built by /work/shared/tools/llama-server.sh, a tiny
# random-weight model): the runs complete; no output holds another request's
# marker; the model does not repeat, so the calibration says own markers are
# not evaluable (never "lost", never "ok"); llama-server sends no token ids,
# so only the text is searched, and the record says so; the churn records
# every sync-forcing request, every client abort and the levels crossing -np.
# Skips, saying why, when the built server is not in its cache (fails under
# make interop).
. tests/e2e/lib.sh
CACHE="${TTAUDIT_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ttaudit/llama}"
LS="$CACHE/bin/llama-server"
# under the interop stage (TTAUDIT_INTEROP set, it built the server) a
# missing server is a failure
if ! { [ -x "$LS" ] && [ -s "$CACHE/tiny.gguf" ]; }; then
	[ -z "${TTAUDIT_INTEROP:-}" ] || fail "no built llama-server in $CACHE under the interop stage"
	skip "no built llama-server in $CACHE (make interop builds it)"
fi
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
# it aborts on SIGTERM (exit 134): no core file
ulimit -c 0
"$LS" -m "$CACHE/tiny.gguf" --host 127.0.0.1 --port "$PORT" -np 4 -c 2048 -t 2 --metrics >"$T/llama.log" 2>&1 &
LPID=$!
E2E_PIDS="$E2E_PIDS $LPID"
n=0
until curl -sf "$URL/health" >/dev/null 2>&1; do
	n=$((n + 1))
	kill -0 "$LPID" 2>/dev/null || { cat "$T/llama.log" >&2; fail "llama-server exited"; }
	[ $n -lt 600 ] || { cat "$T/llama.log" >&2; fail "llama-server not ready in 60 s"; }
	sleep 0.1
done

# canary, completions and chat, below and above the 4 slots (--stall: see
# the churn below)
for chat in "" --chat; do
	expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --correctness canary $chat --concurrency 2,16 --stall 600 \
		--requests 48 --seed 7 -o "$T/can$chat.jsonl"
	head -n 1 "$T/out" | grep -q '^CANARY: PASS: 0 leaked, 0 lost of 96 requests' || { cat "$T/out"; fail "canary$chat: not clean"; }
	contains "$T/out" "own markers NOT EVALUABLE (the model does not repeat)"
	contains "$T/out" "token ids not searched: a server sent none with its chunks"
	eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .canary.own != "not-evaluable")] | length' \
		"$T/can$chat.jsonl")" 0 "canary$chat: an own marker judged on a model that does not repeat"
	eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .ok and (.text | length) > 0)] | length' \
		"$T/can$chat.jsonl")" 96 "canary$chat: every output received and searched"
done

# churn with the canary, levels crossing -np 4 (2, 4, 16, 128), prefaces
# that fit the 512-token slots. At 128 in flight over 4 slots a request
# waits in the server's queue, sent nothing, until a slot is free: on a
# loaded 2-core machine that wait passed bench's 60 s silence limit, so the
# limit is the request timeout's (600 s) here.
set +e
$TTAUDIT bench --url "$URL" --no-progress --correctness canary --workload churn --max-num-seqs 4 \
	--churn-pressure 64 --seed 8 --stall 600 --json -o "$T/churn.jsonl" >"$T/out" 2>"$T/err"
rc=$?
set -e
[ "$rc" -le 1 ] || { cat "$T/out" "$T/err" >&2; fail "churn: bench exited $rc"; }
eq "$(jget "$T/out" .canary.verdict)" PASS "churn canary verdict"
eq "$(jget "$T/out" .canary.leaked)" 0 "churn leaks"
# This llama-server's unified KV cache (2,048 cells for 4 slots that keep
# their prompts cached) can be full when the churn's cancels, pressure and
# shared prefix meet in some orders (load decides which): it then fails
# every active slot with its own "Input prompt is too big compared to KV
# size" (server.cpp, c392e509). Those are the server's failures, counted as
# failures and said (exit 1); any other failure is a failure of the test.
n_kv=$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .ok == false and
	(.reason | test("too big compared to KV size")))] | length' "$T/churn.jsonl")
eq "$(jget "$T/out" .failed)" "$n_kv" "churn failures other than the server's full KV cache"
eq "$rc" "$([ "$n_kv" -gt 0 ] && echo 1 || echo 0)" "bench's exit status with $n_kv server failures"
eq "$(jq -s -c '[.[] | select(.kind == "run" and .phase == "canary") | .arrival.concurrency]' "$T/churn.jsonl")" \
	'[2,4,16,128]' "churn levels"
eq "$(jq -s -c '[.[] | select(.kind == "run" and .phase == "canary") | .arrival.max_inflight]' "$T/churn.jsonl")" \
	'[2,4,16,128]' "churn levels reached in flight"
n_sync=$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .churn.sync)] | length' "$T/churn.jsonl")
n_abort=$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .outcome == "aborted")] | length' "$T/churn.jsonl")
[ "$n_sync" -gt 0 ] || fail "churn: no sync-forcing request recorded"
[ "$n_abort" -gt 0 ] || fail "churn: no client abort"
eq "$(jget "$T/out" '.workload.transitions["sync-path"]')" "$n_sync" "summary: sync-forcing requests"
eq "$(jget "$T/out" '.workload.transitions["client-abort"]')" "$n_abort" "summary: client aborts"
jq -e '.workload.transitions["over-max-num-seqs"] > 0' "$T/out" >/dev/null || fail "churn: nothing over -np"
echo "llama-server: canary 192 requests, churn $(jget "$T/out" .canary.requests) requests: 0 leaks; sync-forcing $n_sync, aborts $n_abort; the server's full-KV failures $n_kv"
kill "$LPID" 2>/dev/null || true
wait "$LPID" 2>/dev/null || true
