# Capture files that cannot be opened or written (a read-only location, a
# full disk, a symlink), a line too long to keep, one file per process,
# banner rules and environment options, and bad usage.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
PROG="$PWD/$BUILD/progs/capture_c"

expect_rc 5 "$PROG" basic
mv "$T/out" "$T/out.plain"; mv "$T/err" "$T/err.plain"

# unusable CAPTURE WHY: the program runs as without the shim, plus one warning.
unusable() {
	expect_rc 5 "$TTAUDIT" capture -o "$1" -- "$PROG" basic
	cmp "$T/out.plain" "$T/out" || fail "$1: stdout differs"
	grep -v '^ttaudit-shim: ' "$T/err" >"$T/err.rest" || true
	cmp "$T/err.plain" "$T/err.rest" || fail "$1: stderr differs beyond the warning"
	eq "$(grep -c '^ttaudit-shim: ' "$T/err")" 1 "$1: warnings"
	contains "$T/err" "$2"
}
# /proc takes no new files, even for root.
unusable /proc/ttaudit-test.cap.jsonl "/proc/ttaudit-test.cap.jsonl: cannot open capture file: "
# Every write fails with ENOSPC.
unusable /dev/full "/dev/full: cannot write capture file: No space left on device"
# O_NOFOLLOW: a symlink is refused, its target untouched.
echo keep >"$T/target"
ln -s "$T/target" "$T/link"
unusable "$T/link" "cannot open capture file: Too many levels of symbolic links"
eq "$(cat "$T/target")" keep "symlink target"

# A line longer than the shim keeps is counted and reported, never silent.
expect_rc 0 "$TTAUDIT" capture -o "$T/long.cap" -- "$PYTHON" -c '
import sys
print("{\"ev\":\"merge\",\"pad\":\"" + "a" * 70000 + "\"}")
print("{\"ev\":\"decode\",\"seq\":2}")'
eq "$(jq -r 'select(.src=="lost") | "\(.count) \(.reason)"' "$T/long.cap")" "1 line longer than 65536 bytes" "lost record"
eq "$(jq -r 'select(.src=="end") | .lost' "$T/long.cap")" 1 "end lost"
eq "$(jq -c 'select(.src=="audit") | .event' "$T/long.cap")" '{"ev":"decode","seq":2}' "audit after the long line"

# --per-pid: CAPTURE.<pid> per process, nothing in CAPTURE itself.
expect_rc 0 "$TTAUDIT" capture --per-pid -o "$T/pp.cap" -- "$PYTHON" -c '
import os, sys
print("{\"ev\":\"decode\",\"who\":\"parent\"}"); sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("{\"ev\":\"decode\",\"who\":\"child\"}"); sys.stdout.flush(); os._exit(0)
os.waitpid(pid, 0)'
[ ! -e "$T/pp.cap" ] || fail "per-pid: base file created"
eq "$(ls "$T"/pp.cap.* | wc -l)" 2 "per-pid files"
for f in "$T"/pp.cap.*; do
	pid=${f##*.}
	eq "$(jq -r 'select(.src=="start") | .pid' "$f")" "$pid" "$f: start pid"
	eq "$(jq -r 'select(.src=="audit") | .event.who' "$f" | wc -l)" 1 "$f: audits"
done

# --rules, --all-lines, --env.
cat >"$T/rules" <<'R'
# name pattern
my:hello ^hello from (\w+)$
R
expect_rc 0 env MY_SETTING=on MY_PASSWORD=hunter2-secret "$TTAUDIT" capture -o "$T/opt.cap" \
	--rules "$T/rules" --all-lines --env 'MY_*' -- "$PYTHON" -c '
print("hello from python"); print("something else"); print("{\"ev\":\"decode\"}")
print("QWEN36_MERGE_BATCH_GUARD engaged: not in these rules")'
eq "$(jq -r 'select(.src=="banner") | "\(.rule)|\(.text)"' "$T/opt.cap")" "my:hello|hello from python" "custom banner"
eq "$(jq -r 'select(.src=="line") | .text' "$T/opt.cap" | tr '\n' '|')" \
	"something else|QWEN36_MERGE_BATCH_GUARD engaged: not in these rules|" "--all-lines"
eq "$(jq -r 'select(.src=="start") | .env.MY_SETTING' "$T/opt.cap")" on "--env value"
eq "$(jq -r 'select(.src=="start") | .env_redacted[0]' "$T/opt.cap")" MY_PASSWORD "--env secret"
lacks "$T/opt.cap" hunter2-secret

# The command's exit status is its own, a signal's too (ttaudit execs it).
expect_rc 143 "$TTAUDIT" capture -o "$T/sig.cap" -- sh -c 'kill -TERM $$'
expect_rc 0 "$TTAUDIT" capture -o "$T/sig.cap" -- true
expect_rc 1 "$TTAUDIT" capture -o "$T/sig.cap" -- false

# Bad usage and bad input: exit 2 with the reason.
printf 'ok foo\nbad (unclosed\n' >"$T/bad.rules"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap" --rules "$T/bad.rules" -- true
contains "$T/err" "bad.rules:2: pattern error at offset"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap" --rules "$T/missing.rules" -- true
contains "$T/err" "missing.rules: cannot open rules file"
expect_rc 2 "$TTAUDIT" capture --env 'BAD-NAME' -- true
contains "$T/err" "environment pattern 'BAD-' has character '-'"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap"
contains "$T/err" "no command to run"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap" -- "$T/no-such-program"
contains "$T/err" "no-such-program' cannot be run: No such file or directory"
expect_rc 2 env TTAUDIT_SHIM="$T/nowhere.so" "$TTAUDIT" capture -- true
contains "$T/err" "TTAUDIT_SHIM '$T/nowhere.so' is not a file"
expect_rc 0 "$TTAUDIT" capture --help
contains "$T/out" "usage: ttaudit capture"
echo ok
