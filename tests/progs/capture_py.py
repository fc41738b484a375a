"""A Python host for the capture e2e tests: audit lines and banners through
print, logging and sys.stderr.write from several threads (taking turns, so
the output is the same on every run), a forked child, a subprocess, os.write
and a JSONL file of its own. Exits 7.

usage: capture_py.py OUTDIR ROUNDS
"""
import json
import logging
import os
import subprocess
import sys
import threading

outdir, rounds = sys.argv[1], int(sys.argv[2])
log = logging.getLogger("generator")
h = logging.StreamHandler(sys.stderr)
h.setFormatter(logging.Formatter("%(levelname)s 11-29 20:41:02 [generator.py:1930] %(message)s"))
log.addHandler(h)
log.setLevel(logging.INFO)


def audit(who, seq, **kw):
    ev = {"ev": "merge", "who": who, "seq": seq, "step": seq, "host_pos": [22, 25, -1], "dev_pos": [23, -1, -1]}
    ev.update(kw)
    return "MERGE_AUDIT " + json.dumps(ev, separators=(",", ":"))


log.info("vLLM API server version 0.9.2")
log.info("QWEN36_MERGE_LIFETIME_GUARD engaged: merge requires a buffer written by the immediately preceding decode")
print("INFO plain line on stdout with {\"not\": \"an audit\"}")

# Threads take turns so the bytes on stdout/stderr are the same on every run.
N_THREADS = 4
turn = [0]
cv = threading.Condition()


def worker(k):
    for i in range(rounds):
        with cv:
            cv.wait_for(lambda: turn[0] % N_THREADS == k)
            if i % 3 == 0:
                print(audit("print-%d" % k, i))
            elif i % 3 == 1:
                log.info(audit("logging-%d" % k, i))
            else:
                sys.stderr.write(audit("stderr-%d" % k, i)[:20])
                sys.stderr.write(audit("stderr-%d" % k, i)[20:] + "\n")
            turn[0] += 1
            cv.notify_all()


threads = [threading.Thread(target=worker, args=(k,)) for k in range(N_THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()

# A JSONL audit file of its own (captured when TTAUDIT_WATCH matches it).
with open(os.path.join(outdir, "audit-own.jsonl"), "w") as f:
    for i in range(rounds):
        f.write(json.dumps({"ev": "merge", "who": "file", "seq": i, "step": i, "host_pos": [5], "dev_pos": [6]}, separators=(",", ":")) + "\n")

sys.stdout.flush()
sys.stderr.flush()
pid = os.fork()
if pid == 0:
    for i in range(rounds):
        print(audit("fork", i))
    log.info("QWEN36_MERGE_BATCH_GUARD engaged: merge requires the buffer's active-slot pattern to match the batch")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)

subprocess.run([sys.executable, "-c",
                "import sys\nfor i in range(%d):\n    sys.stderr.write('MERGE_AUDIT {\"ev\":\"merge\",\"who\":\"subprocess\",\"seq\":%%d,\"step\":1,\"host_pos\":[1],\"dev_pos\":[2]}\\n' %% i)\n" % rounds],
               check=True)
os.write(1, (audit("oswrite", 0) + "\n").encode())
sys.stdout.flush()
sys.exit(7)
