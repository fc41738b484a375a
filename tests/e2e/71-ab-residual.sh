#!/bin/sh
# ttaudit ab, batch vs batch+lifetime against ttsim on a workload where the
# residual class occurs: a stale buffer whose active-slot pattern matches the
# batch passes the composition guard and substitutes; the lifetime guard
# stops it.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "no $BUILD/ttsim"
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim"

# each boot notes whether the host lock is held while it runs
SERVE="test -d $T/lock && touch $T/held-\$TTAUDIT_AB_ROLE; exec $PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --seed 1"
expect_rc 0 "$TTAUDIT" ab --control batch --treatment batch+lifetime --spec "$FIX/ab/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --requests 96 --lock "$T/lock" --vendor-neutral --no-docker \
	--serve "$SERVE" -o "$T/ab" --json --stop-cmd 'echo stop-cmd ran for $TTAUDIT_AB_PID >&2; kill -TERM -$TTAUDIT_AB_PID'
J="$T/out"
# the stop command stopped each boot, given the process group
[ "$(grep -c 'stop-cmd ran for [0-9]' "$T/err")" -eq 9 ] || fail "the stop command did not run for every boot"
lacks "$T/err" "SIGTERM"
[ "$(jget "$J" .roles.control.substitutions)" -gt 0 ] || fail "batch let no substitution through"
[ "$(jget "$J" .roles.control.failing)" -gt 0 ] || fail "batch: no failing request"
eq "$(jget "$J" .roles.control.unexplained)" 0 "batch: unexplained failures"
eq "$(jget "$J" .roles.treatment.substitutions)" 0 "batch+lifetime substitutions"
eq "$(jget "$J" .roles.treatment.failing)" 0 "batch+lifetime failing"
[ "$(jget "$J" .roles.treatment.prevented)" -gt 0 ] || fail "batch+lifetime prevented nothing"
# the recorded decisions are the declared arms', not contradicted
for role in control treatment negative-control; do
	v=$(jget "$J" ".roles[\"$role\"].arm_verdict")
	case $v in confirmed|not-separated) ;; *) fail "$role: arm verdict $v" ;; esac
done
# the residual class: the control's substitutions are ones batch lets through
expect_rc 1 "$TTAUDIT" validate --rule batch "$T/ab/boot-00-control.cap.jsonl"
expect_rc 0 "$TTAUDIT" validate --rule batch+lifetime "$T/ab/boot-00-control.cap.jsonl"
expect_rc 1 "$TTAUDIT" pair --run "$T/ab/boot-00-control.run.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl"
contains "$T/out" "guard batch: fired"
contains "$T/out" "explained by a substitution from "
# the lock was held through every boot and released at the end
for role in control treatment negative-control; do
	[ -e "$T/held-$role" ] || fail "$role ran without the host lock"
done
[ ! -d "$T/lock" ] || fail "the host lock outlived the A/B"
