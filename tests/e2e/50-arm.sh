#!/bin/sh
# ttaudit arm against ttsim on loopback: an arm confirmed; the banner printed
# without the guard (the audit catches it); the guard without its banner; the
# control's banner where the treatment was declared; /metrics unreachable;
# the server's environment from a capture. Every failure must be a FAIL.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built: the arm end-to-end test needs the simulator"
. tests/e2e/ttsim.inc
SPEC="$FIX/arm/arms.json"
P='-s -H Content-Type:application/json'
unset QWEN36_PREFILLED_SLOTS_FIX QWEN36_MERGE_BATCH_GUARD QWEN36_MERGE_LIFETIME_GUARD \
	QWEN36_MERGE_STAMP_GUARD QWEN36_MERGE_GARBAGE_BOUND

# traffic that makes reset_batch merges with rows reused by other requests (as
# in 77-ttsim-faults): 96 concurrent completions in ttsim.inc's chain of shapes
load() {
	sim_load 96   # enough merges that one separates the arms, however the requests batch
}
# arm WANT ARGS...: ttaudit arm --json with the example spec; report in $T/out
arm() {
	want=$1; shift
	expect_rc "$want" "$TTAUDIT" arm --json --spec "$SPEC" "$@"
}
# item N FIELD: a field of item N of the last --json report
item() { jget "$T/out" ".items[$1].$2"; }

# 1. the batch arm, engaged and announced: CONFIRMED, every item quoted
sim_start ok --time-scale 0 --arm batch
# A run may, by timing, hold no merge where the batch guard refuses a slot the
# bare merge would take; then no event separates batch from bare and the audit
# item is rightly WITHHELD. More traffic brings one; nothing else may be short.
rounds=0
while :; do
	load
	rounds=$((rounds + 1))
	"$TTAUDIT" arm --json --spec "$SPEC" --arm batch --url "$URL" --log "$T/ok.err" \
		>"$T/out" 2>"$T/err" && break
	[ $rounds -lt 5 ] && [ "$(jget "$T/out" '[.items[] | select(.verdict != "met" and .verdict != "clear")] | length')" = 1 ] &&
		[ "$(item 1 verdict)" = absent ] && grep -q 'WITHHELD' "$T/out" || break
done
arm 0 --arm batch --url "$URL" --log "$T/ok.err"
eq "$(jget "$T/out" .verdict)" CONFIRMED "batch arm"
eq "$(item 0 verdict)" met "batch banner"
contains "$T/out" "$T/ok.err:"
eq "$(item 1 verdict)" met "batch audit fingerprint"
case "$(item 1 quote)" in CONSISTENT*) ;; *) fail "audit quote: $(item 1 quote)" ;; esac
eq "$(item 2 verdict)" met "max_model_len from /v1/models"
eq "$(item 2 where)" "$URL/v1/models" "models source"
eq "$(item 3 verdict)" clear "control banner absent"
expect_rc 0 "$TTAUDIT" arm --spec "$SPEC" --arm batch --url "$URL" --log "$T/ok.err"
contains "$T/out" "arm 'batch': CONFIRMED (4 of 4 items)"
# the same server is not the control, nor another treatment
arm 1 --arm bare --url "$URL" --log "$T/ok.err"
eq "$(item 0 verdict)" absent "bare banner on a batch server"
eq "$(item 2 verdict)" forbidden-present "guard banner forbidden to the control"
arm 1 --arm stamp --url "$URL" --log "$T/ok.err"
eq "$(item 1 verdict)" absent "stamp fingerprint on a batch server"
sim_stop

# 2. banner printed, guard not applied: the banner is met, the audit is not
sim_start bo --time-scale 0 --arm batch --fault banner-only
# as above: a run may, by timing, hold no event that separates the rules
rounds=0
while :; do
	load
	rounds=$((rounds + 1))
	"$TTAUDIT" arm --json --spec "$SPEC" --arm batch --log "$T/bo.err" >"$T/out" 2>"$T/err" || true
	grep -q WITHHELD "$T/out" && [ $rounds -lt 5 ] || break
done
sim_stop
contains "$T/bo.err" "QWEN36_MERGE_BATCH_GUARD engaged"
contains "$T/bo.err" '"arm":"batch"'
arm 1 --arm batch --log "$T/bo.err"
eq "$(jget "$T/out" .verdict)" FAIL "banner-only"
eq "$(item 0 verdict)" met "banner-only: banner"
eq "$(item 1 verdict)" absent "banner-only: audit"
case "$(item 1 reason)" in *"contradict 'batch'"*bare*) ;; *) fail "banner-only reason: $(item 1 reason)" ;; esac

# 3. guard applied, no banner: FAIL, absent
sim_start nb --time-scale 0 --arm batch --fault no-banner
load
sim_stop
arm 1 --arm batch --log "$T/nb.err"
eq "$(item 0 verdict)" absent "no-banner: banner"
eq "$(item 1 verdict)" met "no-banner: audit"

# 4. the control's banner on a run declared as the treatment: forbidden
sim_start bare --time-scale 0
load
arm 1 --arm batch --url "$URL" --log "$T/bare.err"
eq "$(item 0 verdict)" absent "control run: batch banner"
eq "$(item 3 verdict)" forbidden-present "control run: control banner"
contains "$T/out" "ttaudit: guard none engaged (unguarded merge)"
arm 0 --arm bare --url "$URL" --log "$T/bare.err"

# 5. /metrics evidence: met while the server runs, source-unreachable once it is gone
cat >"$T/metrics.json" <<'JSON'
{"arms": {"batch": {
  "requires": [{"metrics": "vllm:cache_config_info", "labels": {"enable_prefix_caching": "True"}}],
  "forbids": [{"metrics": "vllm:cache_config_info", "labels": {"cache_dtype": "bfloat8_b"}}]}}}
JSON
expect_rc 0 "$TTAUDIT" arm --json --spec "$T/metrics.json" --arm batch --url "$URL"
eq "$(item 0 verdict)" met "metrics label"
case "$(item 0 where)" in "$URL/metrics:"[0-9]*) ;; *) fail "metrics where: $(item 0 where)" ;; esac
eq "$(item 1 verdict)" clear "forbidden metrics label"
sim_stop
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/metrics.json" --arm batch --url "$URL"
eq "$(item 0 verdict)" source-unreachable "metrics of a stopped server"
eq "$(item 1 verdict)" source-unreachable "forbidden metrics of a stopped server"
eq "$(jget "$T/out" .verdict)" FAIL "metrics unreachable"
# a /metrics that answers 200 with something that is not Prometheus text
"$PYTHON" tests/e2e/gateway-stub.py badmetrics "$T/gw.port" &
E2E_PIDS="$E2E_PIDS $!"
n=0; while [ ! -s "$T/gw.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "stub did not start in 30 s"; sleep 0.05; done
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/metrics.json" --arm batch --url "http://127.0.0.1:$(cat "$T/gw.port")"
eq "$(item 0 verdict)" source-unreachable "unparseable metrics"
case "$(item 0 reason)" in *"does not parse"*) ;; *) fail "unparseable metrics reason: $(item 0 reason)" ;; esac

# a required label that is not there, and a /v1/models value that differs (the stub
# serves max_model_len 4096): absent, with what was found
cat >"$T/absent.json" <<'JSON'
{"arms": {"bf8": {"requires": [
  {"metrics": "vllm:num_requests_running", "labels": {"model_name": "other"}},
  {"models": "max_model_len", "equals": 131072}]}}}
JSON
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/absent.json" --arm bf8 --url "http://127.0.0.1:$(cat "$T/gw.port")"
eq "$(item 0 verdict)" source-unreachable "metrics item on unparseable metrics"
"$PYTHON" tests/e2e/gateway-stub.py gateway400 "$T/gw2.port" &
E2E_PIDS="$E2E_PIDS $!"
n=0; while [ ! -s "$T/gw2.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "stub did not start in 30 s"; sleep 0.05; done
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/absent.json" --arm bf8 --url "http://127.0.0.1:$(cat "$T/gw2.port")"
eq "$(item 0 verdict)" absent "metrics label value not served"
case "$(item 0 reason)" in *"1 sample(s) of vllm:num_requests_running, none with these labels"*) ;; *) fail "metrics absent reason: $(item 0 reason)" ;; esac
eq "$(item 1 verdict)" absent "max_model_len differs"
case "$(item 1 reason)" in *"data[0].max_model_len is 4096"*) ;; *) fail "models absent reason: $(item 1 reason)" ;; esac

# 6. an empty log is a FAIL, never a pass
: >"$T/empty.log"
arm 1 --arm bare --log "$T/empty.log"
eq "$(item 0 verdict)" source-unreachable "empty log"

# 7. the environment the server really had, from a capture (the shim is not ASan-built)
case "$BUILD" in *asan*) echo "capture part skipped under sanitizers"; exit 0 ;; esac
[ -e "$BUILD/libttaudit-shim.so" ] || fail "no $BUILD/libttaudit-shim.so: make builds it"
cat >"$T/env.json" <<'JSON'
{"arms": {"batch": {
  "env": {"QWEN36_MERGE_BATCH_GUARD": "1"},
  "requires": [{"env": "QWEN36_MERGE_BATCH_GUARD", "equals": "1"},
               {"log": "QWEN36_MERGE_BATCH_GUARD engaged"}, {"audit": "batch"}],
  "forbids": [{"env": "QWEN36_MERGE_STAMP_GUARD"}, {"log": "guard none engaged", "rule": "arm:bare"}]},
 "printed": {"requires": [{"log": "QWEN36_MERGE_BATCH_GUARD engaged"}],
  "forbids": [{"log": "Shutting down FastAPI HTTP server"}]}}}
JSON
start_captured() {
	rm -f "$T/cap.port"
	"$@" "$TTAUDIT" capture -o "$T/cap.jsonl" -- "$TTSIM" serve --port 0 --port-file "$T/cap.port" \
		--time-scale 0 >"$T/cap.err" 2>&1 &
	SIMPID=$!
	E2E_PIDS="$E2E_PIDS $SIMPID"
	n=0; while [ ! -s "$T/cap.port" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "captured ttsim did not start in 30 s"; sleep 0.05; done
	URL="http://127.0.0.1:$(cat "$T/cap.port")"
}
start_captured env QWEN36_MERGE_BATCH_GUARD=1
load
sim_stop
expect_rc 0 "$TTAUDIT" arm --json --spec "$T/env.json" --arm batch --capture "$T/cap.jsonl"
eq "$(item 0 quote)" "QWEN36_MERGE_BATCH_GUARD=1 (the process that wrote the audit)" "env from the engine's start record"
# the server printed the forbidden line, but a capture without --all-lines
# records only what its banner rules match: not evaluable, FAIL (it read
# "clear", CONFIRMED, before)
contains "$T/cap.err" "Shutting down FastAPI HTTP server"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/env.json" --arm printed --capture "$T/cap.jsonl"
eq "$(item 1 verdict)" not-evaluable "forbidden line a rules-only capture cannot hold"
eq "$(jget "$T/out" .verdict)" FAIL "not evaluable fails the arm"
# the engine process wrote the audit: its start record is not the launcher's
eng=$(jq -r 'select(.src == "audit") | .pid' "$T/cap.jsonl" | head -n 1)
jq -s -e --argjson p "$eng" '[.[] | select(.src == "start" and .pid == $p) | .argv[]] | any(. == "engine-core")' "$T/cap.jsonl" >/dev/null ||
	fail "the audit is not written by the engine-core process"
# the flag that did not reach the server: the launcher meant batch, the server ran bare
start_captured env
load
sim_stop
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/env.json" --arm batch --capture "$T/cap.jsonl"
eq "$(item 0 verdict)" absent "env that never reached the server"
eq "$(item 4 verdict)" forbidden-present "control banner in the capture"
