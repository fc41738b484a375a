#!/bin/sh
# ttsim run: deterministic per seed (summary and audit), the defect with the
# bare arm (rows reused on the Qwen3.6 path, where the prefilled-slot mask is
# inert; buffers left behind by host-sampled stretches and width buckets),
# none with stamp, the generic path's own mask, outputs explained by
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

# bare: a request that fills the row a finished one left takes its last
# token where the positions meet; each one where an output departs from its
# sequential reference
[ "$(jget "$T/r1.json" .substitutions)" -gt 0 ] || fail "bare: no substitution"
[ "$(jget "$T/r1.json" .diverged)" -gt 0 ] || fail "bare: no output differs"
eq "$(jget "$T/r1.json" .diverged_unexplained)" 0 "outputs differing without a substitution"
eq "$(jget "$T/r1.json" '.diverged + .changed_undiverged')" "$(jget "$T/r1.json" .requests_affected)" "affected requests"
eq "$(jget "$T/r1.json" .rules.bare.substitutions)" "$(jget "$T/r1.json" .substitutions)" "engaged arm = its rule"
# Qwen3.6's prefill leaves the prefilled set empty: on this audit the mask is bare
eq "$(jget "$T/r1.json" .rules.prefilled.substitutions)" "$(jget "$T/r1.json" .substitutions)" "prefilled what-if on the Qwen3.6 path"
grep '"ev":"merge"' "$T/a1.jsonl" | grep -qv '"prefilled":\[\]' && fail "a prefilled slot on the Qwen3.6 path"
eq "$(jget "$T/r1.json" .rules.stamp.substitutions)" 0 "stamp what-if"
eq "$(jget "$T/r1.json" .rules.lifetime.substitutions)" 0 "lifetime what-if"
# the real buffers: every decode rewrites its trace's, no host copy
eq "$(grep -c '"ev":"trace"' "$T/a1.jsonl")" "$(jget "$T/r1.json" .decodes)" "one trace event per decode"

# the prefilled arm restores the set: slot reuse stopped; a buffer left behind
# by host-sampled decodes outlives the set and still gets through
expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --arm prefilled --json
eq "$(jget "$T/out" .substitutions)" 0 "prefilled arm, no host sampling"
expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --arm prefilled --host-sampling 0.05 --json
[ "$(jget "$T/out" .host_sampled)" -gt 0 ] || fail "no host-sampled decode"
[ "$(jget "$T/out" .substitutions)" -gt 0 ] || fail "prefilled arm: no stale buffer got through"
eq "$(jget "$T/out" .rules.lifetime.substitutions)" 0 "lifetime what-if after host sampling"
# the generic path's keep masks prefilled rows itself
expect_rc 0 "$TTSIM" run --steps 6000 --seed 3 --generator generic --json
eq "$(jget "$T/out" .substitutions)" 0 "generic path, no host sampling"
eq "$(jget "$T/out" .running_rules)" prefilled "generic path's running rules"
[ "$(jget "$T/out" .rules.bare.substitutions)" -gt 0 ] || fail "generic path: the unmasked what-if"

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
# width buckets: each width its own trace, a width met again reads what its
# last decode left; a remap into a narrower buffer falls back to host tokens
expect_rc 0 "$TTSIM" run --steps 40000 --seed 1 --arrival 0.15 --decode-buckets 1,2,4,8 --json
[ "$(jget "$T/out" .fallbacks)" -gt 0 ] || fail "buckets: no fallback"
[ "$(jget "$T/out" .substitutions)" -gt 0 ] || fail "buckets: no stale buffer taken"
eq "$(jget "$T/out" .rules.bare.shape_fallback)" "$(jget "$T/out" .fallbacks)" "fallbacks are shape fallbacks to a reader"

# usage
expect_rc 2 "$TTSIM" run --arrival 1.5
expect_rc 2 "$TTSIM" run --arm nope
contains "$T/err" "unknown arm"
expect_rc 2 "$TTSIM" run --slots 0
expect_rc 2 "$TTSIM" run --steps x
expect_rc 2 "$TTSIM" run --prompt 9:3
expect_rc 2 "$TTSIM" run --bogus
expect_rc 2 "$TTSIM" run extra
expect_rc 2 "$TTSIM" run --decode-buckets 4,2
expect_rc 2 "$TTSIM" run --decode-buckets 16
expect_rc 2 "$TTSIM" run --host-sampling 2
expect_rc 2 "$TTSIM" run --generator gpu
expect_rc 2 "$TTSIM" run --trace-key width
# the host copy is gone: the flag says what replaced it
expect_rc 2 "$TTSIM" run --refresh-every 4
contains "$T/err" "--host-sampling"
expect_rc 2 "$TTSIM" run --audit /nonexistent/dir/a.jsonl
contains "$T/err" "/nonexistent/dir/a.jsonl"
expect_rc 2 "$TTSIM"
expect_rc 2 "$TTSIM" frobnicate
expect_rc 0 "$TTSIM" run --help
contains "$T/out" "per 1,000"
