#!/bin/sh
# ttaudit bench --correctness accuracy: graded tasks at every level, the
# treatment against a synchronous control (the last --url, async scheduling
# off), per level the accuracy with its interval and Fisher's test. ttsim
# `--arm bare` loses copy tasks to the stale merge where rows are reused
# (16 in flight over 4 slots); its control with --no-async-scheduling does
# not; `--arm stamp` against the same control is not told apart at any
# level. Ids past the vocabulary fail the stage. The bundled set runs too.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

# the user's own suite: 48 copy tasks of many lengths, each with its exact answer
# (12 tokens: the code four times over and nothing else, so the answer holds
# it once)
"$PYTHON" - "$T/copy.jsonl" <<'PY'
import json, random, sys
r = random.Random(5)
al = "BCDFGHJKLMNPQRSTVWXZ23456789"
with open(sys.argv[1], "w") as f:
    for i in range(48):
        code = " ".join("".join(r.choice(al) for _ in range(4)) + str(r.randint(10, 99)) for _ in range(3))
        pre = " ".join(["note"] * r.randint(0, 31))
        f.write(json.dumps({"id": "copy-%d" % i, "prompt": pre + ("." if pre else "") + " Code: " + code + "\nCopy:",
                            "max_tokens": 12, "expect": " ".join([code] * 4)}) + "\n")
PY
SIM="--seed 3 --time-scale 0 --slots 4 --no-audit"
RUN="--no-progress --correctness accuracy --suite $T/copy.jsonl --concurrency 1,4,16 --requests 800 --seed 1 --vocab-size 32768"

sim_start treat $SIM --arm bare
TURL=$URL TPID=$SIMPID
sim_start control $SIM --arm bare --no-async-scheduling
CURL=$URL
expect_rc 1 $TTAUDIT bench --url "$TURL" --url "$CURL" $RUN --json -o "$T/bare.jsonl"
cp "$T/out" "$T/bare.json"
eq "$(jget "$T/bare.json" .accuracy.verdict)" FAIL "bare: verdict"
eq "$(jget "$T/bare.json" .accuracy.control)" 1 "the last server is the control"
# the control gets every copy task right at every level
eq "$(jq -c '[.cells[] | select(.accuracy.control) | .accuracy | [.right, .graded]]' "$T/bare.json")" \
	'[[800,800],[800,800],[800,800]]' "control accuracy"
# above max_num_seqs the treatment is less accurate, told apart by Fisher's test
jq -e '.cells[] | select(.arm_index == 0 and .concurrency == 16) | .accuracy |
	.right < .graded and .fisher_p < 0.05 and .verdict == "FAIL" and .rate.method == "clopper-pearson"' \
	"$T/bare.json" >/dev/null || fail "bare at 16: not caught"
# each request graded right or wrong, the expect string named when wrong
jq -s -e '[.[] | select(.kind == "request" and .phase == "accuracy") | .verdict] | unique == ["right", "wrong"]' \
	"$T/bare.jsonl" >/dev/null || fail "bare: request verdicts"
jq -s -e '[.[] | select(.kind == "request" and .verdict == "wrong") | (.missing | length) > 0] | all' \
	"$T/bare.jsonl" >/dev/null || fail "bare: a wrong answer without its missing answer"
expect_rc 1 $TTAUDIT bench --url "$TURL" --url "$CURL" $RUN -o "$T/bare2.jsonl"
contains "$T/out" "ACCURACY: FAIL against the synchronous control (the last server)"
contains "$T/out" "server 1 (control) level 16: 800 right of 800 graded"
# the page: the accuracy curve, a point with its interval per server and level
expect_rc 0 $TTAUDIT report html "$T/bare.jsonl" -o "$T/bare.html" --json
eq "$(jget "$T/out" .mode)" bench "report html: a bench record file"
eq "$(jget "$T/out" .curve_points)" 6 "curve points"
eq "$(grep -c 'class="acc-point"' "$T/bare.html")" 6 "curve marks"
eq "$(grep -c 'class="acc-interval"' "$T/bare.html")" 6 "curve intervals"
contains "$T/bare.html" "server 1 (control) level 16: 800 of 800 right"
kill "$TPID"
sim_start stamp $SIM --arm stamp
# the same workload with the merge guarded: no level is told apart
expect_rc 0 $TTAUDIT bench --url "$URL" --url "$CURL" $RUN --json -o "$T/stamp.jsonl"
eq "$(jget "$T/out" .accuracy.verdict)" PASS "stamp: verdict"
eq "$(jq -c '[.cells[] | select(.arm_index == 0) | .accuracy | [.right, .verdict]]' "$T/out")" \
	'[[800,"PASS"],[800,"PASS"],[800,"PASS"]]' "stamp: every level"
sim_stop
# token ids past the vocabulary: counted, and the stage fails on them
sim_start oov $SIM --arm stamp --fault oov
expect_rc 1 $TTAUDIT bench --url "$URL" --url "$CURL" --no-progress --correctness accuracy --suite "$T/copy.jsonl" \
	--concurrency 4 --requests 48 --seed 1 --vocab-size 32768 --json -o "$T/oov.jsonl"
jq -e '.cells[0].accuracy | .anomalies.ids_past_vocab == 48 and .verdict == "FAIL"' "$T/out" >/dev/null ||
	fail "oov: ids past the vocabulary not counted"
jq -e '.cells[1].accuracy.anomalies.ids_past_vocab == 0' "$T/out" >/dev/null || fail "oov: the control counted"
sim_stop
# the bundled set: copy tasks and sums, one server (no control: no test)
sim_start bundled $SIM --arm stamp
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --correctness accuracy --concurrency 2 --seed 1 --chat \
	--json -o "$T/bundled.jsonl"
jq -e '.accuracy.control == null and .cells[0].accuracy.graded == 48 and .cells[0].accuracy.fisher_p == null' \
	"$T/out" >/dev/null || fail "bundled: one server"
eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "accuracy")] | length' "$T/bundled.jsonl")" 48 "bundled tasks"
# ttsim repeats codes and cannot add: the copy tasks right, the sums wrong
eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "accuracy" and .verdict == "right")] | length' \
	"$T/bundled.jsonl")" 24 "bundled: the copy half right"
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --correctness accuracy --input-tokens 8 --prompts 2 -o "$T/x.jsonl"
sim_stop
