#!/bin/sh
# ttaudit replay: fixture counts, the Python reference on seeded corpora, input
# forms (stdin, gzip, capture), malformed input, --explain, usage errors.
. tests/e2e/lib.sh

# 1. every bundled fixture gives its hand-checked counts
for f in "$FIX"/audit/*.jsonl "$FIX"/audit/*.jsonl.gz; do
	exp="${f%.gz}"; exp="${exp%.jsonl}.expected.json"
	"$TTAUDIT" replay --json "$f" | jq -S -f tests/e2e/expect-filter.jq >"$T/got.json"
	jq -S . "$exp" >"$T/want.json"
	diff -u "$T/want.json" "$T/got.json" || fail "$f: counts differ from $(basename "$exp")"
done

# 2. the plain-Python reference agrees on seeded corpora of every shape
for spec in "1 bare 8" "2 batch 8" "3 stamp 4" "4 batch+lifetime 16" "5 prefilled+bound 8"; do
	set -- $spec
	"$PYTHON" scripts/gencorpus.py --seed "$1" --arm "$2" --slots "$3" --merges 600 --out "$T/c.jsonl"
	"$TTAUDIT" replay --json "$T/c.jsonl" | jq -S -f tests/e2e/expect-filter.jq >"$T/got.json"
	"$PYTHON" scripts/replay_ref.py "$T/c.jsonl" | jq -S . >"$T/want.json"
	diff -u "$T/want.json" "$T/got.json" || fail "seed $1 arm $2: ttaudit and the reference differ"
	# the engaged arm is named by the fingerprint, or WITHHELD, never another
	# rule; a combination is a candidate when it is listed
	case "$2" in *+*)
		"$TTAUDIT" replay --json --rules "bare,prefilled,batch,lifetime,stamp,bound,$2" "$T/c.jsonl" |
			jq -S -f tests/e2e/expect-filter.jq >"$T/got.json" ;;
	esac
	v=$(jq -r .fingerprint.verdict "$T/got.json")
	case "$v" in
	CONSISTENT) eq "$(jq -r '.fingerprint.consistent[0]' "$T/got.json")" "$2" "seed $1 fingerprint" ;;
	WITHHELD) jq -e --arg r "$2" '.fingerprint.consistent | index($r)' "$T/got.json" >/dev/null ||
			fail "seed $1: $2 not among the consistent rules" ;;
	*) fail "seed $1: fingerprint verdict $v" ;;
	esac
done
"$PYTHON" scripts/gencorpus.py --seed 9 --no-truth --merges 300 --out "$T/legacy.jsonl"
"$TTAUDIT" replay --json "$T/legacy.jsonl" | jq -S -f tests/e2e/expect-filter.jq >"$T/got.json"
"$PYTHON" scripts/replay_ref.py "$T/legacy.jsonl" | jq -S . >"$T/want.json"
diff -u "$T/want.json" "$T/got.json" || fail "legacy corpus: ttaudit and the reference differ"
# positions only: takes are unverified, never counted as 0 substitutions of a known kind
[ "$(jq .rules.bare.unverified "$T/got.json")" -gt 0 ] || fail "legacy: no unverified takes"
eq "$(jq -c '[.rules | to_entries[] | select(.value.evaluable | not) | .key]' "$T/got.json")" \
	'["bound","lifetime","prefilled","stamp"]' "legacy: rules not evaluable"

# 3. stdin, gzip and a split across files give the same counts as one file
"$TTAUDIT" replay --json "$T/c.jsonl" | jq -S -f tests/e2e/expect-filter.jq >"$T/one.json"
"$TTAUDIT" replay --json - <"$T/c.jsonl" | jq -S -f tests/e2e/expect-filter.jq >"$T/stdin.json"
diff -u "$T/one.json" "$T/stdin.json" || fail "stdin differs"
gzip -c "$T/c.jsonl" >"$T/c.jsonl.gz"
"$TTAUDIT" replay --json "$T/c.jsonl.gz" | jq -S -f tests/e2e/expect-filter.jq >"$T/gz.json"
diff -u "$T/one.json" "$T/gz.json" || fail "gzip differs"

# 4. text report: not-evaluable said in words, garbage read as float32, lost lines
expect_rc 0 "$TTAUDIT" replay "$FIX/audit/legacy-positions-only.jsonl"
contains "$T/out" "stamp                        3   not evaluable on this audit"
contains "$T/out" "1206993122 x1  reads as float32 123521.77 (float32-like)"
contains "$T/out" "no merge event records \`taken\`"
expect_rc 0 "$TTAUDIT" replay "$FIX/audit/capture-mixed.jsonl"
contains "$T/out" "3 lines LOST by the capture"
contains "$T/out" "WITHHELD over 2 events with \`taken\`; consistent with: batch lifetime"
expect_rc 0 "$TTAUDIT" replay "$FIX/audit/slot-reuse.jsonl"
contains "$T/out" "WITHHELD over 1 events with \`taken\`; consistent with: prefilled; never evaluated (not ruled out): stamp"

# 5. malformed input: named by file and line, counted, first 10 then a total
expect_rc 0 "$TTAUDIT" replay --json "$FIX/bad/malformed.jsonl"
# a line that is not a JSON object and holds no audit event after a log
# prefix is `other`, never malformed (`[1,2,3]`, `not json at all`)
eq "$(jq .malformed "$T/out")" 10 "malformed count"
eq "$(jq .input.other_lines "$T/out")" 2 "other lines"
eq "$(jq .rules.bare.merges "$T/out")" 2 "merges among malformed lines"
eq "$(wc -l <"$T/err")" 10 "malformed lines shown"
contains "$T/err" "malformed.jsonl:7: dev_pos[1] is outside int64"
contains "$T/err" "malformed.jsonl:6: host_pos[0] is not an integer (number)"
contains "$T/err" "malformed.jsonl:9: slot_gen has 1 entries, host_pos 2"
expect_rc 2 "$TTAUDIT" replay --strict "$FIX/bad/malformed.jsonl"
contains "$T/err" "malformed.jsonl:3: unterminated array at byte 57"
# a file of malformed lines only, or malformed and non-JSON lines, holds no
# audit event: the wrong file, said alone (no rows of nothing), exit 2
printf '{"bad\n{"ev":\n' >"$T/allbad.jsonl"
expect_rc 2 "$TTAUDIT" replay "$T/allbad.jsonl"
eq "$(wc -c <"$T/out")" 0 "no report for a file without an audit event"
contains "$T/err" "allbad.jsonl:1: unterminated string at byte 6"
contains "$T/err" "allbad.jsonl: no audit event: 2 lines, 2 of them malformed"
# a brace that starts no object ("{{", "{%", "{'": a template or a dict a
# log prints at the start of a line) is a log line too, not malformed
printf "not json\n{{ m['content'] }}\n{'a': 1}\n"'{"ev":\n' >"$T/somebad.jsonl"
expect_rc 2 "$TTAUDIT" replay "$T/somebad.jsonl"
eq "$(wc -c <"$T/out")" 0 "no report for a log line and a malformed line"
contains "$T/err" "somebad.jsonl: no audit event: 4 lines, 1 of them malformed"
expect_rc 2 "$TTAUDIT" replay --json "$T/allbad.jsonl"
eq "$(jq -r '.input.no_audit[0]' "$T/out")" "$T/allbad.jsonl" "the JSON twin lists it"
eq "$(jq .malformed "$T/out")" 2 "and counts its malformed lines"
# beside a real audit: that audit's report, the wrong file named, exit 2
expect_rc 2 "$TTAUDIT" replay "$FIX/audit/slot-reuse.jsonl" "$T/allbad.jsonl"
contains "$T/out" "allbad.jsonl: no audit event"
contains "$T/out" "prefilled"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/allbad.jsonl"
contains "$T/out" "rule batch over 1 file: FAIL"
# a line over the cap is malformed, and the next line is still read
{ printf '{"ev":"merge","step":1,"host_pos":[%s0],"dev_pos":[1]}\n' "$(yes 1, | head -n 100 | tr -d '\n')"
  echo '{"ev":"merge","step":2,"host_pos":[1],"dev_pos":[1]}'; } >"$T/long.jsonl"
expect_rc 0 "$TTAUDIT" replay --json --max-line 128 "$T/long.jsonl"
eq "$(jq .malformed "$T/out")" 1 "over-long line counted"
eq "$(jq .rules.bare.merges "$T/out")" 1 "line after the over-long one read"
contains "$T/err" "long.jsonl:1: line longer than 128 bytes"

# 6. --explain: per slot, why, and the plus_one drift of resident garbage
expect_rc 0 "$TTAUDIT" replay --explain 202 "$FIX/audit/garbage-drift.jsonl"
contains "$T/out" "grew by 111 over the 111 steps since step 91"
contains "$T/out" "it reads 123522.63 (float32-like)"
expect_rc 0 "$TTAUDIT" replay --explain 141 "$FIX/audit/incident-confirmed.jsonl"
contains "$T/out" "slot 7: host_pos 27, dev_pos 28, host_tok 5120, dev_tok 6402, taken yes"
contains "$T/out" "staleness: STALE (evidence request: slot_req 'r48' != buf_req 'r40')"
contains "$T/out" "bare             takes: SUBSTITUTION"
contains "$T/out" "batch            refuses: prevented; batch: buffer's active pattern differs from the batch at slot 1"
expect_rc 0 "$TTAUDIT" replay --json --explain 141 "$FIX/audit/incident-confirmed.jsonl"
eq "$(jq -r '.explain[0].slots[7].rules.bare.verdict' "$T/out")" "takes: SUBSTITUTION" "explain json"
expect_rc 2 "$TTAUDIT" replay --explain 999 "$FIX/audit/incident-confirmed.jsonl"
contains "$T/err" "no merge event at step 999"

# 7. usage errors exit 2 with a message
expect_rc 2 "$TTAUDIT" replay --rules batch,nosuch "$FIX/audit/slot-reuse.jsonl"
contains "$T/err" "'nosuch' is not a rule"
expect_rc 2 "$TTAUDIT" replay
expect_rc 2 "$TTAUDIT" replay "$T/does-not-exist.jsonl"
contains "$T/err" "does-not-exist.jsonl: cannot open: No such file or directory"
expect_rc 2 "$TTAUDIT" replay --max-pos zero "$FIX/audit/slot-reuse.jsonl"
expect_rc 2 "$TTAUDIT" nosuchcommand
expect_rc 0 "$TTAUDIT" replay --help
contains "$T/out" "usage: ttaudit replay"

# 8. --rules with combinations; --max-pos wins over config.max_model_len
expect_rc 0 "$TTAUDIT" replay --json --rules lifetime+batch,stamp "$FIX/audit/residual-coinciding.jsonl"
eq "$(jq -c '.rules | keys' "$T/out")" '["batch+lifetime","stamp"]' "combined rule names"
eq "$(jq '.rules["batch+lifetime"].prevented' "$T/out")" 1 "batch+lifetime prevents"
expect_rc 0 "$TTAUDIT" replay --json --max-pos 128000 "$FIX/audit/residual-coinciding.jsonl"
eq "$(jq .rules.bound.prevented "$T/out")" 1 "--max-pos 128000 makes 128852 garbage"
echo ok
