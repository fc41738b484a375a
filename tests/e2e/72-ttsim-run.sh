#!/bin/sh
# ttsim run: deterministic per seed (summary and audit), the defect with the
# bare arm and a stale host copy, none with stamp, outputs explained by
# substitutions, usage errors.
. tests/e2e/lib.sh
. tests/e2e/ttsim.inc

expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --arm bare --audit "$T/a1.jsonl" --json
cp "$T/out" "$T/r1.json"
expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --arm bare --audit "$T/a2.jsonl" --json
cmp -s "$T/r1.json" "$T/out" || fail "same seed, different summary"
cmp -s "$T/a1.jsonl" "$T/a2.jsonl" || fail "same seed, different audit"
expect_rc 0 "$TTSIM" run --steps 6000 --seed 4 --arm bare --json
cmp -s "$T/r1.json" "$T/out" && fail "another seed, same summary"

# bare with a host copy refreshed every 4th decode: substitutions, each one
# where an output departs from its sequential reference
[ "$(jget "$T/r1.json" .substitutions)" -gt 0 ] || fail "bare: no substitution"
[ "$(jget "$T/r1.json" .diverged)" -gt 0 ] || fail "bare: no output differs"
eq "$(jget "$T/r1.json" .diverged_unexplained)" 0 "outputs differing without a substitution"
eq "$(jget "$T/r1.json" '.diverged + .changed_undiverged')" "$(jget "$T/r1.json" .requests_affected)" "affected requests"
eq "$(jget "$T/r1.json" .rules.bare.substitutions)" "$(jget "$T/r1.json" .substitutions)" "engaged arm = its rule"
[ "$(jget "$T/r1.json" .rules.prefilled.substitutions)" -gt 0 ] || fail "prefilled should let stale matches through"
eq "$(jget "$T/r1.json" .rules.stamp.substitutions)" 0 "stamp what-if"

# stamp: none, and nothing differs
expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --arm stamp --json
eq "$(jget "$T/out" .substitutions)" 0 "stamp substitutions"
eq "$(jget "$T/out" .diverged)" 0 "stamp outputs differing"
[ "$(jget "$T/out" .refused)" -gt 0 ] || fail "stamp refuses stale takes"

# a combination is reported as its own rule too; the text report
expect_rc 0 "$TTSIM" run --steps 3000 --seed 3 --arm batch+lifetime --garbage-rate 0.2 --slots 4
contains "$T/out" "engaged arm batch+lifetime:"
contains "$T/out" "per 1,000 merges"
grep -q '^  batch+lifetime ' "$T/out" || fail "no row for the combination"

# an open loop leaves slots idle: the batch guard fires, prevents some stale
# takes and lets the same-pattern residual through; stamp lets none through
expect_rc 0 "$TTSIM" run --steps 40000 --seed 1 --arrival 0.15 --garbage-rate 0.3 --json
[ "$(jget "$T/out" .rules.batch.prevented)" -gt 0 ] || fail "open loop: batch prevents nothing"
[ "$(jget "$T/out" .rules.batch.substitutions)" -gt 0 ] || fail "open loop: no batch residual"
[ "$(jget "$T/out" .rules.bound.fired)" -gt 0 ] || fail "open loop: no garbage seen by bound"
eq "$(jget "$T/out" .rules.stamp.substitutions)" 0 "open loop: stamp"

# usage
expect_rc 2 "$TTSIM" run --arrival 1.5
expect_rc 2 "$TTSIM" run --arm nope
contains "$T/err" "unknown arm"
expect_rc 2 "$TTSIM" run --slots 0
expect_rc 2 "$TTSIM" run --steps x
expect_rc 2 "$TTSIM" run --prompt 9:3
expect_rc 2 "$TTSIM" run --bogus
expect_rc 2 "$TTSIM" run extra
expect_rc 2 "$TTSIM" run --audit /nonexistent/dir/a.jsonl
contains "$T/err" "/nonexistent/dir/a.jsonl"
expect_rc 2 "$TTSIM"
expect_rc 2 "$TTSIM" frobnicate
expect_rc 0 "$TTSIM" run --help
contains "$T/out" "per 1,000"
