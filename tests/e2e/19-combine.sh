#!/bin/sh
# ttaudit combine: the replay reports of a corpus's halves add up to the
# replay of the whole, byte for byte in JSON (counts, garbage values,
# fingerprints, per-process rows, notes on files), and in text; combining
# again is the same; parts of other rule lists, or not reports, exit 2.
. tests/e2e/lib.sh
"$TTAUDIT" combine --help >/dev/null 2>&1 || fail "ttaudit combine --help failed: the command is part of the build"
TTSIM="$PWD/$BUILD/ttsim"

# a corpus: every fixture, a gzip one, captures of several processes, and ttsim runs under arms
mkdir "$T/c"
cp "$FIX"/audit/*.jsonl "$FIX"/audit/*.jsonl.gz "$T/c/"
if [ -x "$TTSIM" ]; then
	for s in 1 2 3 4 5 6; do
		"$TTSIM" run --steps 1500 --seed $s --arm batch --slots 8 --garbage-rate 0.2 --dp $((1 + s % 2)) \
			--arrival 0.3 --host-sampling 0.1 --audit "$T/c/sim$s.jsonl" >/dev/null
	done
fi
ls "$T"/c/* >"$T/all"
total=$(wc -l <"$T/all")
head -n $((total / 2)) "$T/all" >"$T/h1"
tail -n +$((total / 2 + 1)) "$T/all" >"$T/h2"
R="bare,prefilled,batch,lifetime,stamp,bound,batch+lifetime"
"$TTAUDIT" replay --json --rules "$R" $(cat "$T/all") >"$T/whole.json" 2>/dev/null || fail "replay of the whole"
"$TTAUDIT" replay --json --rules "$R" $(cat "$T/h1") >"$T/a.json" 2>/dev/null || fail "replay of half 1"
"$TTAUDIT" replay --json --rules "$R" $(cat "$T/h2") >"$T/b.json" 2>/dev/null || fail "replay of half 2"
expect_rc 0 "$TTAUDIT" combine --json "$T/a.json" "$T/b.json"
cmp "$T/out" "$T/whole.json" || {
	jq -S . "$T/whole.json" >"$T/w.s"; jq -S . "$T/out" >"$T/o.s"; diff "$T/w.s" "$T/o.s" | head -20 >&2
	fail "combine of the halves is not the replay of the whole"; }
[ "$(jq '.processes | length' "$T/whole.json")" -gt 2 ] || fail "no per-process rows to keep"
[ "$(jq '.rules.bare.substitutions' "$T/whole.json")" -gt 0 ] || fail "no substitution in the corpus"
# the text report too, and combining a combination again
"$TTAUDIT" replay --rules "$R" $(cat "$T/all") >"$T/whole.txt" 2>/dev/null
expect_rc 0 "$TTAUDIT" combine "$T/a.json" "$T/b.json"
cmp "$T/out" "$T/whole.txt" || { diff "$T/whole.txt" "$T/out" >&2; fail "text of combine differs"; }
head -n 3 "$T/h1" >"$T/q1"; tail -n +4 "$T/h1" >"$T/q2"
"$TTAUDIT" replay --json --rules "$R" $(cat "$T/q1") >"$T/q1.json" 2>/dev/null
"$TTAUDIT" replay --json --rules "$R" $(cat "$T/q2") >"$T/q2.json" 2>/dev/null
"$TTAUDIT" combine --json "$T/q1.json" "$T/q2.json" >"$T/a2.json"
"$TTAUDIT" combine --json "$T/a2.json" "$T/b.json" >"$T/again.json"
# (a part lists at most 64 distinct garbage values; a value a part had no room
# for is in its values_dropped, so only their sum is exact across parts)
nog='del(.garbage.values, .garbage.values_dropped)'
sum='[.garbage.values[].count] + [.garbage.values_dropped] | add'
eq "$(jq -c "$nog" "$T/again.json")" "$(jq -c "$nog" "$T/whole.json")" "combine of a combination"
eq "$(jq "$sum" "$T/again.json")" "$(jq "$sum" "$T/whole.json")" "garbage values and dropped, summed"
# the comparison can fail: a part left out
expect_rc 0 "$TTAUDIT" combine --json "$T/a.json"
! cmp -s "$T/out" "$T/whole.json" || fail "half the corpus compares equal to the whole"
# fingerprints intersect: consistent in the whole only where consistent in every part
for rule in $(jq -r '.fingerprint.consistent[]' "$T/whole.json"); do
	for p in a b; do
		eq "$(jq --arg r "$rule" '.rules[$r].fingerprint.mismatched' "$T/$p.json")" 0 "$rule mismatched in part $p"
	done
done

# parts of different rule lists, and files that are not reports
"$TTAUDIT" replay --json --rules bare,batch $(cat "$T/h2") >"$T/other.json" 2>/dev/null
expect_rc 2 "$TTAUDIT" combine "$T/a.json" "$T/other.json"
contains "$T/err" "other.json: 2 rules, the first report has 7: replay every part with the same --rules"
expect_rc 2 "$TTAUDIT" combine "$T/a.json" "$FIX/audit/incident-confirmed.jsonl"
contains "$T/err" "incident-confirmed.jsonl"
expect_rc 2 "$TTAUDIT" combine "$T/missing.json"
expect_rc 2 "$TTAUDIT" combine
# a part with a file without audit events exits 2, as its replay did
: >"$T/empty.jsonl"
"$TTAUDIT" replay --json "$T/empty.jsonl" >"$T/e.json" 2>/dev/null || true
"$TTAUDIT" replay --json "$FIX/audit/incident-confirmed.jsonl" >"$T/i.json"
expect_rc 2 "$TTAUDIT" combine --json "$T/i.json" "$T/e.json"
eq "$(jq -r '.input.no_audit[0]' "$T/out")" "$T/empty.jsonl" "the no-audit file is named"
