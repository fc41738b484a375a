#!/bin/sh
# tests/fuzz/run.sh SECONDS - builds the libFuzzer target tests/fuzz/fuzz_line.c
# into build/fuzz/, seeds build/fuzz/corpus with every line of the fixture
# audits (one file per line) and runs it for SECONDS (default 45) with inputs up
# to 4096 bytes. One summary line; exit 1 on a crash (the input is kept in
# build/fuzz/ and its first lines printed), 2 when the target does not build.
set -u
secs=${1:-45}
B=build/fuzz
CC=${FUZZ_CC:-clang}
mkdir -p "$B/corpus"

if ! $CC -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 \
	-D_GNU_SOURCE -std=c11 -Wall -Wextra -Wstrict-prototypes -Wvla -Wwrite-strings \
	-Ianalyzer tests/fuzz/fuzz_line.c analyzer/jdoc.c analyzer/event.c analyzer/status.c \
	-o "$B/fuzz_line"; then
	echo "fuzz: could not build $B/fuzz_line with $CC (clang with libFuzzer is needed)" >&2
	exit 2
fi

for f in fixtures/audit/*.jsonl; do
	base=$(basename "$f" .jsonl)
	awk -v p="$B/corpus/seed-$base-" '{ f = p NR; printf "%s", $0 > f; close(f) }' "$f"
done
# Cases the fixtures lack: escaped member names, duplicates, long literals, nesting.
printf '%s' '{"\u0065v":"merge","ev":1}' >"$B/corpus/seed-escaped-ev"
printf '%s' '{"ev":"merge","step":1.000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001e1}' >"$B/corpus/seed-long-number"
printf '%s' '{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"ev":"x"}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}' >"$B/corpus/seed-nested"
printf '%s' '{"ev":"merge","step":1,"host_pos":[9223372036854775807,-1],"dev_pos":[-9223372036854775808,1,2],"slot_req":["\ud83d\ude00",null],"buf_req":["a\u0000",null],"slot_gen":[1,2],"buf_slot_gen":[1,3],"taken":[true,false],"prefilled":[1,7,-1]}' >"$B/corpus/seed-merge-all"

log="$B/fuzz_line.log"
"$B/fuzz_line" -max_len=4096 -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
	-print_final_stats=1 -artifact_prefix="$B/" "$B/corpus" >"$log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
inputs=$(ls "$B/corpus" | wc -l)
if [ "$rc" -ne 0 ]; then
	echo "fuzz: FAILED after ${runs:-?} runs (exit $rc); log $log" >&2
	grep -E 'fuzz_line:|ERROR:|SUMMARY:|Test unit written' "$log" | head -n 8 >&2
	exit 1
fi
echo "fuzz: fuzz_line ran ${runs:-?} inputs in ${secs}s, coverage ${cov:-?} edges, corpus $inputs files, no failure"
