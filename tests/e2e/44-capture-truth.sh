# The capture holds what reached each fd, cut into lines, whatever threads
# wrote the bytes and however the pieces fell: real libstdc++ iostreams
# (16 threads, sync_with_stdio(false)), spdlog with fmt, glibc stdio shared
# by threads, stdio that <stdio.h> inlines at -O2, every call that flushes,
# bytes that are not UTF-8, and vLLM's process prefix with colour codes.
# The file the program wrote is the truth; tests/progs/capcheck.py names
# the lines captured, missing, invented, lost and uncertain (invented must
# be 0 everywhere, and every missing line accounted for).
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc
P="$PWD/$BUILD/progs"
for prog in capture_truth capture_iostream capture_spdlog; do
	[ -x "$P/$prog" ] || fail "$P/$prog was not built (scripts/deps.sh check installs g++ and libspdlog-dev)"
done

# Two threads finish each other's lines with raw write()s (thread A writes
# `{..."step":1,`, B `"dev_pos":[5]}\n{..."step":2,`, A `"dev_pos":[7]}\n`):
# the fd holds 100 true lines and no others.
expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/split.cap" -- "$P/capture_truth" split 50
check split "$T/out" "$T/split.cap" --fd 1 --expect captured=100 --expect missing=0
ceq "$(jq -c 'select(.src=="audit" and .event.step==1) | .event' "$T/split.cap")" \
	'{"ev":"merge","step":1,"dev_pos":[5]}' "split: step 1"

# libstdc++: 16 threads, cout's own 8 KiB buffer flushed mid-line by
# whichever thread fills it (write and writev).
expect_rc 0 "$TTAUDIT" capture -o "$T/io.cap" -- "$P/capture_iostream" 16 300
check iostream "$T/out" "$T/io.cap" --fd 1 --expect captured=4800 --expect missing=0

# spdlog + fmt: 4 threads through one logger, to stdout and to a file
# sink of its own (--watch): both fds exact.
expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/sp.cap" --watch "$T/tt-metal.log" -- \
	"$P/capture_spdlog" 4 3000 "$T/tt-metal.log"
check spdlog-stdout "$T/out" "$T/sp.cap" --fd 1 --expect captured=3000 --expect missing=0
check spdlog-file "$T/tt-metal.log" "$T/sp.cap" --watched --expect captured=3000 --expect missing=0

# glibc stdio shared by 8 threads, lines of 60 to 1,600 bytes: the 4 KiB
# buffer goes out mid-line, flushed by whichever thread filled it.
expect_rc 0 "$TTAUDIT" capture -o "$T/th.cap" -- "$P/capture_truth" threads 500
check stdio-threads "$T/out" "$T/th.cap" --fd 1 --expect captured=4000 --expect missing=0

# Lines ended by putc_unlocked, fputc_unlocked, putchar_unlocked and
# fwrite_unlocked of one byte, all expanded in place at -O2 (no call the
# shim could see), on a fully buffered and on a line-buffered stdout.
for mode in inline inline-lb; do
	expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/$mode.cap" -- "$P/capture_truth" $mode 100
	check "$mode" "$T/out" "$T/$mode.cap" --fd 1 --expect captured=101 --expect missing=0
done

# fflush, fseek, setvbuf (both ways), freopen, fclose of a line without
# '\n' (recorded as partial) and fflush(NULL), on a watched file and stdout.
mkdir "$T/fl"
expect_rc 0 "$TTAUDIT" capture -o "$T/fl.cap" --watch "$T/fl/*" -- "$P/capture_truth" fflush "$T/fl"
cat "$T/fl/flush-a.jsonl" "$T/fl/flush-b.jsonl" >"$T/fl/all"
check flushes "$T/fl/all" "$T/fl.cap" --watched --expect captured=8 --expect partial=1 --expect missing=0
check flushes-stdout "$T/out" "$T/fl.cap" --fd 1 --expect captured=2

# Bytes that are not UTF-8, in an audit object's strings and in text: the
# capture is strict UTF-8 JSON (capcheck reads it so), each byte \udcNN
# (Python's surrogateescape gives the byte back), counted.
expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/u.cap" -- "$P/capture_truth" utf8
check utf8 "$T/out" "$T/u.cap" --fd 1 --expect captured=4 --expect missing=0
"$PYTHON" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]' "$T/u.cap" ||
	ceq invalid valid "utf8: strict UTF-8 JSON lines"
ccontains "$T/u.cap" '"slot_req":["r\udcff\udcfe","ok'
ceq "$(jq -r 'select(.src!="start" and .src!="end") | .invalid_utf8 // 0' "$T/u.cap" | tr '\n' ' ')" "2 1 4 2 " "utf8: counts"
ceq "$(jq -r 'select(.src=="banner") | .rule' "$T/u.cap")" arm:batch "utf8: banner"

# vLLM's process prefix and colour codes: matched after they are removed
# (an anchored rule proves the prefix is gone), the text kept as written.
printf 'anchored ^INFO .*QWEN36_MERGE_BATCH_GUARD engaged\n' >"$T/rules"
expect_rc 0 "$TTAUDIT" capture -o "$T/pre.cap" --rules "$T/rules" -- "$PYTHON" -c '
import sys
C, R = "\x1b[1;36m", "\x1b[0;0m"
sys.stdout.write(C + "(EngineCore_DP0 pid=127)" + R + " \x1b[32mINFO\x1b[0m 11-29 20:41:02 QWEN36_MERGE_\x1b[1mBATCH\x1b[0m_GUARD engaged\n")
sys.stdout.write("(APIServer pid=9) INFO 11-29 MERGE_AUDIT {\"ev\":\"merge\",\"step\":3}\x1b[0m\n")
sys.stdout.write("INFO not a QWEN36_MERGE_BATCH_GUARD banner: engaged comes later\n")'
ceq "$(jq -r 'select(.src=="banner") | .rule' "$T/pre.cap")" anchored "prefix: banner"
ccontains "$T/pre.cap" '"text":"\u001b[1;36m(EngineCore_DP0 pid=127)'
ceq "$(jq -c 'select(.src=="audit") | .event' "$T/pre.cap")" '{"ev":"merge","step":3}' "prefix: audit"
check_done
echo ok
