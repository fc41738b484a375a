"""A CPython host for the capture tests: appends audit lines to its own
JSONL file (watched with --watch) before and after running children the
way vLLM does: subprocess.run (CPython's _posixsubprocess: vfork, then
close_range/dup2 in the child, in the parent's memory) and a multiprocessing
"spawn" child that appends to the same file. Writes N lines per phase.

usage: capture_vfork.py FILE N
"""
import json
import multiprocessing as mp
import os
import subprocess
import sys


def line(who, i):
    return json.dumps({"ev": "merge", "who": who, "seq": i, "step": i}, separators=(",", ":")) + "\n"


def child(path, n):
    with open(path, "a") as f:
        for i in range(n):
            f.write(line("spawn-child", i))
            f.flush()


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    f = open(path, "a")
    for i in range(n):
        f.write(line("before", i))
        f.flush()
    subprocess.run(["true"], check=True)
    for i in range(n):
        f.write(line("after-subprocess", i))
        f.flush()
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=child, args=(path, n))
    p.start()
    p.join()
    for i in range(n):
        f.write(line("after-spawn", i))
        f.flush()
    out = subprocess.run([sys.executable, "-c", "print('{\"ev\":\"merge\",\"who\":\"grandchild\"}')"],
                         capture_output=True, text=True, check=True).stdout
    f.write(out)
    f.close()
    # stdout, too, after the children
    sys.stdout.write(line("stdout-after", 0))


if __name__ == "__main__":
    main()
