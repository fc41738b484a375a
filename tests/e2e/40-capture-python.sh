# ttaudit capture on a real Python process: print, logging and
# sys.stderr.write from four threads, a forked child, a subprocess, os.write
# and a JSONL file of its own (--watch). The capture must hold every audit
# line and banner, in order per thread, and the program's output bytes and
# exit status must be the same as without the shim.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
P="$PWD/tests/progs/capture_py.py"
R=30
mkdir "$T/plain" "$T/cap"

export QWEN36_MERGE_LIFETIME_GUARD=1 TT_METAL_HOME=/opt/tt-metal VLLM_API_KEY=hunter2-secret \
	TT_AUTH_TOKEN=hunter3-secret UNRELATED_VAR=not-recorded
expect_rc 7 "$PYTHON" "$P" "$T/plain" $R
mv "$T/out" "$T/out.plain"; mv "$T/err" "$T/err.plain"
expect_rc 7 "$TTAUDIT" capture -o "$T/run.cap.jsonl" --watch "$T/cap/audit-*.jsonl" -- \
	"$PYTHON" "$P" "$T/cap" $R
mv "$T/out" "$T/out.cap"; mv "$T/err" "$T/err.cap"
C="$T/run.cap.jsonl"

# The host notices nothing.
cmp "$T/out.plain" "$T/out.cap" || fail "stdout differs under the shim"
cmp "$T/err.plain" "$T/err.cap" || fail "stderr differs under the shim"
cmp "$T/plain/audit-own.jsonl" "$T/cap/audit-own.jsonl" || fail "own audit file differs"
eq "$(stat -c %a "$C")" 600 "capture file mode"

# Every audit line on fds 1 and 2 (all processes), each once.
for fd in 1 2; do
	f=$([ $fd = 1 ] && echo out.plain || echo err.plain)
	grep -o '{"ev".*' "$T/$f" | jq -c . | sort >"$T/want.$fd"
	jq -c "select(.src==\"audit\" and .fd==$fd) | .event" "$C" | sort >"$T/got.$fd"
	[ -s "$T/want.$fd" ] || fail "no audit lines on fd $fd in the plain run"
	cmp "$T/want.$fd" "$T/got.$fd" || { diff "$T/want.$fd" "$T/got.$fd" | head >&2; fail "fd $fd audits differ"; }
done
# The JSONL file the program wrote itself, through --watch.
jq -c . "$T/cap/audit-own.jsonl" | sort >"$T/want.file"
jq -c 'select(.src=="audit" and .fd>2) | .event' "$C" | sort >"$T/got.file"
eq "$(wc -l <"$T/got.file")" $R "audit records from the watched file"
cmp "$T/want.file" "$T/got.file" || fail "watched file audits differ"

# In order per writer (pid, tid, who), and each writer complete.
jq -r 'select(.src=="audit") | [.pid, .tid, .event.who, .event.seq] | @tsv' "$C" | awk -F'\t' '
	{ k = $1 " " $2 " " $3; if (k in last && $4 <= last[k]) { print "out of order: " k " " $4; bad = 1 }
	  last[k] = $4; n[$3]++ }
	END { exit bad }' || fail "audit records out of order within a thread"
for who in print-0 logging-1 stderr-3 fork subprocess; do
	got=$(jq -r --arg w $who 'select(.src=="audit" and .event.who==$w) | .event.seq' "$C" | wc -l)
	case $who in fork|subprocess) want=$R ;; *) want=$((R / 3)) ;; esac
	eq "$got" "$want" "audit records from $who"
done
# Each thread wrote under its own tid: four threads, so four tids on the main pid.
main=$(jq -r 'select(.src=="start") | .pid' "$C" | head -n 1)
eq "$(jq -r --argjson p "$main" 'select(.src=="audit" and .pid==$p and (.event.who|test("-[0-9]$"))) | .tid' "$C" | sort -u | wc -l)" 4 "thread ids"

# Banners, including the forked child's.
for rule in arm:lifetime vllm:version arm:batch; do
	eq "$(jq -r --arg r $rule 'select(.src=="banner" and .rule==$r) | .rule' "$C" | wc -l)" 1 "banner $rule"
done
contains "$C" '"text":"INFO 11-29 20:41:02 [generator.py:1930] QWEN36_MERGE_LIFETIME_GUARD engaged'

# start records: parent, fork child (ppid = parent), subprocess; env allow-listed, secrets never.
eq "$(jq -r 'select(.src=="start") | .pid' "$C" | sort -u | wc -l)" 3 "processes with a start record"
fork_pid=$(jq -r 'select(.src=="audit" and .event.who=="fork") | .pid' "$C" | head -n 1)
eq "$(jq -r --argjson p "$fork_pid" 'select(.src=="start" and .pid==$p) | .ppid' "$C")" "$main" "fork child's ppid"
eq "$(jq -r 'select(.src=="start") | .env.QWEN36_MERGE_LIFETIME_GUARD' "$C" | sort -u)" 1 "env QWEN36_MERGE_LIFETIME_GUARD"
eq "$(jq -r 'select(.src=="start") | .env.TT_METAL_HOME' "$C" | sort -u)" /opt/tt-metal "env TT_METAL_HOME"
eq "$(jq -r 'select(.src=="start") | .env_redacted | join(",")' "$C" | sort -u)" "TT_AUTH_TOKEN,VLLM_API_KEY" "redacted names"
lacks "$C" hunter2-secret
lacks "$C" hunter3-secret
lacks "$C" UNRELATED_VAR
eq "$(jq -r 'select(.src=="start" and .pid=='"$main"') | .argv[1]' "$C" | head -n 1)" "$P" "argv"

# Nothing lost; the parent and the subprocess ended with exit(), the fork
# child with os._exit(), each saying so (with the parent's code, 7).
lacks "$C" '"src":"lost"'
lacks "$C" '"src":"uncertain"'
eq "$(jq -r 'select(.src=="end") | .lost' "$C" | sort -u)" 0 "end lost"
eq "$(jq -r 'select(.src=="end") | .pid' "$C" | wc -l)" 3 "end records"
eq "$(jq -r --argjson p "$main" 'select(.src=="end" and .pid==$p) | "\(.how) \(.code) \(.by)"' "$C")" "exit 7 shim" "parent's end"
eq "$(jq -r --argjson p "$fork_pid" 'select(.src=="end" and .pid==$p) | "\(.how) \(.code)"' "$C")" "_exit 0" "fork child's end"

# The analyzer reads the capture: every merge event, nothing malformed.
n_merge=$(jq -r 'select(.src=="audit" and .event.ev=="merge") | 1' "$C" | wc -l)
expect_rc 0 "$TTAUDIT" replay --json "$C"
eq "$(jq -r .malformed "$T/out")" 0 "replay malformed"
eq "$(jq -r '.rules.bare.merges' "$T/out")" "$n_merge" "replay merges"
echo "ok: $n_merge merge events from 3 processes and 4 threads"
