#!/bin/sh
# ttaudit watch --once on every audit fixture gives, summed over processes,
# exactly the counts `ttaudit replay --json` gives on the same file (one
# library, fed line by line); a plain vLLM-format log replays to the counts
# of its capture; a file without audit events says what it looked like.
. tests/e2e/lib.sh
"$TTAUDIT" watch --help >/dev/null 2>&1 || fail "ttaudit watch --help failed: the command is part of the build"
CMP="$PYTHON tests/e2e/expo-vs-replay.py"

n=0
for f in "$FIX"/audit/*.jsonl "$FIX"/audit/*.jsonl.gz "$FIX/bad/malformed.jsonl"; do
	case "$f" in *.gz) gzip -dc "$f" >"$T/in.jsonl" ;; *) cp "$f" "$T/in.jsonl" ;; esac
	rc=0
	"$TTAUDIT" replay --json "$T/in.jsonl" >"$T/rep.json" 2>/dev/null || rc=$?
	[ $rc -le 2 ] || fail "replay $f exited $rc"
	expect_rc 0 "$TTAUDIT" watch --once --host h "$T/in.jsonl"
	cp "$T/out" "$T/expo.txt"
	$CMP "$T/expo.txt" "$T/rep.json" >"$T/diff" || { cat "$T/diff" >&2; fail "$f: watch and replay differ"; }
	n=$((n + 1))
done
[ $n -gt 10 ] || fail "only $n fixtures compared"
# the comparison can fail: one merge more in watch's input
cp "$FIX/audit/incident-confirmed.jsonl" "$T/in.jsonl"
"$TTAUDIT" replay --json "$T/in.jsonl" >"$T/rep.json"
grep '"ev":"merge"' "$T/in.jsonl" | head -1 >>"$T/in.jsonl"
"$TTAUDIT" watch --once "$T/in.jsonl" >"$T/expo.txt"
! $CMP "$T/expo.txt" "$T/rep.json" >/dev/null || fail "the comparison does not see a merge more"

# the exposition itself: the issue's names, labels, build info, a valid format
"$TTAUDIT" watch --once --host h1 -o "$T/prom.txt" "$FIX/audit/capture-two-servers.jsonl"
for m in ttaudit_merges_total ttaudit_taken_total ttaudit_substitutions_total ttaudit_unverified_total \
	ttaudit_prevented_total ttaudit_forgone_total ttaudit_fired_total ttaudit_skipped_total \
	ttaudit_garbage_positions_total ttaudit_lost_lines_total ttaudit_malformed_lines_total \
	ttaudit_last_event_timestamp_seconds ttaudit_arm_consistent ttaudit_source_up ttaudit_build_info; do
	contains "$T/prom.txt" "# TYPE $m "
done
contains "$T/prom.txt" 'ttaudit_merges_total{source="'"$FIX"'/audit/capture-two-servers.jsonl",host="h1",pid="101"} 2'
contains "$T/prom.txt" 'ttaudit_build_info{version="'
# bounded cardinality: only these label names, never a request id
eq "$(grep -v '^#' "$T/prom.txt" | grep -o '[a-z_]*="' | sort -u | tr -d '="\n')" \
	"evidencehostpidreasonrulesourceversion" "label names"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/prom.txt" >"$T/lint" 2>&1 || { cat "$T/lint" >&2; fail "promtool check metrics"; }
fi

# a plain vLLM-format log (process prefixes, loguru and tt-metal lines, the
# audit after a logger prefix) and its capture replay to the same counts
{
	echo '(APIServer pid=4100) INFO 11-29 20:41:00 [api_server.py:1880] vLLM server version 0.11.1, serving model Qwen/Qwen3.6'
	echo '(EngineCore_DP0 pid=4101) 2026-09-08 20:35:14.930 | INFO     | model_config:591 - {"not": "an audit"}'
	i=0
	grep '"ev"' "$FIX/audit/incident-confirmed.jsonl" "$FIX/audit/slot-reuse.jsonl" | cut -d: -f2- | while IFS= read -r l; do
		i=$((i + 1))
		printf '(EngineCore_DP0 pid=4101) INFO 11-29 20:41:%02d [generator.py:1930] MERGE_AUDIT %s\r\n' $((i % 60)) "$l"
		echo '(EngineCore_DP0 pid=4101) 2026-09-08 20:35:15.000 | info     | Device | Opening user mode device driver (tt_cluster.cpp:190)'
	done
} >"$T/server.log"
"$TTAUDIT" follow --once "$T/server.log" >"$T/server.cap.jsonl" 2>/dev/null
expect_rc 0 "$TTAUDIT" replay --json "$T/server.log"
jq -S -f tests/e2e/expect-filter.jq "$T/out" >"$T/log.json"
eq "$(jq .input.other_lines "$T/out")" "$(( $(wc -l <"$T/server.log") - $(grep -c MERGE_AUDIT "$T/server.log") ))" "other lines"
eq "$(jq .malformed "$T/out")" 0 "malformed lines in the log"
expect_rc 0 "$TTAUDIT" replay --json "$T/server.cap.jsonl"
jq -S -f tests/e2e/expect-filter.jq "$T/out" >"$T/cap.json"
diff -u "$T/cap.json" "$T/log.json" || fail "the log and its capture replay differently"
[ "$(jq .rules.bare.merges "$T/log.json")" -gt 2 ] || fail "the log's merges were not read"
# ... and validate and watch read the log too
expect_rc 1 "$TTAUDIT" validate --rule batch "$T/server.log"
contains "$T/out" "server.log:13: step 30 slot 2 (evidence lifetime)"
"$TTAUDIT" replay --json "$T/server.log" >"$T/rep.json"
"$TTAUDIT" watch --once "$T/server.log" >"$T/expo.txt"
$CMP "$T/expo.txt" "$T/rep.json" || fail "watch of the log differs from its replay"
contains "$T/expo.txt" 'pid="4101"'

# a vLLM log without audit lines: exit 2, what it is and what to do
grep -v MERGE_AUDIT "$T/server.log" >"$T/noaudit.log"
expect_rc 2 "$TTAUDIT" replay "$T/noaudit.log"
contains "$T/err" "noaudit.log: no audit event: a vLLM log ("
contains "$T/err" "docs/instrumenting.md"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/noaudit.log"
expect_rc 0 "$TTAUDIT" watch --once "$T/noaudit.log"
contains "$T/err" "noaudit.log: no audit event in it: a vLLM log"
# a source that does not exist: --once exits 2 after the exposition
expect_rc 2 "$TTAUDIT" watch --once "$T/missing.log"
contains "$T/err" "missing.log: no such file"
contains "$T/out" 'ttaudit_source_up{source="'"$T"'/missing.log"'
