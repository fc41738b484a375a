#!/bin/sh
# ttaudit ready: the ladder through a load period, a server that answers
# /health but never generates, a gateway that answers 400, unparseable
# metrics and a closed port. Only a generated token passes the last rung.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built: the readiness end-to-end test needs the simulator"
. tests/e2e/ttsim.inc
rung() { jget "$T/out" ".rungs[] | select(.rung == \"$1\") | .$2"; }

# usage
expect_rc 2 "$TTAUDIT" ready
expect_rc 2 "$TTAUDIT" ready --url ftp://127.0.0.1:1
expect_rc 2 "$TTAUDIT" ready --url http://127.0.0.1:1 --timeout soon
expect_rc 0 "$TTAUDIT" ready --help

# through a 2 s load period (every route 503): ready once it generates
sim_start load --time-scale 0 --load-time 2
expect_rc 0 "$TTAUDIT" ready --url "$URL" --timeout 30 --interval 0.2 --json
eq "$(jget "$T/out" .ready)" true "ready after load"
eq "$(jget "$T/out" .failed_rung)" null "no failed rung"
eq "$(rung health passed)" true "health rung"
eq "$(rung generate passed)" true "generate rung"
awk "BEGIN { exit !($(rung health seconds) >= 1.5) }" || fail "health passed before the load period ended ($(rung health seconds) s)"
[ "$(rung health attempts)" -gt 3 ] || fail "health should have been retried through the load"
case "$(jget "$T/out" .completion_id)" in cmpl-*) ;; *) fail "completion id $(jget "$T/out" .completion_id)" ;; esac
[ -n "$(jget "$T/out" .token_text)" ] || fail "no generated token text"
# its completion went with an X-Request-Id, the one the server named it by
# (vLLM's external id: cmpl-<X-Request-Id>), so it can be found in the log
case "$(jget "$T/out" .request_id)" in ttaudit-[0-9]*-ready-1) ;; *) fail "request id $(jget "$T/out" .request_id)" ;; esac
eq "$(jget "$T/out" .completion_id)" "cmpl-$(jget "$T/out" .request_id)" "the server names the completion by the tool's id"
eq "$(jget "$T/out" .model)" ttsim/qwen36-sim "model from /v1/models"
# the text report names every rung, and the progress line stays off a non-TTY
expect_rc 0 "$TTAUDIT" ready --url "$URL" --timeout 10
contains "$T/out" "generate passed"
contains "$T/out" "ready: $URL in"
lacks "$T/err" "rung 1/4"
# on a terminal, a progress line names the rung being climbed (script(1) gives a pty)
if command -v script >/dev/null 2>&1; then
	script -qec "'$TTAUDIT' ready --url '$URL' --timeout 10" /dev/null >"$T/tty.out" 2>&1 ||
		fail "ready on a pty"
	contains "$T/tty.out" "rung 4/4 generate passed"
fi
# a model the server does not list: fails at the models rung
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 1.5 --interval 0.2 --model other --json
eq "$(jget "$T/out" .failed_rung)" models "unlisted model"
sim_stop

# /health answers, nothing is ever generated: times out at the last rung
sim_start never --time-scale 0 --never-generate
start=$(date +%s)
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 3 --interval 0.2 --json
secs=$(( $(date +%s) - start ))
[ "$secs" -le 8 ] || fail "ready took ${secs}s with --timeout 3"
eq "$(jget "$T/out" .ready)" false "never-generate"
eq "$(jget "$T/out" .failed_rung)" generate "never-generate rung"
eq "$(rung health passed)" true "never-generate: health"
eq "$(rung metrics passed)" true "never-generate: metrics"
eq "$(rung models passed)" true "never-generate: models"
eq "$(rung generate passed)" false "never-generate: generate"
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 2 --interval 0.2
contains "$T/out" "NOT READY"
contains "$T/out" "rung 'generate' did not pass"
sim_stop

# a gateway that answers 400 to completions must not pass
"$PYTHON" tests/e2e/gateway-stub.py gateway400 "$T/gw.port" &
E2E_PIDS="$E2E_PIDS $!"
n=0; while [ ! -s "$T/gw.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "stub did not start in 30 s"; sleep 0.05; done
GW="http://127.0.0.1:$(cat "$T/gw.port")"
expect_rc 1 "$TTAUDIT" ready --url "$GW" --timeout 1.5 --interval 0.2 --json
eq "$(jget "$T/out" .failed_rung)" generate "gateway 400"
eq "$(rung generate last_status)" 400 "gateway status"
contains "$T/out" "model is not loaded yet"
"$PYTHON" tests/e2e/gateway-stub.py badmetrics "$T/gw2.port" &
E2E_PIDS="$E2E_PIDS $!"
n=0; while [ ! -s "$T/gw2.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "stub did not start in 30 s"; sleep 0.05; done
expect_rc 1 "$TTAUDIT" ready --url "http://127.0.0.1:$(cat "$T/gw2.port")" --timeout 1 --interval 0.2 --json
eq "$(jget "$T/out" .failed_rung)" metrics "unparseable metrics"
case "$(rung metrics last_error)" in *"do not parse"*) ;; *) fail "metrics error: $(rung metrics last_error)" ;; esac

# nothing listening
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 1 --interval 0.2 --json
eq "$(jget "$T/out" .failed_rung)" health "closed port"
eq "$(rung health last_status)" 0 "no HTTP status from a closed port"

# an API key from the environment, never recorded; without it the server's
# 401 is named; a rung the server lacks is named as such (llama-server's
# /metrics without --metrics)
sim_start key --time-scale 0 --api-key s3cret-key
TTAUDIT_API_KEY=s3cret-key expect_rc 0 "$TTAUDIT" ready --url "$URL" --timeout 5 --interval 0.2 --json
lacks "$T/out" "s3cret-key"
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 1 --interval 0.2 --json
eq "$(jget "$T/out" .failed_rung)" models "no key"
case "$(rung models last_error)" in *"wants an API key"*TTAUDIT_API_KEY*) ;; *) fail "401 not named: $(rung models last_error)" ;; esac
sim_stop
sim_start nometrics --time-scale 0 --profile llamacpp
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 1 --interval 0.2 --json
eq "$(jget "$T/out" .failed_rung)" metrics "llama-server without --metrics"
case "$(rung metrics last_error)" in *"answered 501: the server lacks /metrics"*--metrics*) ;; *) fail "lacking rung not named: $(rung metrics last_error)" ;; esac
sim_stop
# ... and the ladder ends without waiting out its deadline
sim_start nometrics2 --time-scale 0 --profile llamacpp
t0=$(date +%s)
expect_rc 1 "$TTAUDIT" ready --url "$URL" --timeout 60 --interval 0.1
[ $(( $(date +%s) - t0 )) -lt 10 ] || fail "waited for a route the server lacks"
sim_stop
