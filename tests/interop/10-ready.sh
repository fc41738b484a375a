#!/bin/sh
# ttaudit ready against a real llama-server through its loading phase: the
# model's open is held (slowload.c) until ready has been answered 503 at least
# once, as the server's own log says; then ready climbs to a real generated
# token. Ordering, not timing: the gate opens only after the 503 was logged.
. tests/e2e/lib.sh
. tests/interop/llama.inc
cc -shared -fPIC -O1 -o "$T/slowload.so" tests/interop/slowload.c -ldl || fail "cannot build slowload.so"
export SLOWLOAD_GATE="$T/gate"
LD_PRELOAD="$T/slowload.so" llama_start load --no-wait -np 2 -c 1024 -t 2 --metrics
unset SLOWLOAD_GATE
"$TTAUDIT" ready --url "$LURL" --interval 0.1 --timeout 120 --json >"$T/ready.json" 2>"$T/ready.err" &
RPID=$!
E2E_PIDS="$E2E_PIDS $RPID"
n=0
until grep -q 'GET /health 127.0.0.1 503' "$T/load.log" 2>/dev/null; do
	n=$((n + 1))
	kill -0 "$RPID" 2>/dev/null || { cat "$T/ready.json" "$T/ready.err" "$T/load.log" >&2; fail "ready ended while the model was held"; }
	[ $n -lt 1200 ] || { cat "$T/load.log" >&2; fail "no 503 answered in 120 s"; }
	sleep 0.1
done
# what a client sees while loading, byte for byte (fixtures/llamacpp/loading-503.json)
code=$(curl -s -o "$T/503.json" -w '%{http_code}' "$LURL/health")
eq "$code" 503 "/health while loading"
cmp -s "$T/503.json" "$FIX/llamacpp/loading-503.json" || { cat "$T/503.json" >&2; fail "503 body differs from the recorded one"; }
: >"$T/gate"
set +e; wait "$RPID"; rc=$?; set -e
[ "$rc" -eq 0 ] || { cat "$T/ready.json" "$T/ready.err" >&2; fail "ready exited $rc"; }
eq "$(jget "$T/ready.json" .ready)" true "ready"
eq "$(jget "$T/ready.json" '.rungs[0].rung')" health "first rung"
h=$(jget "$T/ready.json" '.rungs[0].attempts')
[ "$h" -ge 2 ] || fail "health rung passed in $h attempt(s): the 503 was not waited through"
eq "$(jget "$T/ready.json" '[.rungs[] | .passed] | all')" true "every rung passed"
eq "$(jget "$T/ready.json" '.rungs[3].rung')" generate "last rung"
tok=$(jget "$T/ready.json" .token_text)
[ -n "$tok" ] && [ "$tok" != null ] || fail "no generated token"
n503=$(grep -c 'GET /health 127.0.0.1 503' "$T/load.log")
echo "ready: health answered 503 $n503 time(s) in the server's log, passed at attempt $h; token '$tok'"
llama_stop
