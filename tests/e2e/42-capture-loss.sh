# Capture files that cannot be used (a read-only location, a device, a
# symlink, a directory, someone else's, a missing directory) are refused
# before the command runs; a reused file is made 0600; the shim alone (no
# reader) survives a file it cannot open or write; a line too long to keep,
# one file per process, banner rules and environment options, bad usage.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
PROG="$PWD/$BUILD/progs/capture_c"

expect_rc 5 "$PROG" basic
mv "$T/out" "$T/out.plain"; mv "$T/err" "$T/err.plain"

# refused CAPTURE WHY: ttaudit capture exits 2 naming the file and why, and
# the command never runs.
refused() {
	expect_rc 2 "$TTAUDIT" capture -o "$1" -- touch "$T/ran"
	contains "$T/err" "ttaudit capture: $2"
	[ ! -e "$T/ran" ] || fail "$1: the command ran"
}
# /proc takes no new files, even for root.
refused /proc/ttaudit-test.cap.jsonl "/proc/ttaudit-test.cap.jsonl: cannot create the capture file: "
refused /dev/full "/dev/full: is not a regular file"
refused "$T/no-such-dir/x.cap" "$T/no-such-dir/x.cap: cannot create the capture file: No such file or directory"
refused "$T" "$T: is a directory"
# O_NOFOLLOW: a symlink is refused, its target untouched.
echo keep >"$T/target"
ln -s "$T/target" "$T/link"
refused "$T/link" "$T/link: is a symbolic link"
eq "$(cat "$T/target")" keep "symlink target"
# a file someone else owns (the capture holds this user's environment)
: >"$T/theirs.cap"
chown 65534 "$T/theirs.cap" 2>/dev/null && [ "$(id -u)" != 65534 ] &&
	refused "$T/theirs.cap" "$T/theirs.cap: is owned by uid 65534"
# an unwritable directory (root writes anywhere: only checked as another user)
mkdir "$T/ro"
chmod 0555 "$T/ro"
if [ "$(id -u)" != 0 ]; then
	refused "$T/ro/x.cap" "$T/ro/x.cap: cannot create the capture file: Permission denied"
	refused "$T/ro/pp.cap" "$T/ro/pp.cap: cannot create the capture file: Permission denied"
elif command -v setpriv >/dev/null; then
	# root writes anywhere: the same as user nobody (who may pass through $T)
	chmod 0711 "$T"
	mkdir -m 0777 "$T/w"
	expect_rc 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$TTAUDIT" capture -o "$T/ro/x.cap" -- \
		touch "$T/w/ran"
	contains "$T/err" "ttaudit capture: $T/ro/x.cap: cannot create the capture file: Permission denied"
	[ ! -e "$T/w/ran" ] || fail "unwritable directory: the command ran"
	chmod 0700 "$T"
fi
expect_rc 2 "$TTAUDIT" capture --per-pid -o "$T/no-such-dir/pp" -- touch "$T/ran"
contains "$T/err" "cannot create capture files in '$T/no-such-dir'"
[ ! -e "$T/ran" ] || fail "per-pid: the command ran"
# An existing 0644 file is emptied and made 0600, whatever it was.
printf 'old\n' >"$T/reused.cap"
chmod 0644 "$T/reused.cap"
expect_rc 0 "$TTAUDIT" capture -o "$T/reused.cap" -- true
eq "$(stat -c %a "$T/reused.cap")" 600 "reused file mode"
lacks "$T/reused.cap" old
chmod 0644 "$T/reused.cap"
expect_rc 0 "$TTAUDIT" capture --append -o "$T/reused.cap" -- true
eq "$(stat -c %a "$T/reused.cap")" 600 "appended file mode"
eq "$(jq -r .src "$T/reused.cap" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" "2 2 " "appended records"

# The shim loaded without ttaudit capture (no reader: it writes the file
# itself) never breaks its host: a file it cannot open or write costs one
# warning, and the program runs as without it.
unusable() {
	expect_rc 5 env TTAUDIT_CAPTURE="$1" LD_PRELOAD="$PWD/$BUILD/libttaudit-shim.so" "$PROG" basic
	cmp "$T/out.plain" "$T/out" || fail "$1: stdout differs"
	grep -v '^ttaudit-shim: ' "$T/err" >"$T/err.rest" || true
	cmp "$T/err.plain" "$T/err.rest" || fail "$1: stderr differs beyond the warning"
	eq "$(grep -c '^ttaudit-shim: ' "$T/err")" 1 "$1: warnings"
	contains "$T/err" "$2"
}
unusable /proc/ttaudit-test.cap.jsonl "/proc/ttaudit-test.cap.jsonl: cannot open capture file: "
unusable /dev/full "/dev/full: cannot write capture file: No space left on device"
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
# a refused start leaves no capture file behind (this one ran without -o in
# the tree's top directory once, and left ttaudit.cap.jsonl there)
mkdir "$T/cwd"
(cd "$T/cwd" && expect_rc 2 "$TTAUDIT" capture --env 'BAD-NAME' -- true)
contains "$T/err" "environment pattern 'BAD-' has character '-'"
(cd "$T/cwd" && expect_rc 2 "$TTAUDIT" capture --rules "$T/bad.rules" -- true)
[ -z "$(ls -A "$T/cwd")" ] || fail "a refused capture left $(ls -A "$T/cwd")"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap"
contains "$T/err" "no command to run"
expect_rc 2 "$TTAUDIT" capture -o "$T/x.cap" -- "$T/no-such-program"
contains "$T/err" "no-such-program' cannot be run: No such file or directory"
(cd "$T/cwd" && expect_rc 2 env TTAUDIT_SHIM="$T/nowhere.so" "$TTAUDIT" capture -- true)
contains "$T/err" "TTAUDIT_SHIM '$T/nowhere.so' is not a file"
[ -z "$(ls -A "$T/cwd")" ] || fail "a refused capture left $(ls -A "$T/cwd")"
# CMD's own options are its own (options end at CMD), and its argv is whole
expect_rc 0 "$TTAUDIT" capture -o "$T/argv.cap" sh -c 'echo "$#:$1"' sh -o x
eq "$(cat "$T/out")" "2:-o" "CMD's argv"
expect_rc 0 "$TTAUDIT" capture --help
contains "$T/out" "usage: ttaudit capture"
echo ok
