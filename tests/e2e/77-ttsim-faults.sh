#!/bin/sh
# ttsim serve: how the arm is engaged and announced (environment, --arm, the
# banner-only and no-banner faults), and the injected faults other parts test
# against: load time, errors, resets, stalls, truncation, never generating,
# a client that leaves while it waits.
. tests/e2e/lib.sh
. tests/e2e/ttsim.inc
P='-s -H Content-Type:application/json'
req='{"prompt":"time river stone","max_tokens":6,"stream":true}'

# the arm from the environment, as a real patch reads it; --arm wins
QWEN36_MERGE_STAMP_GUARD=1 QWEN36_MERGE_BATCH_GUARD=1 sim_start env --time-scale 0
# the instrumentation kit's banner, one per flag in the engine's environment
contains "$T/env.err" "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)"
contains "$T/env.err" "ttaudit: guard QWEN36_MERGE_STAMP_GUARD engaged (env QWEN36_MERGE_STAMP_GUARD=1)"
contains "$T/env.err" '"arm":"batch+stamp"'
lacks "$T/env.err" "guard none engaged"
sim_stop
QWEN36_MERGE_STAMP_GUARD=0 QWEN36_PREFILLED_SLOTS_FIX=yes sim_start env0 --time-scale 0
contains "$T/env0.err" "ttaudit: guard none engaged (unguarded merge)"
sim_stop
QWEN36_MERGE_STAMP_GUARD=1 sim_start cli --time-scale 0 --arm lifetime
contains "$T/cli.err" "ttaudit: guard QWEN36_MERGE_LIFETIME_GUARD engaged (ttsim --arm lifetime)"
lacks "$T/cli.err" "QWEN36_MERGE_STAMP_GUARD engaged"
sim_stop

# banner-only: the stamp banner, the audit says stamp, the merge is bare;
# no-banner: the guard works and says nothing
sim_start bo --time-scale 0 --arm stamp --fault banner-only --audit "$T/bo.jsonl"
sim_load 60
sim_stop
contains "$T/bo.err" "QWEN36_MERGE_STAMP_GUARD engaged"
contains "$T/bo.jsonl" '"arm":"stamp"'
sim_start nb --time-scale 0 --arm stamp --fault no-banner --audit "$T/nb.jsonl"
sim_load 60
sim_stop
lacks "$T/nb.err" "engaged"
lacks "$T/nb.err" "guard none engaged"
contains "$T/nb.jsonl" '"arm":"stamp"'
if "$TTAUDIT" replay --help >/dev/null 2>&1; then
	"$TTAUDIT" replay --json "$T/bo.jsonl" >"$T/bo.rep" || [ $? -eq 1 ] || fail "replay bo"
	"$TTAUDIT" replay --json "$T/nb.jsonl" >"$T/nb.rep" || [ $? -eq 1 ] || fail "replay nb"
	[ "$(jget "$T/bo.rep" .rules.stamp.fingerprint.mismatched)" -gt 0 ] ||
		fail "banner-only: the recorded takes should contradict stamp"
	eq "$(jget "$T/bo.rep" .rules.bare.fingerprint.mismatched)" 0 "banner-only takes are bare's"
	eq "$(jget "$T/nb.rep" .rules.stamp.fingerprint.mismatched)" 0 "no-banner takes are stamp's"
fi

# load time, as vLLM: the socket is bound but not listening, so connection
# refused (curl: 7) for the whole load, then 200 (polled)
sim_start load --time-scale 0 --load-time 0.8
set +e
curl -s -o /dev/null "$URL/health"
rc=$?
set -e
eq "$rc" 7 "health while loading: connection refused"
n=0
while [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" != 200 ]; do
	n=$((n + 1))
	[ $n -lt 50 ] || fail "still loading after 5 s"
	sleep 0.1
done
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" 200 "health after loading"
sim_stop

# errors: every request answered 500 in vLLM's error shape
sim_start err --time-scale 0 --error-rate 1
code=$(curl $P -o "$T/e.json" -w '%{http_code}' "$URL/v1/completions" -d "$req")
eq "$code" 500 "injected error"
eq "$(jget "$T/e.json" .error.type)" InternalServerError "injected error body"
sim_stop

# resets: the stream dies mid-way (curl sees a transfer error), server lives on
sim_start rst --time-scale 0 --reset-rate 1
set +e
curl -sN $P "$URL/v1/completions" -d '{"prompt":"time","max_tokens":20,"stream":true}' >"$T/rst.txt" 2>/dev/null
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "reset: curl succeeded"
lacks "$T/rst.txt" "[DONE]"
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" 200 "health after a reset"
sim_stop

# truncation: a clean end without [DONE], fewer chunks than asked
sim_start tr --time-scale 0 --truncate-rate 1
curl -sN $P "$URL/v1/completions" -d '{"prompt":"time","max_tokens":20,"stream":true}' >"$T/tr.txt"
lacks "$T/tr.txt" "[DONE]"
[ "$(grep -c '^data: {' "$T/tr.txt")" -lt 20 ] || fail "truncation sent every token"
sim_stop

# stalls: a stream pauses for the stall time
sim_start st --time-scale 0 --stall-rate 1 --stall-time 0.6
t0=$(date +%s.%N)
curl -sN $P "$URL/v1/completions" -d "$req" >"$T/st.txt"
t1=$(date +%s.%N)
contains "$T/st.txt" "[DONE]"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.55) }' || fail "stall: stream took $t0..$t1"
sim_stop

# never generate: healthy, but no token comes
sim_start ng --time-scale 0 --never-generate
eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" 200 "never-generate health"
set +e
curl -sN --max-time 0.6 $P "$URL/v1/completions" -d "$req" >"$T/ng.txt"
rc=$?
set -e
eq "$rc" 28 "never-generate: curl timed out"
lacks "$T/ng.txt" '"text"'
sim_stop

# a client that leaves while its request waits, suspended, for tokens (a long
# non-streamed answer): the server notices within its probe interval and
# aborts the request, freeing the slot
sim_start gone --time-scale 1
set +e
curl -s --max-time 0.3 $P "$URL/v1/completions" -d '{"prompt":"gone","max_tokens":2000}' >/dev/null
set -e
running() {
	curl -s "$URL/metrics" | awk '/^vllm:num_requests_running/ { print $2 }'
}
aborted() {
	curl -s "$URL/metrics" | awk '/^vllm:request_success_total.*abort/ { print $2 }'
}
n=0
while [ "$(aborted)" != 1.0 ] && [ $n -lt 30 ]; do
	n=$((n + 1))
	sleep 0.1
done
eq "$(aborted)" 1.0 "a gone client's request aborted"
eq "$(running)" 0.0 "nothing left running after a client left"
sim_stop

# bad usage
expect_rc 2 "$TTSIM" serve --arm nope
contains "$T/err" "'nope': unknown arm"
expect_rc 2 "$TTSIM" serve --fault sideways
expect_rc 2 "$TTSIM" serve --error-rate 2
expect_rc 2 "$TTSIM" serve --port 70000
expect_rc 0 "$TTSIM" serve --help
contains "$T/out" "--send-log FILE"
