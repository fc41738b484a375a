#!/bin/sh
# ttaudit bench: no record without the readiness gate, nor without a named
# arm CONFIRMED from the server's own log (--no-arm-check writes records
# labelled unconfirmed); repeats interleaved across arms; the cold claim
# invalidated when the prefix cache serves a "cold" run; UNSTABLE when the
# server is noisy on purpose; bad suites refused with file and line.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SPEC="$FIX/bench/arms.json"
GEN="--no-progress --input-tokens 16 --output-tokens 6 --prompts 4"

sim_start stamp --seed 1 --time-scale 0 --arm stamp --no-audit
URL_S=$URL
sim_start bare --seed 1 --time-scale 0 --arm bare --no-audit
URL_B=$URL

# confirmed: the records carry the arm, its state and its evidence
expect_rc 0 $TTAUDIT bench --url "$URL_S" --arm stamp --log "$T/stamp.err" --spec "$SPEC" $GEN -o "$T/ok.jsonl"
contains "$T/out" "arm stamp (confirmed)"
jq -s '[.[] | select(.kind == "run")][0].identity' "$T/ok.jsonl" >"$T/id.json"
eq "$(jget "$T/id.json" .arm)" stamp "identity arm"
eq "$(jget "$T/id.json" .arm_state)" confirmed "identity arm state"
eq "$(jget "$T/id.json" .arm_evidence.verdict)" CONFIRMED "arm evidence"
jget "$T/id.json" ".arm_evidence.items[0].quote" | grep -q "QWEN36_MERGE_STAMP_GUARD engaged" || fail "arm evidence quote"
eq "$(jget "$T/id.json" .ready)" true "identity ready"
eq "$(jget "$T/id.json" .model)" ttsim/qwen36-sim "identity model"
eq "$(jget "$T/id.json" .tool_version)" "$($TTAUDIT --version | awk '{ print $2 }')" "identity tool version"
jget "$T/id.json" .server_config_hash | grep -q '^fnv1a64:[0-9a-f]\{16\}$' || fail "server config hash"
jget "$T/id.json" .suite_hash | grep -q '^fnv1a64:[0-9a-f]\{16\}$' || fail "suite hash"
[ -n "$(jget "$T/id.json" .host)" ] || fail "identity host"
jq -s -e '[.[] | select(.kind == "run")][0] | .wall_start > 0 and .mono_end >= .mono_start' "$T/ok.jsonl" >/dev/null ||
	fail "wall and monotonic start/end"
eq "$(jq -s -c '[.[] | select(.kind == "request") | .arm_state] | unique' "$T/ok.jsonl")" '["confirmed"]' "request arm state"

# the arm named is not the arm the server runs: FAIL, nothing recorded
expect_rc 1 $TTAUDIT bench --url "$URL_S" --arm bare --log "$T/stamp.err" --spec "$SPEC" $GEN -o "$T/no.jsonl"
contains "$T/out" "GATE FAILED: arm 'bare'"
[ ! -e "$T/no.jsonl" ] || fail "a record was written for an unconfirmed arm"
# an empty log is no evidence either
: >"$T/empty.log"
expect_rc 1 $TTAUDIT bench --url "$URL_S" --arm stamp --log "$T/empty.log" --spec "$SPEC" $GEN -o "$T/no2.jsonl"
[ ! -e "$T/no2.jsonl" ] || fail "a record was written on empty evidence"
# an arm without a spec is bad usage
expect_rc 2 $TTAUDIT bench --url "$URL_S" --arm stamp $GEN -o "$T/no3.jsonl"
contains "$T/err" "without --spec"
# --no-arm-check: written, labelled unconfirmed
expect_rc 0 $TTAUDIT bench --url "$URL_S" --arm bare --no-arm-check $GEN -o "$T/unc.jsonl"
eq "$(jq -s -c '[.[] | .arm_state // .identity.arm_state // (.arms[]?.arm_state)] | unique' "$T/unc.jsonl")" \
	'["unconfirmed"]' "unconfirmed label"

# readiness: a server that is not there never gets a record
expect_rc 1 $TTAUDIT bench --url "http://127.0.0.1:9" --ready-timeout 0.5 $GEN -o "$T/nr.jsonl"
contains "$T/out" "GATE FAILED: http://127.0.0.1:9: not ready"
[ ! -e "$T/nr.jsonl" ] || fail "a record was written without readiness"

# two arms, repeats interleaved A B A B
expect_rc 0 $TTAUDIT bench --url "$URL_S" --arm stamp --log "$T/stamp.err" --url "$URL_B" --arm bare \
	--log "$T/bare.err" --spec "$SPEC" $GEN --repeats 2 -o "$T/ab.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "run") | [.identity.arm, .repeat]]' "$T/ab.jsonl")" \
	'[["stamp",0],["bare",0],["stamp",1],["bare",1]]' "interleaved order"
eq "$(jq -s -c '[.[] | select(.kind == "summary")][0].cells | map(.repeats)' "$T/ab.jsonl")" '[2,2]' "repeats per cell"

# cold: a fresh corpus seed is cold; the same seed again is served by the prefix cache
expect_rc 0 $TTAUDIT bench --url "$URL_B" $GEN --seed 77 -o "$T/cold1.jsonl"
lacks "$T/out" "COLD CLAIM INVALID"
eq "$(jq -s -c '[.[] | select(.kind == "run") | [.cache_claim, .cold_claim_valid]]' "$T/cold1.jsonl")" '[["cold",true]]' "cold valid"
expect_rc 0 $TTAUDIT bench --url "$URL_B" $GEN --seed 77 -o "$T/cold2.jsonl"
contains "$T/out" "COLD CLAIM INVALID"
jq -s -e '[.[] | select(.kind == "run")][0] | .cold_claim_valid == false and .prefix_cache_hits_delta > 0' \
	"$T/cold2.jsonl" >/dev/null || fail "cold claim not invalidated by prefix-cache hits"
# --warm claims nothing cold
expect_rc 0 $TTAUDIT bench --url "$URL_B" $GEN --warm -o "$T/warm.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "run") | [.cache_claim, has("cold_claim_valid")]]' "$T/warm.jsonl")" \
	'[["warm",false]]' "warm claim"
sim_stop

# UNSTABLE: step times multiplied by up to 5, redrawn every 256 steps; each
# repeat is about 260 steps, so repeats see different speeds
sim_start noisy --seed 1 --time-scale 0.03 --noise 4 --no-audit
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --input-tokens 16 --output-tokens 32 --prompts 8 \
	--concurrency 4 --requests 32 --repeats 5 -o "$T/noisy.jsonl"
contains "$T/out" "UNSTABLE: repeats spread over 15%"
jq -s -e '[.[] | select(.kind == "summary")][0].cells[0] | .unstable and .spread > 0.15 and
	(.median.output_tok_s == (.output_tok_s_by_repeat | sort | .[2]))' "$T/noisy.jsonl" >/dev/null ||
	fail "noisy run not UNSTABLE, or the reported figure is not the median repeat"
sim_stop

# bad suites: file and line named, nothing run
printf '%s\n' '{"id":"a","prompt":"x","max_tokens":4}' '{"id":"b","prompt":"y","max_tokns":4}' >"$T/bad.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL_B" --no-progress --suite "$T/bad.jsonl" -o "$T/bad.out"
contains "$T/err" "bad.jsonl:2: unknown key \"max_tokns\""
: >"$T/empty.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL_B" --no-progress --suite "$T/empty.jsonl" -o "$T/bad.out"
contains "$T/err" "no prompts in the suite"
printf '%s\n' '{"id":"a","prompt":"x","max_tokens":4}' '{"id":"a","prompt":"y","max_tokens":4}' >"$T/dup.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL_B" --no-progress --suite "$T/dup.jsonl" -o "$T/bad.out"
contains "$T/err" "dup.jsonl:2: id \"a\" repeats line 1"
# options that make no sense together, refused before any server is asked
expect_rc 2 $TTAUDIT bench --url "$URL_B" $GEN --batch 4 --requests 9 -o "$T/u.jsonl"
contains "$T/err" "--requests does not apply to --batch"
expect_rc 2 $TTAUDIT bench --url "$URL_B" $GEN --concurrency 2.5 -o "$T/u.jsonl"
contains "$T/err" "level 2.5 is not valid for closed arrivals"
expect_rc 2 $TTAUDIT bench --url "$URL_B" $GEN --correctness --warm -o "$T/u.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL_B" $GEN --concurrency 2 --batch 2 -o "$T/u.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL_B" --no-progress -o "$T/u.jsonl"
contains "$T/err" "--suite FILE, or --input-tokens"
[ ! -e "$T/u.jsonl" ] || fail "a record was written on bad usage"
echo "ok"
