# ttaudit capture killed by a parent that does not reap it at once: the
# reader stays a zombie, which kill(pid, 0) still finds, so the shim reads
# /proc/<pid>/stat to tell. The command must go on writing as if the reader
# were gone (its shim writes the capture itself), never stall or crash
# while the zombie is there.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
trap e2e_cleanup EXIT INT TERM

cat >"$T/run.py" <<'PY'
import os, signal, subprocess, sys, time
ttaudit, t = sys.argv[1], sys.argv[2]
host = 'sleep 1; i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done; echo done >&2'
with open(t + "/out", "w") as out, open(t + "/err", "w") as err:
    cap = subprocess.Popen([ttaudit, "capture", "-o", t + "/cap.jsonl", "--", "sh", "-c", host],
                           stdout=out, stderr=err)
time.sleep(0.5)
os.kill(cap.pid, signal.SIGKILL)
# not reaped: a zombie while the command writes its 3000 lines
deadline = time.time() + 30
while time.time() < deadline:
    with open(t + "/err") as f:
        if "done" in f.read():
            break
    time.sleep(0.1)
with open("/proc/%d/stat" % cap.pid) as f:
    state = f.read().rsplit(")", 1)[1].split()[0]
cap.wait()
with open(t + "/out") as f:
    print(state, sum(1 for _ in f))
PY
res=$("$PYTHON" "$T/run.py" "$TTAUDIT" "$T")
# the reader was still a zombie when the command ended, and every line was written
eq "$res" "Z 3000" "the zombie reader and the command's lines"
# the command's end is in the capture, written by its own shim
n=0
while ! grep -q '"src":"end"' "$T/cap.jsonl" 2>/dev/null; do
	n=$((n + 1)); [ $n -lt 250 ] || fail "no end record in the capture"; sleep 0.02
done
eq "$(jq -r 'select(.src=="end") | .by' "$T/cap.jsonl" | sort -u)" shim "the end record's writer"
echo ok
