#!/bin/sh
# tests/fuzz/run.sh SECONDS - builds the libFuzzer targets in tests/fuzz/ into
# build/fuzz/ and runs them with inputs up to 4096 bytes:
#   fuzz_line     one audit line through jdoc_parse/event_decode, differential
#                 against jdoc_check; SECONDS (default 45), corpus seeded with
#                 every line of the fixture audits (one file per line)
#   fuzz_scan     one line through the scanner (event_scan, jdoc_scan_*),
#                 differential against the tree; 2*SECONDS/3, seeded like fuzz_line
#   fuzz_replay   one to three audit files replayed three ways, as replay selects
#                 them: the scanner file after file, the tree (--tree) with other
#                 read and inflate buffer sizes, and --jobs 3; every report and
#                 message compared byte for byte; 2*SECONDS/3, seeded with every
#                 fixture audit (plain and capture) and the corners below
#   fuzz_capture  the capture's line path: line reassembly (feed, peek/take),
#                 classification, records, the ring reader; SECONDS/3, seeded like fuzz_line
#   fuzz_prom     the Prometheus text parser; SECONDS/3
#   fuzz_chunk    a stream chunk by jdoc's scanner and by its tree, differential; SECONDS/3
# One summary line per target; exit 1 on a failure (the input is kept in
# build/fuzz/ and the fuzzer's reason printed), 2 when a target does not build.
set -u
secs=${1:-45}
side=$((secs / 3))
[ "$side" -ge 5 ] || side=5
two=$((2 * secs / 3))
[ "$two" -ge 5 ] || two=5
B=build/fuzz
# jdoc's files: the tree, the validator, the scanner and its block reader
JDOC="base/jdoc_tree.c base/jdoc_check.c base/jdoc_scan.c base/jdoc_simd.c"
CC=${FUZZ_CC:-clang}
FLAGS="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 -D_GNU_SOURCE -std=c11
	-Wall -Wextra -Wstrict-prototypes -Wvla -Wwrite-strings -I."
mkdir -p "$B/corpus" "$B/corpus-capture" "$B/corpus-prom" "$B/corpus-scan" "$B/corpus-replay" "$B/corpus-chunk"

build() {   # build NAME SOURCES... [-lLIB]
	name=$1; shift
	# shellcheck disable=SC2086
	if ! $CC $FLAGS "tests/fuzz/$name.c" "$@" -o "$B/$name"; then
		echo "fuzz: could not build $B/$name with $CC (clang with libFuzzer is needed)" >&2
		exit 2
	fi
}

build fuzz_line $JDOC analyzer/event.c base/status.c
build fuzz_scan $JDOC analyzer/event.c base/status.c
build fuzz_replay $JDOC base/status.c base/jsonw.c base/rate.c base/progress.c base/mono.c analyzer/event.c analyzer/evidence.c \
	analyzer/reader.c analyzer/rule.c analyzer/tally.c replay/replay.c replay/replay_report.c replay/replay_combine.c replay/validate.c base/auditline.c -lz -lpthread
[ -f tests/fuzz/fuzz_capture.c ] && build fuzz_capture base/linebuf.c capture/classify.c base/auditline.c \
	capture/banner.c capture/banner_rules.c capture/envlist.c capture/caprec.c capture/jbuf.c \
	capture/ring.c capture/capfile.c capture/consume.c capture/consume_lines.c capture/consume_records.c capture/consume_end.c base/mono.c base/procstat.c $JDOC base/status.c -lpcre2-8
[ -f tests/fuzz/fuzz_prom.c ] && build fuzz_prom probe/prom.c base/status.c
build fuzz_chunk bench/chunk.c $JDOC base/status.c

for f in fixtures/audit/*.jsonl; do
	base=$(basename "$f" .jsonl)
	awk -v p="$B/corpus/seed-$base-" '{ f = p NR; printf "%s", $0 > f; close(f) }' "$f"
done
# Cases the fixtures lack: escaped member names, duplicates, long literals, nesting.
printf '%s' '{"\u0065v":"merge","ev":1}' >"$B/corpus/seed-escaped-ev"
printf '%s' '{"ev":"merge","step":1.000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001e1}' >"$B/corpus/seed-long-number"
printf '%s' '{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"ev":"x"}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}' >"$B/corpus/seed-nested"
printf '%s' '{"ev":"merge","step":1,"host_pos":[9223372036854775807,-1],"dev_pos":[-9223372036854775808,1,2],"slot_req":["\ud83d\ude00",null],"buf_req":["a\u0000",null],"slot_gen":[1,2],"buf_slot_gen":[1,3],"taken":[true,false],"prefilled":[1,7,-1]}' >"$B/corpus/seed-merge-all"
cp "$B"/corpus/seed-* "$B/corpus-capture/"
cp "$B"/corpus/seed-* "$B/corpus-scan/"
printf '%s' '{"ev":"merge","step":1,"host_pos":[1,-1,0,-9223372036854775808],"dev_pos":[2, 3 ,-0,1e2],"slot_req":["a\u0000b",null,"x","\ud800"],"buf_req":["a\u0000c",null,"y","\udbff"]}' >"$B/corpus-scan/seed-edges"
printf '\003%s' '{"ev":"gate","step":3,"keep":false,"x":[[[1]]],"dp":0}' >"$B/corpus-scan/seed-depth"
# whole files for fuzz_replay, each behind an options byte
i=0
for f in fixtures/audit/*.jsonl fixtures/bad/*.jsonl; do
	i=$((i + 1))
	{ printf "\\$(printf '%03o' $((i * 37 % 256)))"; head -c 3800 "$f"; } >"$B/corpus-replay/seed-$(basename "$f" .jsonl)"
done
# processes whose contradictions interleave, configs of 0 and without a length, a
# gzip member whose CRC is damaged (option byte 0x60: gzip; next byte 2: flip it)
printf '\000%s\n%s\n%s\n' '{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[5],"taken":[true]}' \
	'{"src":"audit","pid":77,"event":{"ev":"merge","step":8,"host_pos":[5],"dev_pos":[-7],"taken":[false]}}' \
	'{"ev":"merge","step":14,"host_pos":[5],"dev_pos":[-7],"taken":[false]}' >"$B/corpus-replay/seed-interleaved"
printf '\002%s\n%s\n%s\n%s\n' '{"ev":"config","max_model_len":100}' '{"ev":"config","max_model_len":0}' \
	'{"ev":"config","slots":8,"max_model_len":null}' \
	'{"ev":"merge","step":1,"host_pos":[5,6],"dev_pos":[200]}' >"$B/corpus-replay/seed-config-zero"
printf '\140\002%s\n%s\n' '{"ev":"merge","step":1,"host_pos":[5],"dev_pos":[5]}' \
	'{"ev":"merge","step":2,"host_pos":[5],"dev_pos":[6]}' >"$B/corpus-replay/seed-gzip-crc"
printf 'INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT {"ev":"merge","step":1,"host_pos":[1],"dev_pos":[2]}\n' >"$B/corpus-capture/seed-log-prefix"
printf '# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 3\nvllm:e2e_request_latency_seconds_bucket{le="+Inf"} 1.5e3\n' >"$B/corpus-prom/seed-metrics"

# every chunk of the field's transcripts, as chat (odd first byte) or completions
i=0
for f in fixtures/sse/*.sse; do
	case $f in *chat*) kind='\001' ;; *) kind='\000' ;; esac
	sed -n 's/^\(data\|error\): \{0,1\}//p' "$f" | grep -v '^\[DONE\]' | while IFS= read -r line; do
		i=$((i + 1))
		{ printf "$kind"; printf '%s' "$line"; } >"$B/corpus-chunk/seed-$(basename "$f" .sse)-$i"
	done
done

failed=0
run() {   # run NAME CORPUS SECONDS
	name=$1 corpus=$2 t=$3
	log="$B/$name.log"
	"$B/$name" -max_len=4096 -max_total_time="$t" -timeout=10 -rss_limit_mb=1024 \
		-print_final_stats=1 -artifact_prefix="$B/$name-" "$corpus" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	inputs=$(ls "$corpus" | wc -l)
	if [ "$rc" -ne 0 ]; then
		echo "fuzz: $name FAILED after ${runs:-?} runs (exit $rc); log $log" >&2
		grep -E 'fuzz_|ERROR:|SUMMARY:|Test unit written' "$log" | head -n 8 >&2
		failed=1
		return
	fi
	echo "fuzz: $name ran ${runs:-?} inputs in ${t}s, coverage ${cov:-?} edges, corpus $inputs files, no failure"
}

run fuzz_line "$B/corpus" "$secs"
run fuzz_scan "$B/corpus-scan" "$two"
run fuzz_replay "$B/corpus-replay" "$two"
[ -x "$B/fuzz_capture" ] && [ -f tests/fuzz/fuzz_capture.c ] && run fuzz_capture "$B/corpus-capture" "$side"
[ -x "$B/fuzz_prom" ] && [ -f tests/fuzz/fuzz_prom.c ] && run fuzz_prom "$B/corpus-prom" "$side"
run fuzz_chunk "$B/corpus-chunk" "$side"
exit "$failed"
