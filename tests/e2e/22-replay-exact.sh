#!/bin/sh
# ttaudit replay counts what docs/audit-format.md says, on the inputs an
# independent replay of the spec found it miscounting: rates of the merges a
# rule evaluated, the file's first contradiction, garbage values with their
# whole count, a config of max_model_len 0, a gzip member with a bad check
# value, --max-pos up to INT64_MAX, --strict on a file with no audit event;
# and what the spec settles: null fields, audit records without "ev", a
# non-string "src", a config of another pid, a shape fallback with `taken`.
. tests/e2e/lib.sh

# 1. a shape fallback is no trial of a rate
printf '%s\n' '{"ev":"merge","step":1,"host_pos":[5,6],"dev_pos":[5]}' >"$T/fallback.jsonl"
expect_rc 0 "$TTAUDIT" replay --rules bare --json "$T/fallback.jsonl"
eq "$(jq -c '.rules.bare | [.evaluable, .merges, .shape_fallback]' "$T/out")" '[false,1,1]' "the fallback counted"
eq "$(jq -c .not_evaluable "$T/out")" '["bare"]' "bare not evaluable"
eq "$(jq -c '.rules.bare.substitution_rate | [.k, .n]' "$T/out")" '[0,0]' "no trial"
expect_rc 1 "$TTAUDIT" validate --rule bare --json "$T/fallback.jsonl"
eq "$(jq -c '[.substitution_rate.n, .fired_rate.n]' "$T/out")" '[0,0]' "validate: no trial"

# 2. the total's first contradiction is the file's first, whichever process holds it
printf '%s\n' '{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[5],"taken":[true]}' \
	'{"src":"audit","pid":77,"event":{"ev":"merge","step":8,"host_pos":[5],"dev_pos":[5],"taken":[false]}}' \
	'{"ev":"merge","step":14,"host_pos":[5],"dev_pos":[5],"taken":[false]}' >"$T/first.jsonl"
expect_rc 0 "$TTAUDIT" replay --rules bare "$T/first.jsonl"
contains "$T/out" "bare                 contradicted on 2 of 3 events (first at step 8)"
expect_rc 0 "$TTAUDIT" replay --rules bare --json "$T/first.jsonl"
eq "$(jq .rules.bare.fingerprint.first_mismatch_step "$T/out")" 8 "first_mismatch_step"

# 3. a garbage value is shown with its whole count or not at all
{
	echo '{"src":"audit","pid":1,"event":{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[-7]}}'
	i=0
	while [ $i -lt 64 ]; do
		echo "{\"src\":\"audit\",\"pid\":2,\"event\":{\"ev\":\"merge\",\"step\":$((i + 2)),\"host_pos\":[5],\"dev_pos\":[$((-100 - i))]}}"
		i=$((i + 1))
	done
	for s in 100 101 102; do
		echo "{\"src\":\"audit\",\"pid\":2,\"event\":{\"ev\":\"merge\",\"step\":$s,\"host_pos\":[5],\"dev_pos\":[-7]}}"
	done
} >"$T/values.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/values.jsonl"
eq "$(jq '.garbage.count' "$T/out")" 68 "garbage positions"
eq "$(jq -c '[.garbage.values[] | select(.value == -7) | .count] | map(select(. != 4))' "$T/out")" '[]' "-7 whole or absent"
eq "$(jq '([.garbage.values[].count] | add) + .garbage.values_dropped' "$T/out")" 68 "shown and dropped add up"

# 4. max_model_len 0 says the length is not known: no bound, also after a config of 100
printf '%s\n' '{"ev":"config","max_model_len":100}' '{"ev":"config","max_model_len":0}' \
	'{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[200]}' >"$T/zero.jsonl"
expect_rc 0 "$TTAUDIT" replay --rules bare,bound --json "$T/zero.jsonl"
eq "$(jq -c '[.rules.bound.skipped, .rules.bound.evaluable, .garbage.count]' "$T/out")" '[1,false,0]' "bound after a config of 0"
# a config without max_model_len, or with null, keeps the bound in force
printf '%s\n' '{"ev":"config","max_model_len":100}' '{"ev":"config","slots":8,"max_model_len":null}' \
	'{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[200]}' >"$T/keep.jsonl"
expect_rc 0 "$TTAUDIT" replay --rules bare,bound --json "$T/keep.jsonl"
eq "$(jq -c '[.rules.bound.skipped, .garbage.count]' "$T/out")" '[0,1]' "bound kept"
# a config of another pid does not bound these merges, and gives pid 77 no row
printf '%s\n' '{"src":"audit","pid":77,"event":{"ev":"config","max_model_len":100}}' \
	'{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[200]}' >"$T/other-pid.jsonl"
expect_rc 0 "$TTAUDIT" replay --rules bare,bound --json "$T/other-pid.jsonl"
eq "$(jq -c '[.rules.bound.skipped, (.processes | length)]' "$T/out")" '[1,0]' "another pid's config"

# 5. a gzip member with a bad check value: the lines decoded whole are read, then it is said
printf '%s\n' '{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[5]}' | gzip -c >"$T/crc.gz"
"$PYTHON" - "$T/crc.gz" "$T/big.gz" <<'EOF'
import gzip, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-8] ^= 1                                  # a byte of the CRC-32
open(sys.argv[1], "wb").write(b)
lines = b"".join(b'{"ev":"merge","step":%d,"host_pos":[5,6,7],"dev_pos":[5,6,8]}\n' % i
                 for i in range(20000))
b = bytearray(gzip.compress(lines))          # one member, larger than the read buffer
b[-8] ^= 1
open(sys.argv[2], "wb").write(b)
EOF
expect_rc 0 "$TTAUDIT" replay --allow-truncated --json "$T/crc.gz"
contains "$T/err" "crc.gz: truncated gzip after 1 lines (incorrect data check)"
lacks "$T/err" "the file is empty"
eq "$(jq -c '[.rules.bare.merges, .input.no_audit, [.input.truncated[].lines]]' "$T/out")" '[1,[],[1]]' "one line read"
expect_rc 2 "$TTAUDIT" replay --json "$T/crc.gz"
expect_rc 0 "$TTAUDIT" replay --allow-truncated --json "$T/big.gz"
contains "$T/err" "big.gz: truncated gzip after 20000 lines (incorrect data check)"
eq "$(jq .rules.bare.merges "$T/out")" 20000 "every line of the member"
expect_rc 0 "$TTAUDIT" replay --allow-truncated --json - <"$T/big.gz"
eq "$(jq .rules.bare.merges "$T/out")" 20000 "through a pipe too"

# 6. integer options take the whole int64 range they document
expect_rc 0 "$TTAUDIT" replay --max-pos 9223372036854775807 --rules bound --json "$T/zero.jsonl"
eq "$(jq .rules.bound.skipped "$T/out")" 0 "--max-pos INT64_MAX wins"
expect_rc 2 "$TTAUDIT" replay --max-pos 9223372036854775808 "$T/zero.jsonl"
contains "$T/err" "option '--max-pos' wants an integer from 1 to 9223372036854775807, not '9223372036854775808'"
expect_rc 1 "$TTAUDIT" validate --rule bound --max-pos 9223372036854775807 "$T/fallback.jsonl"

# 7. --strict is about malformed lines: a file with no audit event is still reported
: >"$T/empty.jsonl"
expect_rc 2 "$TTAUDIT" replay --strict --json "$T/empty.jsonl"
eq "$(jq -c .input.no_audit "$T/out")" "[\"$T/empty.jsonl\"]" "listed in no_audit under --strict"
contains "$T/err" "no audit event: the file is empty"
expect_rc 2 "$TTAUDIT" replay --strict "$T/empty.jsonl"
eq "$(wc -c <"$T/out")" 0 "the wrong file said alone, under --strict too"
contains "$T/err" "no audit event: the file is empty"
# ... and a malformed line still stops it, with no report
printf '%s\n' '{"ev":"merge","step":1}' >"$T/bad.jsonl"
expect_rc 2 "$TTAUDIT" replay --strict --json "$T/bad.jsonl"
eq "$(wc -c <"$T/out")" 0 "no report after a malformed line"

# settled: null is absent for an optional field, malformed for a required one;
# an audit record's event needs a string "ev"; "src" must be a string
printf '%s\n' '{"ev":"merge","step":2,"host_pos":[5],"dev_pos":[5],"buf_step":null,"taken":null,"gen":null,"buf_gen":1,"prefilled":null}' \
	'{"ev":"merge","step":null,"host_pos":[5],"dev_pos":[5]}' \
	'{"src":"audit","pid":1,"event":{"step":1,"host_pos":[5],"dev_pos":[5]}}' \
	'{"src":5,"pid":1}' \
	'{"src":5,"ev":"merge","step":3,"host_pos":[5],"dev_pos":[5]}' >"$T/nulls.jsonl"
for tree in "" --tree; do
	expect_rc 0 "$TTAUDIT" replay $tree --json "$T/nulls.jsonl"
	eq "$(jq -c '[.rules.bare.merges, .malformed, .rules.lifetime.skipped, .rules.stamp.skipped, .rules.prefilled.skipped, .fingerprint.verdict]' "$T/out")" \
		'[2,3,2,2,2,"NO_TAKEN"]' "nulls $tree"
	contains "$T/err" "nulls.jsonl:2: step is not an integer (null)"
	contains "$T/err" "nulls.jsonl:3: ev is not a string (missing)"
	contains "$T/err" "nulls.jsonl:4: src is not a string (integer)"
done
# a shape fallback carrying taken is no evidence for the fingerprint
printf '%s\n' '{"ev":"merge","step":1,"host_pos":[5,6],"dev_pos":[5],"taken":[true,false]}' >"$T/fallback-taken.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/fallback-taken.jsonl"
eq "$(jq -c '[.fingerprint.verdict, .fingerprint.events_with_taken, .rules.bare.fingerprint.evaluated]' "$T/out")" \
	'["NO_TAKEN",0,0]' "fallback with taken"
echo ok
