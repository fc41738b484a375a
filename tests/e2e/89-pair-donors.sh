#!/bin/sh
# ttaudit pair: a canary leak or a diverged token joined to the merge that
# handed the request another request's token, with the donor named; a leak
# no merge explains, and a divergence without a foreign token, said as such;
# the share of the wrong-token rate the merge explains, with its interval.
# ttsim's audits are the ground truth: the substitutions it made (the
# requests whose finish event counts them) and its defect events.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SIM="--seed 3 --time-scale 0 --slots 4"
RUN="--no-progress --correctness canary --workload churn --concurrency 16 --requests 400 --seed 1"
strip() { sed -E 's/^(chat)?cmpl-//; s/-[0-9a-f]{8}$//'; }
canary_run() { jq -c '[.runs[] | select(.phase == "canary")][0]' "$1"; }

# the ground truth per victim: the first token another request's state put
# there, from a merge (a take from another request's row) or the defect,
# among the tokens the client received (a cancel cuts the rest off)
cat >"$T/first.py" <<'PY'
import json, re, sys
strip = lambda r: re.sub(r"-[0-9a-f]{8}$", "", re.sub(r"^(chat)?cmpl-", "", r))
got = {}
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e.get("kind") == "request" and e.get("request_id"):
        got[e["request_id"]] = e["counted_tokens"]
prompt, first = {}, {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("ev") == "prefill":
        prompt[e["req"]] = e["prompt_tokens"]
    elif e.get("ev") == "merge" and e.get("buf_req"):
        for s, t in enumerate(e["taken"]):
            v, d = e["slot_req"][s], e["buf_req"][s]
            if t and v and d and v != d:
                k = e["dev_pos"][s] - prompt[v]
                c = first.get(v, (1 << 60, ""))
                # a take at the position a defect wrote replaces its token
                if k < c[0] or (k == c[0] and c[1] == "defect"):
                    first[v] = (k, "merge")
    elif e.get("ev") == "defect":
        v = e["req"]
        if e["index"] < first.get(v, (1 << 60, ""))[0]:
            first[v] = (e["index"], "defect")
for v, (k, how) in sorted(first.items()):
    if "-canary-" in v and k < got.get(strip(v), 0):
        print(strip(v), how)
PY
# 1. the stale merge alone: every leak explained, by the donor the canary named
sim_start bare $SIM --arm bare --audit "$T/bare.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/bare.jsonl"
sim_stop
expect_rc 1 $TTAUDIT pair --run "$T/bare.jsonl" --capture "$T/bare.audit.jsonl"
contains "$T/out" "explained by a substitution from cmpl-0000000000000001-canary-"
contains "$T/out" "wrong tokens: "
expect_rc 1 $TTAUDIT pair --run "$T/bare.jsonl" --capture "$T/bare.audit.jsonl" --json
canary_run "$T/out" >"$T/bare.run"
# (requests the client cancelled before their stale token came do not count)
"$PYTHON" "$T/first.py" "$T/bare.audit.jsonl" "$T/bare.jsonl" >"$T/b.first"
k=$(grep -c ' merge$' "$T/b.first") || true
[ "$k" -gt 0 ] || fail "bare: no substitution to explain"
eq "$(jget "$T/bare.run" .correctness.wrong_tokens.requests)" "$k" "bare: wrong-token requests"
eq "$(jget "$T/bare.run" .correctness.wrong_tokens.explained)" "$k" "bare: explained"
eq "$(jget "$T/bare.run" .correctness.leak_unexplained)" 0 "bare: unexplained leaks"
jq -e '[.failures[] | select(.verdict == "leaked") | .match == "explained" and .donor_agrees] | all' "$T/bare.run" >/dev/null ||
	fail "bare: a leak not explained by the canary's donor"
# the known rate (requests that received a stale token, of the 400) lies in
# the interval pair gives for the rate the merge explains
jq -e --argjson k "$k" '.correctness.wrong_tokens.explained_rate | ($k / 400) as $p |
	.n == 400 and .lo <= $p and $p <= .hi and .method == "clopper-pearson"' "$T/bare.run" >/dev/null ||
	fail "bare: the known rate $k/400 outside the explained rate's interval"

# 2. the stale merge and an unrelated defect together: the merge explains its
# share, the other leaks are said not to be the merge's
# (paced, so the server is still generating when a cancel comes: an abort
# it never sees reuses nothing)
sim_start mixed $SIM --arm bare --fault abort-reuse --time-scale 0.05 --audit "$T/mixed.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/mixed.jsonl"
sim_stop
expect_rc 1 $TTAUDIT pair --run "$T/mixed.jsonl" --capture "$T/mixed.audit.jsonl"
contains "$T/out" "a leak the audit does not explain"
contains "$T/out" "not the merge: "
expect_rc 1 $TTAUDIT pair --run "$T/mixed.jsonl" --capture "$T/mixed.audit.jsonl" --json
canary_run "$T/out" >"$T/mixed.run"
"$PYTHON" "$T/first.py" "$T/mixed.audit.jsonl" "$T/mixed.jsonl" >"$T/m.first"
ks=$(grep -c ' merge$' "$T/m.first") || true
kd=$(grep -c ' defect$' "$T/m.first") || true
[ "$ks" -gt 0 ] && [ "$kd" -gt 0 ] || fail "mixed: want both kinds (merge $ks, abort-reuse $kd)"
eq "$(jget "$T/mixed.run" .correctness.wrong_tokens.explained)" "$ks" "mixed: explained by the merge"
eq "$(jget "$T/mixed.run" .correctness.leak_unexplained)" "$kd" "mixed: leaks the audit does not explain"
eq "$(jget "$T/mixed.run" .correctness.wrong_tokens.requests)" "$((ks + kd))" "mixed: wrong-token requests"
# the share of the wrong-token rate the merge explains: its interval holds the known share
jq -e --argjson ks "$ks" --argjson kd "$kd" '.correctness.wrong_tokens.explained_share |
	($ks / ($ks + $kd)) as $p | .k == $ks and .lo <= $p and $p <= .hi' "$T/mixed.run" >/dev/null ||
	fail "mixed: explained share"
awk '$2 == "defect" { print $1 }' "$T/m.first" >"$T/m.only"
jq -r '.failures[] | select(.match == "leak-unexplained") | .id' "$T/mixed.run" | strip | sort -u |
	cmp -s - "$T/m.only" || fail "mixed: the unexplained leaks are not the abort-reuse victims"

# the page: every leak in the donor -> victim matrix, every churn request on
# the timeline with the transitions it caused
expect_rc 0 $TTAUDIT report html "$T/mixed.jsonl" -o "$T/mixed.html" --json
n_leaked=$(jq -s '[.[] | select(.kind == "request" and .verdict == "leaked")] | length' "$T/mixed.jsonl")
eq "$(jget "$T/out" .leaks)" "$n_leaked" "report html: leaks drawn"
eq "$(grep -c '<circle class="leak donor-aborted"' "$T/mixed.html")" \
	"$(jq -s '[.[] | select(.kind == "request" and .canary.leak.donor_aborted)] | length' "$T/mixed.jsonl")" "aborted donors"
eq "$(jget "$T/out" .timeline_requests)" 400 "report html: churn requests drawn"
eq "$(grep -c '<rect class="req sync' "$T/mixed.html")" \
	"$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .churn.sync)] | length' "$T/mixed.jsonl")" "sync marks"
grep -q 'cancelled by the client' "$T/mixed.html" || fail "report html: no abort marked"

# 3. divergence without a foreign token: a re-decoded token under the
# reference check, nothing of another request in it
sim_start redecode $SIM --arm stamp --fault redecode --no-merge --audit "$T/re.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$FIX/bench/slot-reuse.jsonl" --correctness \
	--workload churn --max-num-seqs 4 --seed 1 -o "$T/re.jsonl"
sim_stop
expect_rc 1 $TTAUDIT pair --run "$T/re.jsonl" --capture "$T/re.audit.jsonl" --json
jq -e '[.runs[] | select(.phase == "correctness") | .correctness | .failing == .no_foreign_token and
	.wrong_tokens.explained == 0] | all' "$T/out" >/dev/null || fail "redecode: not every divergence without a foreign token"
jq -e '[.runs[] | select(.phase == "correctness") | .correctness.failing] | add > 0' "$T/out" >/dev/null ||
	fail "redecode: nothing diverged"
expect_rc 1 $TTAUDIT pair --run "$T/re.jsonl" --capture "$T/re.audit.jsonl"
contains "$T/out" "divergence without a foreign token (likely numerics)"
