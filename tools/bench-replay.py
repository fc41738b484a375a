#!/usr/bin/env python3
"""`make bench`, replay part: throughput and peak RSS of `ttaudit replay --json`
(all six rules) against the plain-Python reference replay (tools/replay_ref.py)
and `jq -c .`, on a 50,000-merge 32-slot audit and a 10x larger one.

Each command runs under GNU time; wall time is the median of --runs runs, peak
RSS is GNU time's maximum resident set size. Prints a table and the
ratios; exits 0 (figures are reported, not asserted).

usage: bench-replay.py [--build DIR] [--work DIR] [--runs N] [--quick]
"""
import argparse
import os
import statistics
import subprocess
import sys


def run(cmd, runs):
    """Median wall seconds and peak RSS (KiB). GNU time measures the RSS: a
    child forked from this Python would report Python's own pages."""
    walls, rss = [], 0
    for _ in range(runs):
        with open(os.devnull, "wb") as null:
            p = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, stdout=null,
                               stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit("bench-replay: %s failed: %s" % (" ".join(cmd), p.stderr))
        wall, kib = p.stderr.strip().splitlines()[-1].split()
        walls.append(float(wall))
        rss = max(rss, int(kib))
    return statistics.median(walls), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", default="build/bench")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1/10 sizes, for a smoke run")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    merges = 5000 if a.quick else 50000
    small = os.path.join(a.work, "audit-%dk-32slot.jsonl" % (merges // 1000))
    big = os.path.join(a.work, "audit-%dk-32slot.jsonl" % (merges * 10 // 1000))
    if not os.path.exists(small):
        subprocess.check_call([sys.executable, os.path.join(here, "gencorpus.py"), "--seed", "1",
                               "--slots", "32", "--merges", str(merges), "--out", small])
    if not os.path.exists(big):
        # ten copies: a valid audit ten times the size, made in seconds
        with open(big, "wb") as out, open(small, "rb") as src:
            data = src.read()
            for _ in range(10):
                out.write(data)
    ttaudit = os.path.join(a.build, "ttaudit")
    tools = [
        ("ttaudit replay --json", lambda f: [ttaudit, "replay", "--json", f]),
        ("python json reference", lambda f: [sys.executable, os.path.join(here, "replay_ref.py"), f]),
        ("jq -c .", lambda f: ["jq", "-c", ".", f]),
    ]
    print("%-24s %-26s %9s %10s %12s %10s" % ("tool", "file", "MB", "MB/s", "merges/s", "peak RSS"))
    res = {}
    for fname, nmerge in ((small, merges), (big, merges * 10)):
        mb = os.path.getsize(fname) / 1e6
        for name, mk in tools:
            runs = a.runs if fname == small else 1
            wall, rss = run(mk(fname), runs)
            res[(name, fname)] = (mb / wall, rss)
            print("%-24s %-26s %9.1f %10.1f %12.0f %8.1f MiB" % (
                name, os.path.basename(fname), mb, mb / wall, nmerge / wall, rss / 1024))
    for fname in (small, big):
        t = res[("ttaudit replay --json", fname)][0]
        p = res[("python json reference", fname)][0]
        j = res[("jq -c .", fname)][0]
        print("%s: ttaudit is %.1fx the Python replay's throughput, %.1fx jq -c ." % (
            os.path.basename(fname), t / p, t / j))
    r1 = res[("ttaudit replay --json", small)][1] / 1024
    r2 = res[("ttaudit replay --json", big)][1] / 1024
    print("ttaudit peak RSS: %.1f MiB at 1x, %.1f MiB at 10x (goal <= 16 MiB, flat)" % (r1, r2))


if __name__ == "__main__":
    main()
