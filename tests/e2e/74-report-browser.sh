#!/bin/sh
# ttaudit report's figures opened in a browser: every SVG is rendered by
# headless Chromium to a PNG, and the pixels of each mark's colour are
# counted, so a figure that parses as XML but draws nothing (or hides the
# substitutions among thousands of merges) fails. Needs Debian's chromium,
# which make check installs (tools/deps.sh check); skipped without it.
. tests/e2e/lib.sh
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[ -n "$BROWSER" ] || skip "no chromium: the figures are checked as XML only (60-70s tests)"
[ -x "$BUILD/ttsim" ] || skip "$BUILD/ttsim is not built"
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
echo "ok"
