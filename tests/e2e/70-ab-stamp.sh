#!/bin/sh
# ttaudit ab, bare vs stamp against ttsim: the control substitutes and fails,
# every failure is explained by a substitution at the first divergent token;
# the treatment makes none. Then ttaudit pair and ttaudit report on the same
# boots, and the SVG figures parsed as XML with their marks counted.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "no $BUILD/ttsim"
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim"

TTSIM="$PWD/$BUILD/ttsim"
SERVE="$TTSIM serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --seed 1"
ab() {
	"$TTAUDIT" ab --spec "$FIX/ab/arms.json" --suite "$FIX/ab/suite.jsonl" --concurrency 16 --requests 96 \
		--lock "$T/lock" --vendor-neutral --no-docker --stop-timeout 10 --serve "$SERVE" "$@"
}

expect_rc 0 ab --control bare --treatment stamp -o "$T/ab"
contains "$T/out" "# A/B: bare (control) vs stamp (treatment)"
contains "$T/out" "Guard effect: **PASS**"
contains "$T/err" "arm 'stamp' at http://127.0.0.1:"
J="$T/ab/ab-report.json"
[ -s "$J" ] || fail "no JSON twin"
ctl_subst=$(jget "$J" .roles.control.substitutions)
ctl_fail=$(jget "$J" .roles.control.failing)
[ "$ctl_subst" -gt 0 ] || fail "control made no substitution"
[ "$ctl_fail" -gt 0 ] || fail "control had no failing request"
if [ "$(jget "$J" .roles.control.explained)" != "$ctl_fail" ]; then
	"$TTAUDIT" pair --run "$T/ab/boot-00-control.run.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl" >&2 || true
	fail "control: $(jget "$J" .roles.control.explained) of $ctl_fail failures explained"
fi
eq "$(jget "$J" .roles.control.unexplained)" 0 "control failures unexplained"
eq "$(jget "$J" .roles.treatment.substitutions)" 0 "treatment substitutions"
eq "$(jget "$J" .roles.treatment.failing)" 0 "treatment failing"
[ "$(jget "$J" .roles.treatment.prevented)" -gt 0 ] || fail "treatment prevented nothing"
[ "$(jget "$J" .roles.treatment.fired)" -gt 0 ] || fail "treatment guard never fired"
eq "$(jget "$J" .guard_verdict)" PASS "guard verdict"
# no sensitivity arm: the cost is not published
eq "$(jget "$J" .cost_verdict)" WITHHELD "cost verdict without a sensitivity arm"
eq "$(jget "$J" .cost)" null "cost figures without a sensitivity arm"
# the defaults: 3 rounds of control, treatment, negative control
eq "$(jget "$J" '.boots | length')" 9 "boots"
eq "$(jget "$J" .rounds)" 3 "rounds"
# every rate with its interval; 0 of N said as what it rules out
jq -e '.roles.treatment.substitution_rate | .k == 0 and .lo == 0 and .hi > 0 and .hi < 0.05 and .method == "clopper-pearson"' \
	"$J" >/dev/null || fail "treatment substitution rate: $(jq -c .roles.treatment.substitution_rate "$J")"
jq -e '.roles.control.failing_rate | .k > 0 and .lo < .rate and .rate < .hi' "$J" >/dev/null ||
	fail "control failing rate: $(jq -c .roles.control.failing_rate "$J")"
jq -e '.treatment_against_control.substitution_fisher_p < 0.05' "$J" >/dev/null || fail "Fisher p of substitutions"
contains "$T/out" "| treatment | 0 of 288 | rules out only rates above 1.27% at 95% |"
contains "$T/out" "Fisher's exact test p = "

# ttaudit pair on the control's boot: every failure explained, exit 1 (not clean)
expect_rc 1 "$TTAUDIT" pair --run "$T/ab/boot-00-control.run.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl"
contains "$T/out" "explained by a substitution from "
lacks "$T/out" "unexplained: no substitution"
expect_rc 1 "$TTAUDIT" pair --json --run "$T/ab/boot-00-control.run.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl"
jq -e '[.runs[].failures[] | select(.match != "explained")] | length == 0' "$T/out" >/dev/null ||
	fail "pair --json: a failure not explained"
jq -e '[.runs[].failures[]] | length > 0' "$T/out" >/dev/null || fail "pair --json: no failure listed"
jq -e '[.runs[] | select(.merges_by_id > 0)] | length > 0' "$T/out" >/dev/null || fail "no merge joined by request id"
# the treatment's boot is clean
expect_rc 0 "$TTAUDIT" pair --run "$T/ab/boot-01-treatment.run.jsonl" --capture "$T/ab/boot-01-treatment.cap.jsonl"
contains "$T/out" "arm verdict: confirmed"
# pairing with the wrong capture explains nothing: the treatment's audit has no substitution
expect_rc 1 "$TTAUDIT" pair --json --run "$T/ab/boot-00-control.run.jsonl" --capture "$T/ab/boot-01-treatment.cap.jsonl"
jq -e '[.runs[].failures[] | select(.match == "explained")] | length == 0' "$T/out" >/dev/null ||
	fail "failures explained by another boot's audit"

# the figures: well-formed XML, with the marks they claim
expect_rc 0 "$TTAUDIT" report timeline "$T/ab/boot-01-treatment.cap.jsonl" -o "$T/treat.svg" --json
eq "$(jget "$T/out" .substitutions)" 0 "treatment timeline substitutions"
[ "$(jget "$T/out" .rejects)" -gt 0 ] || fail "treatment timeline shows no guard reject"
# the counterfactual: stamp replayed on the control's own audit, whose merges
# record the bare decisions it ran with; what bare took stale, stamp prevents
expect_rc 0 "$TTAUDIT" report timeline "$T/ab/boot-00-control.cap.jsonl" -o "$T/ctl.svg" --json
rec=$(jget "$T/out" .substitutions)
[ "$rec" -gt 0 ] || fail "control timeline: no recorded substitution"
eq "$(jget "$T/out" .decisions)" recorded "decisions without --rule"
expect_rc 0 "$TTAUDIT" report timeline "$T/ab/boot-00-control.cap.jsonl" --rule stamp -o "$T/cf.svg" --json
eq "$(jget "$T/out" .substitutions)" 0 "stamp replayed on the control: residual substitutions"
eq "$(jget "$T/out" .prevented)" "$rec" "stamp replayed on the control: prevented = what bare took stale"
eq "$(jget "$T/out" .decisions)" stamp "decisions with --rule stamp"
# the A/B's page, and the same page drawn again from its directory
[ -s "$T/ab/ab-report.html" ] || fail "no ab-report.html"
contains "$T/ab/ab-report.html" "<div class=\"label\">guard effect</div><div class=\"value\">PASS</div>"
contains "$T/ab/ab-report.html" "The counterfactual timeline: stamp replayed on the control"
expect_rc 0 "$TTAUDIT" report html "$T/ab" -o "$T/again.html" --json
eq "$(jget "$T/out" .mode)" ab "page mode"
eq "$(jget "$T/out" .files)" 3 "control boots on the timeline"
eq "$(jget "$T/out" .timeline.substitutions)" 0 "residual substitutions of stamp on the control's audit"
[ "$(jget "$T/out" .timeline.prevented)" -gt 0 ] || fail "the page's timeline prevents nothing"
[ "$(jget "$T/out" .timeline.boundaries)" -ge 6 ] || fail "boots and runs not marked: $(jget "$T/out" .timeline.boundaries)"
cmp -s "$T/again.html" "$T/ab/ab-report.html" || fail "report html of the directory differs from the A/B's own page"
expect_rc 0 "$TTAUDIT" report latency "$T/ab/boot-00-control.run.jsonl" "$T/ab/boot-01-treatment.run.jsonl" -o "$T/lat.svg"
"$PYTHON" - "$T/ab/ab-timeline.svg" "$T/treat.svg" "$T/ab/ab-latency.svg" "$T/ab/ab-makespan.svg" "$T/lat.svg" \
	"$T/ab/ab-timeline-treatment.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
NS = '{http://www.w3.org/2000/svg}'
def marks(path, cls):
    root = ET.parse(path).getroot()
    assert root.tag == NS + 'svg', path
    return [e for e in root.iter(NS + 'rect') if e.get('class') == cls]
ctl, treat, lat, mk, lat2, ab_treat = sys.argv[1:]
for cls in ('subst', 'prevented', 'forgone', 'refused', 'taken', 'unverified'):
    assert len(marks(treat, cls)) == len(marks(ab_treat, cls)), 'treatment timelines differ: ' + cls
assert len(marks(ctl, 'subst')) > 0, 'control timeline: no substitution mark'
assert len(marks(ctl, 'taken')) > 0, 'control timeline: no taken mark'
assert all(e.get('data-step') and e.get('data-slot') for e in marks(ctl, 'subst'))
assert len(marks(treat, 'subst')) == 0, 'treatment timeline: substitution mark'
# the stamp guard's rejects are the stale takes it stopped: prevented, none forgone
assert len(marks(treat, 'prevented')) > 0, 'treatment timeline: no prevented mark'
assert len(marks(treat, 'forgone')) == 0, 'treatment timeline: a forgone mark under stamp'
for p in (lat, lat2):
    lines = [e for e in ET.parse(p).getroot().iter(NS + 'polyline') if e.get('class') == 'cdf']
    assert len(lines) >= 2, p + ': want a CDF per role'
pts = [e for e in ET.parse(mk).getroot().iter(NS + 'circle') if e.get('class') == 'point']
assert len(pts) == 9, 'makespan: want one point per boot, got %d' % len(pts)
PY
# usage errors
expect_rc 2 "$TTAUDIT" ab --control bare --treatment bare --spec "$FIX/ab/arms.json" --serve true
expect_rc 2 "$TTAUDIT" ab --control bare --treatment nosuch --spec "$FIX/ab/arms.json" --serve true -o "$T/x" --no-preflight
contains "$T/err" "arm 'nosuch'"
expect_rc 2 "$TTAUDIT" pair --run "$T/nosuch.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl"
contains "$T/err" "nosuch.jsonl"
expect_rc 2 "$TTAUDIT" pair --run "$T/ab/boot-00-control.cap.jsonl" --capture "$T/ab/boot-00-control.cap.jsonl"
contains "$T/err" "no run record"
