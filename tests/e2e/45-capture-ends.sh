# How processes end, and what the capture says of it: lines still in a
# stdio buffer at _exit, _Exit, exec or abort never reached the fd (lost,
# never recorded); a line without '\n' is recorded as partial; a failed
# exec says its end record is void; SIGKILL in the middle of a burst of
# raw write(), printf and a watched file loses no line silently (every
# missing line is an uncertain or lost record, none invented); a signal
# death has an end record (by ttaudit capture, or by the parent that reaped
# it); fork with another thread blocked in write(1), and a thread cancelled
# there, hang nothing. The fd's content is the truth (tests/progs/capcheck.py).
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc
P="$PWD/$BUILD/progs/capture_truth"

# 50 lines printf'd to a fully buffered stdout, then the process ends
# without flushing (or with exit, which flushes). A raw line first, and a
# raw line without '\n' on stderr (redirected by the command itself: the
# test's shell writes "Aborted" to the stderr it gave ttaudit).
for how in _exit _Exit exec abort exit; do
	case $how in _exit|_Exit) rc=3 ;; exec) rc=0 ;; abort) rc=134 ;; exit) rc=3 ;; esac
	expect_rc $rc "$TTAUDIT" capture -o "$T/$how.cap" -- sh -c "exec '$P' exit $how 50 2>'$T/$how.err'"
	mv "$T/$how.err" "$T/err"
	C="$T/$how.cap"
	pid=$(jq -r 'select(.src=="start") | .pid' "$C" | head -n 1)
	if [ $how = exit ]; then
		check "$how-stdout" "$T/out" "$C" --fd 1 --pid "$pid" --expect captured=51 --expect lost=0
	else
		check "$how-stdout" "$T/out" "$C" --fd 1 --pid "$pid" --expect captured=1 --expect lost=50
	fi
	check "$how-stderr" "$T/err" "$C" --fd 2 --pid "$pid" --expect partial=1
	case $how in
	_exit|_Exit) want="_exit 3 shim" why="in a stdio buffer at _exit: never written to the fd" ;;
	exec) want="exec null shim" why="in a stdio buffer at exec: never written to the fd" ;;
	abort) want="signal null capture" why="in a stdio buffer when the process died: never written to the fd" ;;
	exit) want="exit 3 shim" why="" ;;
	esac
	# (sh's own end is an exec too: the one that counts is the one after the 50 lines)
	ceq "$(jq -r --argjson p "$pid" 'select(.src=="end" and .pid==$p and (.how != "exec" or .lost == 50)) | "\(.how) \(.code) \(.by)"' "$C" | head -n 1)" "$want" "$how: end"
	[ -z "$why" ] || ceq "$(jq -r --argjson p "$pid" 'select(.src=="lost" and .pid==$p) | "\(.count) \(.reason)"' "$C")" "50 $why" "$how: lost"
done
ceq "$(jq -r 'select(.src=="end" and .how=="signal") | .signal' "$T/abort.cap")" 6 "abort: signal"
# exec: the new image (same pid) has its own start and end
ceq "$(jq -r 'select(.src=="start") | .argv[0]' "$T/exec.cap" | tr '\n' ' ')" "sh $P true " "exec: start records"

# A failed exec: the process goes on, its partial line goes on and is
# recorded whole when the newline comes, its stdio buffer is flushed later:
# nothing is lost, and its only end is the exit.
expect_rc 4 "$TTAUDIT" capture -o "$T/ef.cap" -- "$P" exit execfail 50
check execfail-stderr "$T/err" "$T/ef.cap" --fd 2 --expect captured=1 --expect partial=0 --expect uncertain=0
check execfail-stdout "$T/out" "$T/ef.cap" --fd 1 --expect captured=52 --expect lost=0
ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.code)"' "$T/ef.cap" | tr '\n' ' ')" "exit 4 " "execfail: ends"
# Without a reader (the shim writing the file itself), the records written
# before the exec say so when it fails.
expect_rc 4 env TTAUDIT_CAPTURE="$T/efd.cap" LD_PRELOAD="$PWD/$BUILD/libttaudit-shim.so" "$P" exit execfail 50
check execfail-direct "$T/err" "$T/efd.cap" --fd 2 --expect captured=1 --expect uncertain=1
ccontains "$T/efd.cap" '"reason":"exec failed (No such file or directory): the end and lost records just before this one are void'
ceq "$(jq -r 'select(.src=="end") | .how' "$T/efd.cap" | tr '\n' ' ')" "exec exit " "execfail direct: ends"

# SIGKILL in a burst, three times at different moments: no line invented,
# every line that reached an fd captured or named by an uncertain or lost
# record (capcheck fails otherwise).
for i in 1 2 3; do
	rm -f "$T/burst.started" "$T/burst.jsonl"
	(cd "$T" && exec "$TTAUDIT" capture --all-lines -o "$T/k$i.cap" --watch "$T/burst.jsonl" -- \
		"$P" burst "$T/burst.jsonl" >"$T/k$i.out" 2>"$T/k$i.err") &
	cap=$!
	E2E_PIDS="$E2E_PIDS $cap"
	n=0
	while [ ! -e "$T/burst.started" ]; do
		n=$((n + 1))
		[ $n -lt 1000 ] || fail "burst never started"
		sleep 0.01
	done
	sleep "0.0$((i * 3))"
	kill -KILL "$(cat "$T/burst.started")"
	set +e
	wait $cap
	rc=$?
	set -e
	ceq "$rc" 137 "burst $i: ttaudit capture's status"
	check "burst$i-stdout" "$T/k$i.out" "$T/k$i.cap" --fd 1 --expect invented=0
	check "burst$i-file" "$T/burst.jsonl" "$T/k$i.cap" --watched --expect invented=0
	ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.signal) \(.by)"' "$T/k$i.cap")" "signal 9 capture" "burst $i: end"
done

# ttaudit capture itself killed while its command runs on: what the command
# writes after that is in the unread ring when it ends, and its shim reads
# it to the capture file itself, and writes its end (tests/e2e/4a has the
# same under a flood of writes).
rm -f "$T/go"
(exec "$TTAUDIT" capture -o "$T/rk.cap" -- sh -c "
	echo 'MERGE_AUDIT {\"ev\":\"merge\",\"step\":1}'
	while [ ! -e '$T/go' ]; do sleep 0.05; done
	echo 'MERGE_AUDIT {\"ev\":\"merge\",\"step\":2}'" >"$T/rk.out" 2>"$T/rk.err") &
rk=$!
n=0
until grep -q '"step":1' "$T/rk.cap" 2>/dev/null; do
	n=$((n + 1)); [ $n -lt 400 ] || fail "reader killed: the first line never arrived"; sleep 0.025
done
kill -KILL $rk
wait $rk || true
: >"$T/go"
# (the shell's pid from its start record: a line it wrote to a file would be one more lost)
sh_pid=$(jq -r 'select(.src=="start" and .argv[0]=="sh") | .pid' "$T/rk.cap")
n=0
until [ -n "$(jq -r --argjson p "$sh_pid" 'select(.src=="end" and .pid==$p) | .pid' "$T/rk.cap")" ]; do
	n=$((n + 1)); [ $n -lt 400 ] || fail "reader killed: no end record: $(cat "$T/rk.cap")"; sleep 0.025
done
check reader-killed "$T/rk.out" "$T/rk.cap" --fd 1 --pid "$sh_pid" --expect captured=2 --expect lost=0 --expect invented=0
ceq "$(jq -r --argjson p "$sh_pid" 'select(.src=="end" and .pid==$p) | "\(.how) \(.by)"' "$T/rk.cap")" "_exit shim" "reader killed: end"

# A signal death of the command, and of a child its (captured) parent reaps.
expect_rc 143 "$TTAUDIT" capture -o "$T/term.cap" -- sh -c 'kill -TERM $$'
ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.signal) \(.by)"' "$T/term.cap")" "signal 15 capture" "SIGTERM: end"
expect_rc 0 "$TTAUDIT" capture -o "$T/child.cap" -- "$PYTHON" -c '
import os, signal, subprocess, sys
p = subprocess.Popen([sys.executable, "-c", "import os, signal; print(\"{\\\"ev\\\":\\\"merge\\\"}\", flush=True); os.kill(os.getpid(), signal.SIGKILL)"])
p.wait()
print("child", p.pid, p.returncode)'
kid=$(sed -n 's/^child \([0-9]*\) -9$/\1/p' "$T/out")
[ -n "$kid" ] || fail "the child did not die by SIGKILL: $(cat "$T/out")"
ceq "$(jq -r --argjson p "$kid" 'select(.src=="end" and .pid==$p) | "\(.how) \(.signal) \(.by)"' "$T/child.cap")" \
	"signal 9 parent" "child: end by its parent"

# fork while another thread is blocked in write(1) holding fd 1's lock: the
# child writes to fd 1 and exits, nothing hangs; its line may be uncertain
# (what the blocked thread wrote before it is not known), never invented.
expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/fm.cap" -- sh -c "exec '$P' forkmt 3>'$T/fm.truth'"
check forkmt "$T/fm.truth" "$T/fm.cap" --fd 1 --expect invented=0
# a thread cancelled while blocked in write(1): its lock is released
expect_rc 0 "$TTAUDIT" capture --all-lines -o "$T/cx.cap" -- sh -c "exec '$P' cancel 3>'$T/cx.truth'"
ccontains "$T/err" "cancel: done"
check cancel "$T/cx.truth" "$T/cx.cap" --fd 1 --expect invented=0
check_done
echo ok
