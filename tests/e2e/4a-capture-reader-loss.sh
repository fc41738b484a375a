# The capture when ttaudit capture itself goes wrong while its command
# writes: killed (SIGKILL), stopped (SIGSTOP) for 1.5 s, its capture file
# full (a 256 KiB tmpfs: ENOSPC; a file size limit: EFBIG), failing (ext4
# shut down under it: EIO) or deleted. The command's output and exit status
# are its own throughout, and every line that reached an fd is in the
# capture or counted with its reason, none invented
# (tests/progs/capcheck.py against what the fds really got). Cases that
# need root (mount) say they are skipped when not root.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc
P="$PWD/$BUILD/progs/capture_truth"
MOUNTS=""
cleanup() {
	for m in $MOUNTS; do umount "$m" 2>/dev/null || true; done
	e2e_cleanup
}
trap cleanup EXIT INT TERM

# wait_gone PID WHAT: until process PID has ended (bounded).
wait_gone() {
	n=0
	while kill -0 "$1" 2>/dev/null; do
		n=$((n + 1)); [ $n -lt 3000 ] || fail "$2: the command never ended"; sleep 0.02
	done
}
# wait_file PATH WHAT
wait_file() {
	n=0
	while [ ! -e "$1" ]; do
		n=$((n + 1)); [ $n -lt 3000 ] || fail "$2: $1 never appeared"; sleep 0.01
	done
}
# jsonl FILE WHAT: every line a JSON object, the last one ended.
jsonl() {
	"$PYTHON" -c 'import json,sys
d = open(sys.argv[1], "rb").read()
assert not d or d.endswith(b"\n"), "ends in a cut record"
[json.loads(l) for l in d.decode("utf-8").splitlines()]' "$1" || ceq "not JSON lines" "JSON lines" "$2: $1"
}
# the command's stderr without ttaudit capture's own messages (they share it)
host_err() { grep -av '^ttaudit capture: ' "$1" >"$2" || true; }

# flood NAME CAPFILE [capture options]: the flood host under ttaudit capture in
# the background ($cap its pid); the test then does something to the reader.
flood() {
	fname=$1 capfile=$2
	rm -rf "$T/$fname"
	mkdir "$T/$fname"
	(exec "$TTAUDIT" capture -o "$capfile" -- "$P" flood "$T/$fname" 20000 >"$T/$fname/out" 2>"$T/$fname/err") &
	cap=$!
	E2E_PIDS="$E2E_PIDS $cap"
	wait_file "$T/$fname/flood.started" "$fname"
	host=$(cat "$T/$fname/flood.started")
	rings=$(tr '\0' '\n' <"/proc/$host/environ" | sed -n 's/^TTAUDIT_RINGS=//p')
}
# missing NAME: the missing count of check NAME.
missing() { sed -n 's/.*missing \([0-9]*\),.*/\1/p' "$T/check.$1"; }
# lost_sum CAPFILE [REASON]: the counts of its lost records (of that reason).
lost_sum() {
	if [ $# -gt 1 ]; then
		jq -r --arg r "$2" 'select(.src=="lost" and .reason==$r) | .count' "$1"
	else
		jq -r 'select(.src=="lost") | .count' "$1"
	fi | awk '{s += $1} END {print s + 0}'
}
# go NAME: the host writes its last 20,000 lines a thread and ends.
go() {
	: >"$T/$1/flood.go"
	wait_gone "$host" "$1"
}

# --- ttaudit capture killed: the shim reads its ring to the file itself ------
# Twice, at two moments of the flood (two threads, fd 1 in pieces, banners):
# every line captured, nothing lost, the host's end by its shim with every line.
for k in 1 2; do
	tc=kill$k
	flood $tc "$T/kill$k.cap"
	[ $k = 1 ] || sleep 0.2
	kill -KILL $cap
	set +e; wait $cap; rc=$?; set -e
	ceq "$rc" 137 "$tc: ttaudit capture's status"
	go $tc
	C="$T/kill$k.cap"
	jsonl "$C" $tc
	host_err "$T/$tc/err" "$T/$tc/err.host"
	check "$tc-fd1" "$T/$tc/out" "$C" --fd 1 --expect missing=0 --expect lost=0 --expect invented=0 --expect uncertain=0
	check "$tc-fd2" "$T/$tc/err.host" "$C" --fd 2 --expect missing=0 --expect lost=0 --expect invented=0 --expect uncertain=0
	ceq "$(jq -r 'select(.src=="banner") | .rule' "$C" | sort -u)" arm:batch "$tc: banners after the kill too"
	ceq "$(grep -c 'engaged$' "$T/$tc/out" "$T/$tc/err.host" | awk -F: '{s+=$2} END {print s}')" \
		"$(jq -r 'select(.src=="banner") | .rule' "$C" | wc -l | tr -d ' ')" "$tc: every banner"
	lines=$(($(wc -l <"$T/$tc/out") + $(wc -l <"$T/$tc/err.host")))
	ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.code) \(.by) \(.lines) \(.lost)"' "$C")" "exit 0 shim $lines 0" "$tc: end"
	clacks "$T/$tc/err" "ttaudit-shim"
	# its ring is gone with it, and the directory with the last process
	[ -n "$rings" ] || ceq "(none)" "a ring directory" "$tc: TTAUDIT_RINGS"
	ceq "$(ls -A "$rings" 2>&1)" "ls: cannot access '$rings': No such file or directory" "$tc: the ring directory left behind"
done

# The same with a process tree: two fork children and an exec'd one.
cat >"$T/tree.py" <<'PY'
import os, subprocess, sys
d, n = sys.argv[1], int(sys.argv[2])
def lines(who, after):
    i, last = 0, -1
    while True:
        sys.stdout.write('MERGE_AUDIT {"ev":"merge","who":"%s","step":%d}\n' % (who, i))
        if who == "parent" and i % 7 == 0:
            # in two writes: only this process writes fd 2
            sys.stderr.write('{"ev":"err","who":"%s","step":%d,' % (who, i)); sys.stderr.flush()
            sys.stderr.write('"x":1}\n')
        if who == "parent" and i == 1000:
            open(d + "/started.tmp", "w").write(str(os.getpid())); os.rename(d + "/started.tmp", d + "/flood.started")
        if last < 0 and i % 100 == 0 and os.path.exists(d + "/flood.go"):
            last = i + after
        if i == last or i > 2000000:
            return
        i += 1
if len(sys.argv) > 3:
    lines("exec", n)
    sys.exit(0)
kids = []
for k in range(2):
    pid = os.fork()
    if pid == 0:
        lines("fork%d" % k, n); sys.stdout.flush(); os._exit(0)
    kids.append(pid)
p = subprocess.Popen([sys.executable, sys.argv[0], d, str(n), "exec"])
lines("parent", n)
for pid in kids:
    os.waitpid(pid, 0)
p.wait()
PY
mkdir "$T/tree"
(exec env PYTHONUNBUFFERED=1 "$TTAUDIT" capture -o "$T/tree.cap" -- "$PYTHON" "$T/tree.py" "$T/tree" 20000 \
	>"$T/tree/out" 2>"$T/tree/err") &
cap=$!
E2E_PIDS="$E2E_PIDS $cap"
wait_file "$T/tree/flood.started" tree
host=$(cat "$T/tree/flood.started")
kill -KILL $cap
wait $cap || true
: >"$T/tree/flood.go"
wait_gone "$host" tree
n=0
until [ "$(jq -r 'select(.src=="end") | .pid' "$T/tree.cap" | sort -u | wc -l)" -ge 4 ]; do
	n=$((n + 1)); [ $n -lt 500 ] || fail "tree: ends: $(jq -c 'select(.src=="end")' "$T/tree.cap")"; sleep 0.02
done
jsonl "$T/tree.cap" tree
check tree-fd1 "$T/tree/out" "$T/tree.cap" --fd 1 --expect missing=0 --expect lost=0 --expect invented=0
check tree-fd2 "$T/tree/err" "$T/tree.cap" --fd 2 --expect missing=0 --expect lost=0 --expect invented=0
ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.code) \(.by)"' "$T/tree.cap" | sort | tr '\n' ' ')" \
	"_exit 0 shim _exit 0 shim exit 0 shim exit 0 shim " "tree: ends"
clacks "$T/tree.cap" '"src":"uncertain"'

# --- ttaudit capture stopped for 1.5 s -----------------------------------------
# The ring fills and stays full: writers wait for room a while, then count
# what they could not hand over, every line once, the line they leave open
# too, and the reader, resumed, joins nothing across the gap.
printf '%s\n' 'import os, sys' 'for i in range(600000):' \
	'    if i == 1000:' '        sys.stdout.flush(); open("started", "w").close()' \
	'    print("MERGE_AUDIT {\"ev\":\"merge\",\"step\":%d}" % i)' >"$T/print.py"
for buf in unbuffered buffered; do
	tc=stop-$buf
	mkdir "$T/$tc"
	if [ $buf = unbuffered ]; then pyenv="PYTHONUNBUFFERED=1"; else pyenv="PYTHONUNBUFFERED="; fi
	(cd "$T/$tc" && exec env $pyenv "$TTAUDIT" capture -o "$T/$tc.cap" -- "$PYTHON" "$T/print.py" \
		>"$T/$tc/out" 2>"$T/$tc/err") &
	cap=$!
	E2E_PIDS="$E2E_PIDS $cap"
	wait_file "$T/$tc/started" $tc
	kill -STOP $cap
	sleep 1.5
	kill -CONT $cap
	set +e; wait $cap; rc=$?; set -e
	ceq "$rc" 0 "$tc: status"
	check $tc "$T/$tc/out" "$T/$tc.cap" --fd 1 --expect invented=0 --expect uncertain=0
	ceq "$(lost_sum "$T/$tc.cap" "the capture ring stayed full (ttaudit capture fell behind)")" "$(missing $tc)" \
		"$tc: every missing line counted once"
	ceq "$(wc -l <"$T/$tc/out" | tr -d ' ')" 600000 "$tc: the command's output"
done
# The flood host, stopped: two threads, lines in pieces on fd 1.
tc=stopflood
flood $tc "$T/stopflood.cap"
kill -STOP $cap
sleep 1.5
kill -CONT $cap
go $tc
wait $cap || true
host_err "$T/$tc/err" "$T/$tc/err.host"
check stopflood-fd1 "$T/$tc/out" "$T/stopflood.cap" --fd 1 --expect invented=0 --expect uncertain=0
check stopflood-fd2 "$T/$tc/err.host" "$T/stopflood.cap" --fd 2 --expect invented=0 --expect uncertain=0
ceq "$(lost_sum "$T/stopflood.cap")" $(($(missing stopflood-fd1) + $(missing stopflood-fd2))) "stopflood: lost = missing"

# --- the capture file cannot be written ---------------------------------------
# full_check NAME CAPFILE WHY: valid JSON lines ending in a whole record, the
# failure said once with the path, and every line captured or in the last
# records' lost count with the reason.
full_check() {
	jsonl "$2" "$1"
	ceq "$(grep -c "^ttaudit capture: $2: cannot write the capture file: $3" "$T/$1.err")" 1 "$1: said once"
	check "$1" "$T/$1.out" "$2" --fd 1 --expect invented=0
	ceq "$(lost_sum "$2" "the capture file could not be written ($3)")" "$(missing "$1")" "$1: lost = missing"
	ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.code)"' "$2")" "exit 0" "$1: end"
}
printf '%s\n' 'import sys' 'pad = "x" * int(sys.argv[2])' 'for i in range(int(sys.argv[1])):' \
	'    sys.stdout.write("MERGE_AUDIT {\"ev\":\"merge\",\"step\":%d,\"pad\":\"%s\"}\n" % (i, pad))' >"$T/gen.py"
# a file size limit (anyone can): EFBIG, at 8 MiB (the ring file, 7.4 MiB, is under it)
(ulimit -f 16384 2>/dev/null && [ "$(ulimit -f)" = 16384 ] &&
	exec "$TTAUDIT" capture -o "$T/fsize.cap" -- "$PYTHON" "$T/gen.py" 100000 80 2>"$T/fsize.err") |
	cat >"$T/fsize.out"
full_check fsize "$T/fsize.cap" "File too large"
if [ "$(id -u)" = 0 ] && mkdir "$T/small" && mount -t tmpfs -o size=256k tmpfs "$T/small"; then
	MOUNTS="$MOUNTS $T/small"
	# a 256 KiB tmpfs: ENOSPC
	expect_rc 0 "$TTAUDIT" capture -o "$T/small/c.cap" -- "$PYTHON" "$T/gen.py" 60000 0
	mv "$T/out" "$T/enospc.out"; mv "$T/err" "$T/enospc.err"
	full_check enospc "$T/small/c.cap" "No space left on device"
	ceq "$(wc -l <"$T/enospc.out" | tr -d ' ')" 60000 "enospc: the command's output"
	# the file full, then the reader killed: the processes count on, the file stays whole
	rm -f "$T/small/c.cap"
	flood fullkill "$T/small/c.cap"
	n=0
	until grep -q "^ttaudit capture: $T/small/c.cap: cannot write" "$T/fullkill/err"; do
		n=$((n + 1)); [ $n -lt 3000 ] || fail "fullkill: the file never filled"; sleep 0.01
	done
	kill -KILL $cap
	wait $cap || true
	go fullkill
	jsonl "$T/small/c.cap" fullkill
	host_err "$T/fullkill/err" "$T/fullkill/err.host"
	check fullkill-fd1 "$T/fullkill/out" "$T/small/c.cap" --fd 1 --expect invented=0
	check fullkill-fd2 "$T/fullkill/err.host" "$T/small/c.cap" --fd 2 --expect invented=0
	ceq "$(lost_sum "$T/small/c.cap")" $(($(missing fullkill-fd1) + $(missing fullkill-fd2))) "fullkill: lost = missing"
	umount "$T/small"
else
	echo "enospc, fullkill: skipped (mounting a small tmpfs needs root)"
fi
# ext4 shut down under the reader: EIO, for every write after, the last
# records too: the file (read after a remount) ends at a record boundary,
# and the message counts what it lacks.
if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && truncate -s 64M "$T/eio.img" &&
	mkfs.ext4 -q -F "$T/eio.img" 2>/dev/null && mkdir "$T/eiofs" && mount -o loop "$T/eio.img" "$T/eiofs" 2>/dev/null; then
	MOUNTS="$MOUNTS $T/eiofs"
	flood eio "$T/eiofs/c.cap"
	"$PYTHON" -c 'import fcntl, os, struct, sys
fcntl.ioctl(os.open(sys.argv[1], os.O_RDONLY), 0x8004587d, struct.pack("I", 0))' "$T/eiofs"   # FS_IOC_SHUTDOWN
	go eio
	set +e; wait $cap; rc=$?; set -e
	ceq "$rc" 0 "eio: status"
	umount "$T/eiofs"
	mount -o loop "$T/eio.img" "$T/eiofs"
	jsonl "$T/eiofs/c.cap" eio
	host_err "$T/eio/err" "$T/eio/err.host"
	# (the missing lines are counted in the message only: capcheck, which reads the file, fails)
	$CHECK "$T/eio/out" "$T/eiofs/c.cap" --fd 1 >"$T/check.eio-fd1" || true
	$CHECK "$T/eio/err.host" "$T/eiofs/c.cap" --fd 2 >"$T/check.eio-fd2" || true
	echo "eio-fd1: $(head -n 1 "$T/check.eio-fd1")"
	echo "eio-fd2: $(head -n 1 "$T/check.eio-fd2")"
	ccontains "$T/check.eio-fd1" "invented 0, lost 0, uncertain 0"
	ccontains "$T/check.eio-fd2" "invented 0, lost 0, uncertain 0"
	m1=$(missing eio-fd1) m2=$(missing eio-fd2)
	ccontains "$T/eio/err" "ttaudit capture: $T/eiofs/c.cap: cannot write the capture file: Input/output error"
	ccontains "$T/eio/err" "ttaudit capture: $T/eiofs/c.cap: its last records could not be written either (Input/output error): $((m1 + m2)) lines that are not in it are counted only here"
	umount "$T/eiofs"
else
	echo "eio: skipped (a loop-mounted ext4 needs root, losetup and mkfs.ext4)"
fi

# --- the capture file deleted while written: made again, saying what it lacks ---
tc=deleted
flood $tc "$T/deleted.cap"
n=0
until [ "$(wc -l <"$T/deleted.cap")" -ge 1000 ]; do
	n=$((n + 1)); [ $n -lt 3000 ] || fail "deleted: nothing written"; sleep 0.01
done
rm "$T/deleted.cap"
go $tc
wait $cap || true
jsonl "$T/deleted.cap" deleted
host_err "$T/$tc/err" "$T/$tc/err.host"
ceq "$(grep -c "^ttaudit capture: $T/deleted.cap: the capture file was deleted while it was written: made again" "$T/$tc/err")" 1 \
	"deleted: said once"
ceq "$(head -n 1 "$T/deleted.cap" | jq -r '"\(.src) \(.pid)"')" "start $host" "deleted: the new file starts with the running process"
check deleted-fd1 "$T/$tc/out" "$T/deleted.cap" --fd 1 --expect invented=0 --expect uncertain=0
check deleted-fd2 "$T/$tc/err.host" "$T/deleted.cap" --fd 2 --expect invented=0 --expect uncertain=0
m1=$(missing deleted-fd1) m2=$(missing deleted-fd2)
ceq "$(lost_sum "$T/deleted.cap" "in a capture file that was deleted while it was written")" $((m1 + m2)) "deleted: lost = missing"
ceq "$(jq -r 'select(.src=="end") | "\(.how) \(.lost)"' "$T/deleted.cap")" "exit $((m1 + m2))" "deleted: end"
check_done
echo ok
