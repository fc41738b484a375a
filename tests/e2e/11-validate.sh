#!/bin/sh
# ttaudit validate: the pre-deployment gate, each way it can fail and pass.
. tests/e2e/lib.sh
A="$FIX/audit"

# batch lets the coinciding residual through: FAIL, naming file:line, step, slot
expect_rc 1 "$TTAUDIT" validate --rule batch "$A/residual-coinciding.jsonl"
contains "$T/out" "rule batch over 1 file: FAIL"
contains "$T/out" "residual-coinciding.jsonl:2: step 202 slot 0 (evidence stamp)"
contains "$T/out" "cost: forgone 0"
# the complete fix and the lifetime pairing stop it
expect_rc 0 "$TTAUDIT" validate --rule stamp "$A/residual-coinciding.jsonl"
contains "$T/out" "rule stamp over 1 file: PASS"
expect_rc 0 "$TTAUDIT" validate --rule batch+lifetime "$A/residual-coinciding.jsonl" "$A/incident-confirmed.jsonl"
# the batch guard covers the confirmed incident
expect_rc 0 "$TTAUDIT" validate --rule batch "$A/incident-confirmed.jsonl"
# a rule the corpus cannot evaluate never passes: stamp on an audit without stamps
expect_rc 1 "$TTAUDIT" validate --rule stamp "$A/incident-confirmed.jsonl"
contains "$T/out" "not evaluable: the rule was skipped on every merge event"
expect_rc 1 "$TTAUDIT" validate --rule batch "$A/legacy-positions-only.jsonl" "$A/slot-reuse.jsonl"
# empty evidence: an empty file (no audit event at all: the wrong file, exit
# 2, and the gate fails in the report), and a file with no merge events
: >"$T/empty.jsonl"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/empty.jsonl"
contains "$T/out" "empty.jsonl: not evaluable: no merge events"
contains "$T/err" "empty.jsonl: no audit event: the file is empty"
echo '{"ev":"decode","step":3}' >"$T/nomerge.jsonl"
expect_rc 1 "$TTAUDIT" validate --rule bare "$T/nomerge.jsonl"
# every line malformed: nothing to judge, and no audit event: the wrong file, exit 2
echo '{"ev":"merge","step":1}' >"$T/junk.jsonl"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/junk.jsonl"
contains "$T/out" "no readable merge events (1 malformed lines)"
contains "$T/err" "junk.jsonl: no audit event: 1 lines, 1 of them malformed"
# a line that is neither JSON nor an audit line is `other`: no audit event, exit 2
echo 'garbage' >"$T/junk.log"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/junk.log"
contains "$T/err" "junk.log: no audit event: 1 lines, 1 of them neither JSON nor a log line"
# an unreadable file fails the gate
# a file that cannot be read is bad input (2), never a verdict (1): CI must tell a typo from an unsafe guard
expect_rc 2 "$TTAUDIT" validate --rule batch "$A/incident-confirmed.jsonl" "$T/missing.jsonl"
contains "$T/err" "missing.jsonl: cannot open"
lacks "$T/out" "PASS"
# cost cap: lifetime forgoes tokens on the drift fixture's first merge? no: on the seeded corpus
"$PYTHON" scripts/gencorpus.py --seed 11 --arm stamp --merges 400 --out "$T/c.jsonl"
expect_rc 0 "$TTAUDIT" validate --json --rule stamp "$T/c.jsonl"
eq "$(jq -r .verdict "$T/out")" PASS "stamp on a full-truth corpus"
expect_rc 1 "$TTAUDIT" validate --json --rule lifetime --max-forgone-pct 1 "$T/c.jsonl"
eq "$(jq -r '.per_file[0].verdict' "$T/out")" too-costly "forgone cap"
expect_rc 1 "$TTAUDIT" validate --json --rule bare "$T/c.jsonl"
eq "$(jq -r '.per_file[0].verdict' "$T/out")" substitution "bare on the corpus"
[ "$(jq '.per_file[0].substitution_sites | length' "$T/out")" -gt 0 ] || fail "no sites listed"
# usage
expect_rc 2 "$TTAUDIT" validate "$A/slot-reuse.jsonl"
contains "$T/err" "--rule R is required"
expect_rc 2 "$TTAUDIT" validate --rule batch,stamp "$A/slot-reuse.jsonl"
echo ok
