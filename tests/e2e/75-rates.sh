#!/bin/sh
# Rates with their uncertainty where pair and ab say them: the seeds' 0 of
# 192 is INCONCLUSIVE against 0.48% with the number of requests that would
# do, every interval pair prints is SciPy's Clopper-Pearson interval of its
# counts, and the values of ab's and bench's options (now on the option table).
. tests/e2e/lib.sh
"$PYTHON" -c 'import scipy.stats' 2>/dev/null || fail "SciPy (python3-scipy) is needed; scripts/deps.sh installs it"

# a correctness run of n requests, all identical to the reference, one clean
# merge each (the buffer is the request's own), as bench and a capture write them
clean_run() {
	n=$1 out=$2 cap=$3
	"$PYTHON" - "$n" "$out" "$cap" <<'PY'
import json, sys
n, out, cap = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(out, "w") as f, open(cap, "w") as g:
    f.write(json.dumps({"kind": "run", "run_id": "z", "phase": "correctness",
                        "identity": {"arm": "stamp", "arm_state": "confirmed"},
                        "figures": {"makespan_s": 1.0}, "correctness": {"requests": n}}) + "\n")
    for i in range(n):
        f.write(json.dumps({"kind": "request", "run_id": "z", "index": i, "prompt_index": i,
                            "id": "cmpl-%d" % i, "request_id": "z-%d" % i, "ok": True,
                            "prompt_tokens": 10, "verdict": "identical"}) + "\n")
        g.write(json.dumps({"ev": "merge", "step": i + 1, "host_pos": [12, -1], "dev_pos": [13, -1],
                            "slot_req": ["z-%d-0123abcd" % i, None], "buf_req": ["z-%d-0123abcd" % i, None],
                            "slot_gen": [i, 0], "buf_slot_gen": [i, 0], "taken": [True, False]}) + "\n")
PY
}

clean_run 192 "$T/r192.jsonl" "$T/a192.jsonl"
# without a baseline: clean, and 0 of 192 said as what it rules out
expect_rc 0 "$TTAUDIT" pair --run "$T/r192.jsonl" --capture "$T/a192.jsonl"
contains "$T/out" "correctness: 0 failing of 192 requests: rules out only rates above 1.90% at 95%"
contains "$T/out" "merges with a substitution: 0 of 192: rules out only rates above 1.90% at 95%; under 19.0 per 1,000 merges"
contains "$T/out" "verdict: PASS (clean)"
# against the seeds' 0.48% per request: INCONCLUSIVE, never PASS, exit 1
expect_rc 1 "$TTAUDIT" pair --baseline 0.0048 --run "$T/r192.jsonl" --capture "$T/a192.jsonl"
contains "$T/out" "verdict: INCONCLUSIVE (0 failing of 192 rules out only rates above 1.90% at 95%, not the baseline 0.48% per request; 767 requests would (ttaudit plan --baseline 0.0048 --target 0))"
expect_rc 1 "$TTAUDIT" pair --json --baseline 0.0048 --run "$T/r192.jsonl" --capture "$T/a192.jsonl"
eq "$(jget "$T/out" '.runs[0].verdict')" INCONCLUSIVE "JSON verdict"
eq "$(jget "$T/out" '.runs[0].correctness.requests_to_rule_out_baseline')" \
	"$("$TTAUDIT" plan --baseline 0.0048 --target 0 --json | jq .n_to_bound)" "requests to rule out 0.48%, as plan says"
# as many as plan says: PASS
clean_run 767 "$T/r767.jsonl" "$T/a767.jsonl"
expect_rc 0 "$TTAUDIT" pair --baseline 0.0048 --run "$T/r767.jsonl" --capture "$T/a767.jsonl"
contains "$T/out" "verdict: PASS (clean; 0 failing of 767 rules out the baseline 0.48%)"
# --confidence moves every interval and the number needed
expect_rc 1 "$TTAUDIT" pair --confidence 0.99 --baseline 0.0048 --run "$T/r767.jsonl" --capture "$T/a767.jsonl"
contains "$T/out" "rules out only rates above 0.688% at 99%, not the baseline 0.48% per request; 1102 requests would (ttaudit plan --baseline 0.0048 --target 0 --confidence 0.99)"

# the intervals pair prints are SciPy's, for failing requests and merges of a
# run with some of each (every 7th request failing, every 5th merge stale)
"$PYTHON" - "$T/rf.jsonl" "$T/af.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f, open(sys.argv[2], "w") as g:
    f.write(json.dumps({"kind": "run", "run_id": "f", "phase": "correctness", "identity": {"arm": "bare"},
                        "correctness": {}}) + "\n")
    for i in range(300):
        f.write(json.dumps({"kind": "request", "run_id": "f", "index": i, "prompt_index": i, "id": "q%d" % i,
                            "ok": True, "prompt_tokens": 10,
                            "verdict": "diverged" if i % 7 == 0 else "identical", "diverged_at": 3}) + "\n")
        stale = i % 5 == 0
        g.write(json.dumps({"ev": "merge", "step": i + 1, "host_pos": [12], "dev_pos": [13],
                            "slot_req": ["q%d" % i], "buf_req": ["old" if stale else "q%d" % i],
                            "taken": [True]}) + "\n")
PY
expect_rc 1 "$TTAUDIT" pair --json --run "$T/rf.jsonl" --capture "$T/af.jsonl"
"$PYTHON" - "$T/out" <<'PY'
import json, sys
from scipy.stats import beta
r = json.load(open(sys.argv[1]))["runs"][0]
bad = 0
for name, o in (("failing", r["correctness"]["failing_rate"]), ("substitution", r["substitution_rate"])):
    k, n = o["k"], o["n"]
    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    for what, got, want in (("lo", o["lo"], lo), ("hi", o["hi"], hi), ("rate", o["rate"], k / n)):
        if abs(got - want) > 1e-7 * abs(want) + 1e-13:
            print(f"{name} {k}/{n} {what}: ttaudit {got!r}, scipy {want!r}")
            bad += 1
assert (r["correctness"]["failing_rate"]["k"], r["correctness"]["failing_rate"]["n"]) == (43, 300), r["correctness"]
assert (r["substitution_rate"]["k"], r["substitution_rate"]["n"]) == (60, 300), r["substitution_rate"]
sys.exit(1 if bad else 0)
PY

# ab and bench on the option table (their -h / --help / help CMD contract is
# in 12-exit-codes.sh): defaults and values of their own
expect_rc 0 "$TTAUDIT" bench --help
cp "$T/out" "$T/help.long"
expect_rc 2 "$TTAUDIT" bench --baseline 2
expect_rc 2 "$TTAUDIT" ab --baseline 2
contains "$T/help.long" "--correctness"
expect_rc 0 "$TTAUDIT" ab --help
contains "$T/out" "rounds, arms interleaved (default 3)"
expect_rc 2 "$TTAUDIT" ab --repeats 0 --control a --treatment b --spec x --serve y
expect_rc 2 "$TTAUDIT" ab --stop-signal KILL --control a --treatment b --spec x --serve y
contains "$T/err" "never KILL"
expect_rc 2 "$TTAUDIT" bench --arm bare --url http://127.0.0.1:1 -o "$T/x.jsonl"
contains "$T/err" "comes after the --url it belongs to"
expect_rc 2 "$TTAUDIT" bench --url http://127.0.0.1:1 --concurrency 1 --batch 2 --suite x -o "$T/x.jsonl"
contains "$T/err" "one of --concurrency, --batch, --rate"
# a start-up line still in flight is waited for (a little), not taken as absent:
# the engine's banner reaches the log 0.6 s after the server answers. Margin:
# bench re-reads the log for 3 s after its first arm check (driver.c,
# DRIVER_ARM_SETTLE_*), which comes after the subshell started; the banner is
# late only if the subshell is kept off both cores for 2.4 s, which CFS does
# not do to a runnable process under any load of this machine
[ -x "$BUILD/ttsim" ] || fail "no $BUILD/ttsim"
. tests/e2e/ttsim.inc
sim_start s --seed 1 --time-scale 0.01 --no-audit
i=0
until grep -q 'guard none engaged' "$T/s.err"; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "no banner from ttsim in 30 s"; sleep 0.05
done
grep -v 'guard none engaged' "$T/s.err" >"$T/late.log"
( sleep 0.6; grep 'guard none engaged' "$T/s.err" >>"$T/late.log" ) &
E2E_PIDS="$E2E_PIDS $!"
expect_rc 0 "$TTAUDIT" bench --url "$URL" --arm bare --log "$T/late.log" --spec "$FIX/bench/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --requests 4 --no-progress -o "$T/late.jsonl"
contains "$T/err" "arm 'bare' at $URL: CONFIRMED"
# a banner that never comes still fails the gate, after the wait
grep -v 'guard none engaged' "$T/s.err" >"$T/never.log"
expect_rc 1 "$TTAUDIT" bench --url "$URL" --arm bare --log "$T/never.log" --spec "$FIX/bench/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --requests 4 --no-progress -o "$T/never.jsonl"
contains "$T/out" "GATE FAILED: arm 'bare'"
sim_stop

"$TTAUDIT" help --man >"$T/man"
contains "$T/man" ".SS \"ttaudit report html\""
echo "ok"
