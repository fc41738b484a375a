#!/bin/sh
# ttaudit report's figures and pages opened in a browser: every SVG and
# every HTML page is rendered by headless Chromium to a PNG, and the pixels
# of each mark's colour are counted, so a figure that parses but draws
# nothing (or hides the substitutions among thousands of merges) fails. The
# pages must be self-contained and log nothing to the console: Chromium runs
# with --enable-logging=stderr --v=0, which writes every console message
# (and every uncaught error) as a CONSOLE line; a page with a broken script
# shows that this check can fail. With SCREENSHOT_DIR set, the pages'
# screenshots are copied there (docs/report-*.png are made so). Needs
# Debian's chromium, which make check installs (scripts/deps.sh check).
. tests/e2e/lib.sh
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[ -n "$BROWSER" ] || skip "no chromium: the figures are checked as XML only (60-70s tests)"
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built"
. tests/e2e/ttsim.inc

# render SVG PNG: the figure at its own size
render() {
	size=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$1" | head -n 1)
	[ -n "$size" ] || fail "$1: no width and height on <svg>"
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
		--user-data-dir="$T/profile" --window-size="$size" --screenshot="$2" "file://$1" \
		>"$T/browser.log" 2>&1 || { cat "$T/browser.log" >&2; fail "$BROWSER could not render $1"; }
	[ -s "$2" ] || fail "$1: no screenshot"
}
# colours COUNT... of pngcolors.py for PNG and colours
colours() { "$PYTHON" tests/e2e/pngcolors.py "$@" | tr '\n' ' '; }
# page HTML PNG WIDTH HEIGHT: the page at that window size; fails on any
# console message (the log says CONSOLE) and on anything fetched from outside
page() {
	! grep -Eq '<script|src=|href=|url\(|@import' "$1" || fail "$1 is not self-contained"
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
		--disable-background-networking --enable-logging=stderr --v=0 --user-data-dir="$T/profile" \
		--window-size="$3,$4" --screenshot="$2" "file://$1" >"$T/browser.log" 2>&1 ||
		{ cat "$T/browser.log" >&2; fail "$BROWSER could not render $1"; }
	[ -s "$2" ] || fail "$1: no screenshot"
	if grep -q 'CONSOLE' "$T/browser.log"; then
		grep 'CONSOLE' "$T/browser.log" >&2
		fail "$1: console messages"
	fi
	if [ -n "${SCREENSHOT_DIR:-}" ]; then cp "$2" "$SCREENSHOT_DIR/"; fi
}

# the console check can fail: a page whose script throws
printf '<html><body><p>x</p><script>console.error("boom"); undefinedFn();</script></body></html>\n' >"$T/broken.html"
timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run --enable-logging=stderr --v=0 \
	--user-data-dir="$T/profile" --window-size=300,200 --screenshot="$T/broken.png" "file://$T/broken.html" \
	>"$T/broken.log" 2>&1 || true
grep -q 'CONSOLE.*Uncaught ReferenceError' "$T/broken.log" || { cat "$T/broken.log" >&2; fail "a console error went unseen"; }

# timeline of the incident: 2 taken (green), 1 substitution (red), active cells (grey)
"$TTAUDIT" report timeline "$FIX/audit/incident-confirmed.jsonl" -o "$T/incident.svg" >/dev/null
render "$T/incident.svg" "$T/incident.png"
set -- $(colours "$T/incident.png" 2ca02c d62728 e8e8e8)
[ "$1" -gt 200 ] && [ "$2" -gt 200 ] && [ "$3" -gt 200 ] ||
	fail "incident timeline: taken/substitution/active pixels $1/$2/$3"

# 3,000 merges in 870 pixels: the 32 substitutions must still show
"$TTAUDIT" report timeline "$FIX/audit/corpus-seed7.jsonl.gz" -o "$T/corpus.svg" >/dev/null
render "$T/corpus.svg" "$T/corpus.png"
set -- $(colours "$T/corpus.png" d62728 orangish)
# each visible mark is at least 3 x 22 pixels; the legend swatch is 144
[ "$1" -gt $((144 + 20 * 3 * 20)) ] || fail "corpus timeline: substitutions hidden ($1 red pixels)"
[ "$2" -gt 2000 ] || fail "corpus timeline: guard rejects not drawn ($2 orange pixels)"

# latency CDF and makespan: two servers without arm names are two series
sim_start a --seed 1 --time-scale 0.01 --slots 8 --no-audit
URL_A=$URL
sim_start b --seed 2 --time-scale 0.02 --slots 8 --no-audit
expect_rc 0 "$TTAUDIT" bench --url "$URL_A" --url "$URL" --no-arm-check --input-tokens 32 --output-tokens 8 \
	--prompts 8 --concurrency 8 --requests 24 --repeats 2 --no-progress -o "$T/run.jsonl"
expect_rc 0 "$TTAUDIT" report latency "$T/run.jsonl" -o "$T/lat.svg" --json
eq "$(jget "$T/out" '[.series[].name] | join(",")')" "server 0,server 1" "latency series"
expect_rc 0 "$TTAUDIT" report makespan "$T/run.jsonl" -o "$T/mk.svg"
for fig in lat mk; do
	render "$T/$fig.svg" "$T/$fig.png"
	set -- $(colours "$T/$fig.png" 1f77b4 d62728)
	[ "$1" -gt 60 ] && [ "$2" -gt 60 ] || fail "$fig: series colours $1/$2 (one series not drawn)"
done
# the pages. Colours: verdict boxes pass b7e4b7, fail f4b6b6, open ffd59e
# (INCONCLUSIVE, WITHHELD, NOT SHOWN), plain cfd8e3; timeline taken 2ca02c,
# substitution d62728, prevented 1f77b4, forgone orange; cost points 17becf,
# negative control 6a3d9a, noise band fff2b3, interval 8c564b
(cd "$FIX/.." && "$TTAUDIT" report html fixtures/audit/incident-confirmed.jsonl --rule batch -o "$T/report-incident.html" >/dev/null)
page "$T/report-incident.html" "$T/report-incident.png" 1050 960
set -- $(colours "$T/report-incident.png" b7e4b7 ffd59e cfd8e3 2ca02c 1f77b4 d62728)
# validate PASS and the rate INCONCLUSIVE (0 of 2 merges tells nothing); the
# incident's stale take prevented (one 24 x 22 cell, its bin, its swatch); no substitution
[ "$1" -gt 5000 ] && [ "$2" -gt 5000 ] && [ "$3" -gt 5000 ] || fail "incident page: boxes pass/open/plain $1/$2/$3"
[ "$4" -gt 700 ] && [ "$5" -gt 500 ] || fail "incident page: taken/prevented pixels $4/$5"
[ "$6" -lt 400 ] || fail "incident page: red where batch lets nothing through ($6)"

(cd "$FIX/.." && "$TTAUDIT" report html fixtures/audit/corpus-seed7.jsonl.gz --rule batch -o "$T/report-corpus.html" >/dev/null)
page "$T/report-corpus.html" "$T/report-corpus.png" 1050 1620
set -- $(colours "$T/report-corpus.png" f4b6b6 d62728 1f77b4 orangish)
# batch lets 32 of 156 through: FAIL boxes, 32 marked substitutions (cells 3
# pixels wide at fractional places, 2 of them pure red, 22 high; a marker per
# merge; the density strip), prevented, forgone. Hidden, the red would be the
# legend swatch and the strip's bins alone, under 500 pixels
[ "$1" -gt 10000 ] || fail "corpus page: no FAIL box ($1)"
[ "$2" -gt $((32 * 2 * 22 + 500)) ] || fail "corpus page: substitutions hidden ($2 red pixels)"
# (124 prevented cells of 0.3 pixels blend away; their density bins show)
[ "$3" -gt 500 ] && [ "$4" -gt 5000 ] || fail "corpus page: prevented/forgone $3/$4"

# the bundled A/B example (README.md): three rounds, a sensitivity arm, cost published
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim: the A/B page is not rendered"
( cd "$T" && "$TTAUDIT" ab --control bare --treatment stamp --sensitivity slow --spec "$FIX/ab/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --vendor-neutral --no-docker --lock "$T/lock" \
	--serve "$TTSIM serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale \$(awk \"BEGIN{print 0.04*\${TTSIM_SCALE_X:-1}}\") --seed 1" \
	-o ab-out ) >"$T/ab.md" 2>"$T/ab.err" || { cat "$T/ab.md" "$T/ab.err" >&2; fail "the A/B example failed"; }
cp "$T/ab-out/ab-report.html" "$T/report-ab.html"
page "$T/report-ab.html" "$T/report-ab.png" 1050 1820
set -- $(colours "$T/report-ab.png" b7e4b7 1f77b4 17becf 6a3d9a fff2b3 8c564b)
# guard PASS; stamp replayed on the control prevents what bare took stale;
# 4 figures x 3 rounds of points, each against the band, with its interval
[ "$1" -gt 5000 ] || fail "A/B page: no PASS box ($1)"
[ "$2" -gt 2000 ] || fail "A/B page: nothing prevented on the counterfactual timeline ($2)"
[ "$3" -gt $((12 * 80)) ] && [ "$4" -gt $((12 * 30)) ] || fail "A/B page: round points $3/$4"
[ "$5" -gt 20000 ] || fail "A/B page: no noise band ($5)"
[ "$6" -gt 200 ] || fail "A/B page: no interval ($6)"
echo "ok"
