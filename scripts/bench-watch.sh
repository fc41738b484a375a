#!/bin/sh
# make bench, part watch: `ttaudit watch` on one core follows a file growing
# by RATE merge events a second (32 slots, every field), for SECONDS; prints
# the sustained rate, the lag from a batch's write to the change of
# ttaudit_merges_total on /metrics (p50, p99; goal p99 <= 200 ms) and RSS over
# the run (flat). Defaults: 50000/s for 60 s; BENCH_WATCH_SECONDS=600 is the
# 10-minute run. Nothing asserts a time: it reports.
set -u
BUILD="${BUILD:-build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SECONDS_="${BENCH_WATCH_SECONDS:-60}"
RATE="${BENCH_WATCH_RATE:-50000}"
W=$(mktemp -d "${TMPDIR:-/tmp}/ttaudit-bench-watch.XXXXXX")
trap 'kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null; rm -rf "$W"' EXIT INT TERM
PIN=""
command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] && PIN="taskset -c 1"
$PIN "$BUILD/ttaudit" watch --listen 127.0.0.1:0 --port-file "$W/port" --poll-ms 10 "$W/f.log" \
	2>"$W/watch.err" &
WPID=$!
n=0; while [ ! -s "$W/port" ] && [ $n -lt 200 ]; do n=$((n + 1)); sleep 0.05; done
[ -s "$W/port" ] || { cat "$W/watch.err"; echo "watch did not start"; exit 1; }
echo "watch pid $WPID${PIN:+ on cpu 1}, $RATE merge events/s for ${SECONDS_}s (32 slots, every field)"
"$PYTHON" - "$W" "$(cat "$W/port")" "$WPID" "$SECONDS_" "$RATE" <<'EOP'
import json, os, sys, threading, time, urllib.request
w, port, pid, seconds, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
H = 32
def line(step):
    host = [1000 + s * 7 + step % 5 for s in range(H)]
    dev = [h + (1 if s % 3 == 0 else 0) for s, h in enumerate(host)]
    ev = {"ev": "merge", "step": step, "host_pos": host, "dev_pos": dev,
          "reset_batch": step % 2 == 0, "mode_switched": False, "prefilled": [step % H],
          "buf_step": step - 1 - step % 3, "gen": step // 7, "buf_gen": (step - 1) // 7,
          "slot_gen": [s + step // 50 for s in range(H)], "buf_slot_gen": [s + (step - 3) // 50 for s in range(H)],
          "slot_req": ["r%d-%d" % (s, step // 40) for s in range(H)],
          "buf_req": ["r%d-%d" % (s, (step - 2) // 40) for s in range(H)],
          "taken": [s % 3 == 0 for s in range(H)]}
    return "(EngineCore_DP0 pid=4101) INFO 12-01 10:00:00 [generator.py:1930] MERGE_AUDIT " + \
        json.dumps(ev, separators=(",", ":")) + "\n"
templates = [line(s) for s in range(1, 401)]
marks = []          # (merges written, time)
seen = []           # (time, merges on /metrics)
stop = False
def merges():
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in body.splitlines() if l.startswith("ttaudit_merges_total{"))
def poller():
    while not stop:
        try:
            v = merges()
        except Exception:
            v = None
        if v is not None:
            seen.append((time.monotonic(), v))
        time.sleep(0.01)
rss = []
def rss_now():
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return 0
th = threading.Thread(target=poller); th.start()
f = open(os.path.join(w, "f.log"), "a")
batch = max(1, rate // 100)     # one write every 10 ms
t0 = time.monotonic(); n = 0; last_rss = 0
while True:
    now = time.monotonic()
    if now - t0 >= seconds:
        break
    due = int((now - t0) * rate)
    if n < due:
        k = min(due - n, batch * 4)
        f.write("".join(templates[(n + i) % len(templates)] for i in range(k)))
        f.flush()
        n += k
        marks.append((n, time.monotonic()))
    else:
        time.sleep(0.002)
    if now - last_rss >= 1:
        rss.append((now - t0, rss_now())); last_rss = now
wrote_end = time.monotonic()
while time.monotonic() - wrote_end < 30 and (not seen or seen[-1][1] < n):
    time.sleep(0.05)
stop = True; th.join()
drained = next((t for t, v in seen if v >= n), None)
lags = []
j = 0
for cnt, t in marks:
    while j < len(seen) and seen[j][1] < cnt:
        j += 1
    if j < len(seen):
        lags.append(seen[j][0] - t)
lags.sort()
def pct(p): return lags[min(len(lags) - 1, int(p * len(lags)))] * 1000 if lags else float("nan")
size = os.path.getsize(os.path.join(w, "f.log"))
print("written: %d merge events (%.0f/s, %.1f MB/s of log)" % (n, n / (wrote_end - t0), size / (wrote_end - t0) / 1e6))
if drained:
    print("sustained: all %d counted %.3f s after the last write: %.0f merge events/s over the run" %
          (n, drained - wrote_end, n / (drained - t0)))
else:
    print("NOT KEPT UP: /metrics shows %d of %d, 30 s after the last write" % (seen[-1][1] if seen else 0, n))
print("lag write -> /metrics: p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d batches (goal p99 <= 200 ms; "
      "the 10 ms scrape interval of this bench included)" % (pct(0.5), pct(0.99), pct(1.0) if lags else float("nan"), len(lags)))
if rss:
    after = [r for t, r in rss if t >= min(5, seconds / 2)] or [r for t, r in rss]
    print("RSS: %d kB at 1 s, %d kB at %.0f s, max %d kB after warm-up (flat when the last two agree)" %
          (rss[0][1], rss[-1][1], rss[-1][0], max(after)))
EOP
