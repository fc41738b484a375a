#!/bin/sh
# The progress line of long work: drawn on stderr (bytes and merges done,
# rate) once the work has taken a second, when stderr is a terminal
# (TTAUDIT_PROGRESS=1 stands in for one here), and never otherwise: stdout
# and a stderr that is a file or pipe see nothing of it. The input is fed
# in two halves a pause apart, so the work lasts past the first second.
. tests/e2e/lib.sh
TTSIM="$PWD/$BUILD/ttsim"
[ -x "$TTSIM" ] || fail "ttsim is not built"
"$TTSIM" run --steps 20000 --seed 1 --arm bare --audit "$T/big.jsonl" >/dev/null
n=$(wc -l <"$T/big.jsonl")
half=$((n / 2))
feed() { head -n "$half" "$T/big.jsonl"; sleep 1.3; tail -n +"$((half + 1))" "$T/big.jsonl"; }
esc=$(printf '\033')

# cmd NAME ARGS...: run ttaudit ARGS on the fed input twice, with and without the line
check() {
	name=$1; shift
	feed | TTAUDIT_PROGRESS=1 "$TTAUDIT" "$@" >"$T/out1" 2>"$T/err1" || true
	grep -q "${esc}\[K$name: " "$T/err1" || { od -c "$T/err1" | head; fail "$name: no progress line on a terminal"; }
	grep -q "merges" "$T/err1" || fail "$name: the progress line does not count merges"
	if grep -q "$esc" "$T/out1"; then fail "$name: progress on stdout"; fi
	feed | "$TTAUDIT" "$@" >"$T/out2" 2>"$T/err2" || true
	if grep -q "$esc" "$T/err2"; then fail "$name: progress drawn on a stderr that is a file"; fi
	feed | TTAUDIT_PROGRESS=0 "$TTAUDIT" "$@" >"$T/out3" 2>"$T/err3" || true
	if grep -q "$esc" "$T/err3"; then fail "$name: progress drawn with TTAUDIT_PROGRESS=0"; fi
	cmp -s "$T/out2" "$T/out3" || fail "$name: output differs with the progress line off"
}
check replay replay -
check replay replay --jobs 2 - "$T/big.jsonl"
check validate validate --rule batch -
check report report timeline - -o "$T/t.svg"

# pair: a run record from a real bench, the big audit as the capture
. tests/e2e/ttsim.inc
sim_start p --time-scale 0
"$TTAUDIT" bench --url "$URL" --no-arm-check --input-tokens 16 --output-tokens 4 --prompts 4 \
	--concurrency 2 -o "$T/run.jsonl" >/dev/null 2>&1 || fail "bench for pair's run record"
sim_stop
check pair pair --run "$T/run.jsonl" --capture -
echo "progress: replay, validate, report and pair draw it on a terminal only"
