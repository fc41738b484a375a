#!/usr/bin/env python3
"""`make bench`, replay part: throughput and peak RSS of `ttaudit replay --json`
(all six rules) on a 50,000-merge 32-slot audit and a 10x larger one, beside
what reads the same bytes in other ways, in one run on the same files:

  ttaudit replay --json          the scanner (the default path)
  ttaudit replay --json --tree   every line through the full JSON tree (the
                                 parser the scanner is held to)
  python reference               scripts/replay_ref.py, the plain replay
  jq -c .                        parses and prints every value
  simdjson positions             only host_pos/dev_pos of merge lines (On Demand)
  simdjson all values            every value of every line
  cat                            reading the bytes, nothing more
  old binary                     ttaudit replay --json as built from ANCHOR, the
                                 last commit before the scanner (the "today" the
                                 speed goal is a multiple of), built once into the
                                 work directory from this repository's history

simdjson is Debian's libsimdjson-dev: scripts/bench-simdjson.cpp is compiled into
the work directory when the header and g++ are there (a benchmark program
only, never linked into ttaudit); otherwise its rows say it is absent. Then
peak RSS over 10,000 small files for replay and validate, and --jobs 2 over
ten copies of the audit.

Each command runs under GNU time; wall time is the median of --runs runs (one
run on the big file), peak RSS is GNU time's maximum resident set size. Prints
a table and the ratios; exits 0 (figures are reported, not asserted).

usage: bench-replay.py [--build DIR] [--work DIR] [--runs N] [--quick]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def run(cmd, runs, ok=(0,)):
    """Median wall seconds and peak RSS (KiB). GNU time measures the RSS (a
    child forked from this Python would report Python's own pages); the wall
    time is taken here, GNU time's has only 10 ms steps."""
    walls, rss = [], 0
    for _ in range(runs):
        with open(os.devnull, "wb") as null:
            t0 = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=null,
                               stderr=subprocess.PIPE, text=True)
            walls.append(time.perf_counter() - t0)
        if p.returncode not in ok:
            sys.exit("bench-replay: %s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
        rss = max(rss, int(p.stderr.strip().splitlines()[-1]))
    return statistics.median(walls), rss


ANCHOR = "47777c0338a8a00a9f417a7bedb44cc1e9a36944"


def anchor_tool(here, work):
    """ttaudit as of ANCHOR, built into work/anchor-<commit> (once); the path or None."""
    top = os.path.dirname(here)
    d = os.path.join(work, "anchor-" + ANCHOR[:7])
    exe = os.path.join(d, "build", "ttaudit")
    if os.path.exists(exe):
        return exe
    if not shutil.which("git") or not os.path.isdir(os.path.join(top, ".git")) and \
            not os.path.isfile(os.path.join(top, ".git")):
        return None
    os.makedirs(d, exist_ok=True)
    arch = subprocess.run(["git", "-C", top, "archive", ANCHOR], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if arch.returncode:
        print("bench-replay: no commit %s here: %s" % (ANCHOR[:7], arch.stderr.decode()[-300:]))
        return None
    subprocess.run(["tar", "-x", "-C", d], input=arch.stdout, check=True)
    r = subprocess.run(["make", "-C", d, "build/ttaudit"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode or not os.path.exists(exe):
        print("bench-replay: the old binary did not build: %s" % r.stderr[-500:])
        return None
    return exe


def simdjson_tool(here, work):
    """Builds scripts/bench-simdjson.cpp when simdjson and g++ are installed; the path or None."""
    exe = os.path.join(work, "bench-simdjson")
    src = os.path.join(here, "bench-simdjson.cpp")
    if not os.path.exists("/usr/include/simdjson.h") or not shutil.which("g++"):
        return None
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        r = subprocess.run(["g++", "-O3", "-std=c++17", src, "-lsimdjson", "-o", exe],
                           stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print("bench-replay: simdjson program did not build: %s" % r.stderr[-500:])
            return None
    return exe


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
    sj = simdjson_tool(here, a.work)
    old = anchor_tool(here, a.work)
    tools = [
        ("ttaudit replay --json", lambda f: [ttaudit, "replay", "--json", f]),
        ("ttaudit ... --tree", lambda f: [ttaudit, "replay", "--json", "--tree", f]),
        ("python reference", lambda f: [sys.executable, os.path.join(here, "replay_ref.py"), f]),
        ("jq -c .", lambda f: ["jq", "-c", ".", f]),
        ("simdjson positions", (lambda f: [sj, f, "positions"]) if sj else None),
        ("simdjson all values", (lambda f: [sj, f, "all"]) if sj else None),
        ("cat", lambda f: ["cat", f]),
        ("old binary " + ANCHOR[:7], (lambda f: [old, "replay", "--json", f]) if old else None),
    ]
    print("%-24s %-26s %9s %10s %12s %10s" % ("tool", "file", "MB", "MB/s", "merges/s", "peak RSS"))
    res = {}
    for fname, nmerge in ((small, merges), (big, merges * 10)):
        mb = os.path.getsize(fname) / 1e6
        for name, mk in tools:
            if mk is None:
                print("%-24s %-26s   absent (%s)" % (name, os.path.basename(fname),
                      "not built" if name.startswith("old") else "no libsimdjson-dev or g++"))
                continue
            runs = a.runs if fname == small else 1
            wall, rss = run(mk(fname), runs)
            res[(name, fname)] = (mb / wall, rss)
            print("%-24s %-26s %9.1f %10.1f %12.0f %8.1f MiB" % (
                name, os.path.basename(fname), mb, mb / wall, nmerge / wall, rss / 1024))
    for fname in (small, big):
        t = res[("ttaudit replay --json", fname)][0]
        line = "%s: ttaudit %.0f MB/s; %.2fx the tree path, %.1fx the Python replay, %.1fx jq -c ." % (
            os.path.basename(fname), t, t / res[("ttaudit ... --tree", fname)][0],
            t / res[("python reference", fname)][0], t / res[("jq -c .", fname)][0])
        if ("simdjson positions", fname) in res:
            line += ", %.2fx simdjson reading positions only, %.2fx simdjson reading every value" % (
                t / res[("simdjson positions", fname)][0], t / res[("simdjson all values", fname)][0])
        line += ", %.2fx cat" % (t / res[("cat", fname)][0])
        if ("old binary " + ANCHOR[:7], fname) in res:
            line += "; %.2fx the old binary (goal >= 6x)" % (
                t / res[("old binary " + ANCHOR[:7], fname)][0])
        print(line)
    r1 = res[("ttaudit replay --json", small)][1] / 1024
    r2 = res[("ttaudit replay --json", big)][1] / 1024
    print("ttaudit peak RSS: %.1f MiB at 1x, %.1f MiB at 10x (goal <= 16 MiB, flat)" % (r1, r2))

    # many files: memory flat in the file count
    many = os.path.join(a.work, "many")
    n_files = 1000 if a.quick else 10000
    if not os.path.isdir(many) or len(os.listdir(many)) != n_files:
        shutil.rmtree(many, ignore_errors=True)
        os.makedirs(many)
        for i in range(n_files):
            with open(os.path.join(many, "a%05d.jsonl" % i), "w") as f:
                f.write('{"ev":"merge","step":%d,"host_pos":[1,2],"dev_pos":[1,%d],'
                        '"slot_req":["a","b"],"buf_req":["a","c"]}\n' % (i, 3 + i % 2))
    files = sorted(os.path.join(many, x) for x in os.listdir(many))
    w1, m1 = run([ttaudit, "replay"] + files, 1)
    w2, m2 = run([ttaudit, "validate", "--rule", "batch"] + files, 1, ok=(0, 1))
    print("%d files: replay %.2f s, peak RSS %.1f MiB; validate %.2f s, peak RSS %.1f MiB "
          "(goal <= 16 MiB)" % (n_files, w1, m1 / 1024, w2, m2 / 1024))

    # parallel readers across files
    tenfold = []
    for i in range(10):
        p = os.path.join(a.work, "copy%d.jsonl" % i)
        if not os.path.exists(p):
            with open(p, "wb") as out, open(small, "rb") as src:
                # each copy differs in its first line, so none is counted as a duplicate
                out.write(b'{"ev":"decode","step":%d}\n' % i)
                out.write(src.read())
        tenfold.append(p)
    s1, _ = run([ttaudit, "replay", "--json"] + tenfold, 1)
    s2, _ = run([ttaudit, "replay", "--json", "--jobs", "2"] + tenfold, 1)
    mb = sum(os.path.getsize(p) for p in tenfold) / 1e6
    print("ten files: %.0f MB/s with one reader, %.0f MB/s with --jobs 2 (%.2fx; %d cores here)" % (
        mb / s1, mb / s2, s1 / s2, os.cpu_count() or 1))


if __name__ == "__main__":
    main()
