# ttaudit follow: a log read from stdin, and a log file followed by name
# through a late start, rotation and truncation, stopped by SIGTERM.
. tests/e2e/lib.sh

audit() { printf 'INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT {"ev":"merge","step":%d,"host_pos":[1],"dev_pos":[2]}\n' "$1"; }

# stdin: records without pid/tid/fd, start and end, a last line without '\n'.
{ echo "INFO starting"; audit 1; echo "QWEN36_MERGE_GARBAGE_BOUND engaged: merge ignores device positions outside [-1, max_model_len)"
  printf '{"ev":"decode","slots":[0]}'; } >"$T/in.log"
expect_rc 0 "$TTAUDIT" follow - <"$T/in.log"
mv "$T/out" "$T/stdin.cap"
eq "$(jq -r .src "$T/stdin.cap" | tr '\n' ' ')" "start audit banner audit end " "stdin records"
eq "$(jq -r 'select(.src=="banner") | .rule' "$T/stdin.cap")" arm:bound "stdin banner"
eq "$(jq -r 'select(.src!="start" and .src!="end") | [has("pid"), has("tid"), has("fd")] | any' "$T/stdin.cap" | sort -u)" false "no pid/tid/fd"
eq "$(jq -r 'select(.src=="end") | "\(.lines) \(.lost)"' "$T/stdin.cap")" "4 0" "stdin end"
contains "$T/err" "ttaudit follow: -: 4 lines, 2 audit, 1 banner, 0 lost"
expect_rc 0 "$TTAUDIT" follow --json - <"$T/in.log"
eq "$(jq -r .audit "$T/err")" 2 "--json summary"

# A file that appears late, grows, is rotated, then truncated.
L="$T/app.log"
C="$T/follow.cap"
"$TTAUDIT" follow -o "$C" --poll 20 "$L" 2>"$T/follow.err" &
FPID=$!
E2E_PIDS="$E2E_PIDS $FPID"
# wait_for N: until the capture holds N audit records (at most 10 s).
wait_for() {
	i=0
	while [ "$(grep -c '"src":"audit"' "$C" 2>/dev/null || true)" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -lt 500 ] || { cat "$C" "$T/follow.err" >&2; fail "follow: $1 audit records never arrived"; }
		sleep 0.02
	done
}
sleep 0.1
for s in 1 2 3; do audit $s >>"$L"; done
printf 'INFO partial ' >>"$L"
wait_for 3
printf 'line\n' >>"$L"
audit 4 >>"$L"
wait_for 4
mv "$L" "$L.1"
sleep 0.2                   # the follower sees the name gone before the writer is done
audit 5 >>"$L.1"            # written to the old file after the rename
wait_for 5
for s in 6 7; do audit $s >>"$L"; done
wait_for 7
: >"$L"
sleep 0.2                   # let the follower see the file shrink
audit 8 >>"$L"
wait_for 8
kill -TERM $FPID
wait $FPID || fail "follow exited $? on SIGTERM"
eq "$(jq -r 'select(.src=="audit") | .event.step' "$C" | tr '\n' ' ')" "1 2 3 4 5 6 7 8 " "followed audits"
eq "$(jq -r .src "$C" | tail -n 1)" end "end record last"
contains "$T/follow.err" "waiting for the file to appear"
contains "$T/follow.err" "file moved away, reading it until a new one appears"
contains "$T/follow.err" "file replaced, following the new file"
contains "$T/follow.err" "file truncated, reading from its start"

# --once reads what is there and stops; the analyzer reads the result.
expect_rc 0 "$TTAUDIT" follow --once -o "$T/once.cap" "$L.1"
eq "$(jq -r 'select(.src=="audit") | .event.step' "$T/once.cap" | tr '\n' ' ')" "1 2 3 4 5 " "--once"
expect_rc 0 "$TTAUDIT" replay --json "$T/once.cap"
eq "$(jq -r .rules.bare.merges "$T/out")" 5 "replay of a follow capture"

expect_rc 2 "$TTAUDIT" follow
contains "$T/err" "give exactly one PATH"
expect_rc 2 "$TTAUDIT" follow --poll 0 x
contains "$T/err" "option '--poll' wants an integer from 1 to 60000, not '0'"
expect_rc 2 "$TTAUDIT" follow --once /proc/1/mem
contains "$T/err" "/proc/1/mem"
echo ok
