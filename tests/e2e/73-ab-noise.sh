#!/bin/sh
# ttaudit ab cost verdicts against ttsim. With --noise and a negative control
# booted on another noise seed, the floor (A vs A) is wider than the effect
# of a sensitivity arm 10% slower: the cost comparison is WITHHELD. Without
# noise and with a sensitivity arm three times slower it is published, and
# every delta inside the floor reads "flat, not a win".
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "no $BUILD/ttsim"
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim"

TTSIM="$PWD/$BUILD/ttsim"
# every step scaled by the arm's TTSIM_SCALE_X (the sensitivity arms set it)
SCALE='$(awk "BEGIN{print 0.04*${TTSIM_SCALE_X:-1}}")'
ab() {
	"$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" \
		--suite "$FIX/ab/suite.jsonl" --concurrency 16 --lock "$T/lock" --vendor-neutral \
		--no-docker "$@"
}

NOISY="$TTSIM serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale $SCALE --noise 4 --seed \$([ \"\$TTAUDIT_AB_ROLE\" = negative-control ] && echo 3 || echo 1)"
expect_rc 0 ab --sensitivity slightly-slow --serve "$NOISY" -o "$T/noisy" --json
J="$T/out"
[ "$(jget "$J" .cost_verdict)" = WITHHELD ] ||
	fail "cost verdict under noise: $(jq -c '{cost_verdict, noise_floor, sensitivity_delta, separation}' "$J")"
eq "$(jget "$J" .cost)" null "cost figures published under noise"
jq -e '.separation < 0.05' "$J" >/dev/null || fail "separation not under the floor: $(jget "$J" .separation)"
contains "$T/noisy/ab-report.md" "**WITHHELD**: the sensitivity arm moves makespan by"
lacks "$T/noisy/ab-report.md" "| makespan |"
# the guard effect is still reported
eq "$(jget "$J" .guard_verdict)" PASS "guard verdict under noise"

# Without --noise the spread left is the machine's: on a loaded 2-core
# machine it put every cost interval across its floor at a time scale of
# 0.04 (all four WITHHELD, so the verdict WITHHELD). At 0.12 the simulated
# steps are three times longer than the jitter around them (floors of 7%
# instead of 20-26% with a busy loop on each core). The treatment is given a
# known cost, every step 1.5 times as long: a treatment as fast as the
# control leaves each interval as likely inside its floor as across it (all
# four across it, WITHHELD, came once in a plain make check beside a build),
# while +50% is outside any floor the machine's jitter makes.
QSCALE='$(awk "BEGIN{print 0.12*${TTSIM_SCALE_X:-1}*(\"$TTAUDIT_AB_ROLE\" == \"treatment\" ? 1.5 : 1)}")'
QUIET="$TTSIM serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale $QSCALE --seed 1"
expect_rc 0 ab --sensitivity slow --serve "$QUIET" -o "$T/quiet" --json
J="$T/out"
eq "$(jget "$J" .cost_verdict)" published "cost verdict without noise"
jq -e '.separation >= 0.05' "$J" >/dev/null || fail "separation under the floor: $(jget "$J" .separation)"
eq "$(jget "$J" '.cost | length')" 4 "cost figures"
eq "$(jq -c '[.cost[] | select(.figure == "makespan" or .figure == "tok_s") | .verdict]' "$J")" \
	'["worse","worse"]' "the treatment's known cost"
# every cost with its interval over the 3 rounds, and the interval's real coverage (75%)
jq -e '[.cost[] | select(.rounds == 3 and .lo <= .delta and .delta <= .hi and .coverage == 0.75)] | length == 4' \
	"$J" >/dev/null || fail "a cost without its interval: $(jq -c .cost "$J")"
# an interval inside the floor is flat, never a win; wholly outside it says which way; across it WITHHELD
jq -e '[.cost[] | select(
	(if .lo >= -.noise_floor and .hi <= .noise_floor then "flat, not a win"
	 elif .lo > .noise_floor or .hi < -.noise_floor then (.verdict | select(. == "better" or . == "worse"))
	 else "WITHHELD" end) != .verdict)] | length == 0' \
	"$J" >/dev/null || fail "a cost verdict that does not follow its interval: $(jq -c .cost "$J")"
eq "$(jget "$J" '.roles.sensitivity.boots')" 3 "sensitivity boots"
contains "$T/quiet/ab-report.md" "| makespan |"
contains "$T/quiet/ab-report.md" "(75%)"

# a forced single round: the cost is WITHHELD whatever the figures, for want of an interval
expect_rc 0 ab --sensitivity slow --serve "$QUIET" -o "$T/one" --json --repeats 1
eq "$(jget "$T/out" .cost_verdict)" WITHHELD "cost verdict of one round"
eq "$(jget "$T/out" .cost)" null "cost figures of one round"
jq -e '.cost_reason | startswith("1 round: one pair of boots has no interval")' "$T/out" >/dev/null ||
	fail "one round: $(jget "$T/out" .cost_reason)"
contains "$T/one/ab-report.md" "**WITHHELD**: 1 round"
