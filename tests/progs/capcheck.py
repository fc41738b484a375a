"""Compares a capture with what really reached a file descriptor.

The ground truth is the content of the file or pipe the program wrote
(TRUTH, read as bytes). Its lines are what the capture must hold for the
selected records (by fd and, optionally, pid): every line of TRUTH is looked
for in the capture, and every captured line in TRUTH. A line is an audit line
when the text from its first '{' is one JSON object with a string "ev" (then
the capture's `event` is compared, as JSON), otherwise its text is compared
(banner and line records: run the capture with --all-lines). Bytes that are
not UTF-8 are read as Python's surrogateescape does, which is how the capture
writes them (\\udcNN).

Prints one line:
  capcheck: truth N lines, captured N, missing N, invented N, lost N, uncertain N, partial N
and exits 1 when a line was invented, when more lines are missing than the
capture's lost and uncertain records account for, or when an --expect
condition does not hold. `lost` and `uncertain` are the sums of the counts of
those records (of the selected pids; a record with an fd counts only for the
selected fd).

usage: capcheck.py TRUTH CAPTURE [--fd N | --watched] [--pid P ...]
                   [--expect captured=N] [--expect missing=N] ...
"""
import argparse
import collections
import json
import sys


def key_of(text):
    """('audit', canonical JSON) or ('text', text) for one line's text."""
    brace = text.find("{")
    if brace >= 0:
        try:
            obj = json.loads(text[brace:])
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("ev"), str):
            return ("audit", json.dumps(obj, sort_keys=True, ensure_ascii=False))
    if text.endswith("\r"):
        text = text[:-1]
    return ("text", text)


def truth_lines(path):
    data = open(path, "rb").read().decode("utf-8", "surrogateescape")
    parts = data.split("\n")
    last = parts.pop()
    keys = [key_of(p) for p in parts]
    partial = key_of(last) if last else None
    return keys, partial


def show(k):
    s = repr(k)
    return s if len(s) <= 200 else s[:200] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("capture")
    ap.add_argument("--fd", type=int)
    ap.add_argument("--watched", action="store_true", help="records of fds above 2")
    ap.add_argument("--pid", type=int, action="append")
    ap.add_argument("--expect", action="append", default=[])
    a = ap.parse_args()

    want, want_partial = truth_lines(a.truth)
    # The capture must be strict UTF-8 JSON lines: open() fails otherwise.
    recs = []
    try:
        with open(a.capture, encoding="utf-8", errors="strict") as f:
            for n, line in enumerate(f, 1):
                recs.append(json.loads(line))
    except ValueError as e:   # UnicodeDecodeError and JSONDecodeError
        print("capcheck: FAIL: %s: not UTF-8 JSON lines: %s" % (a.capture, e))
        return 1

    def fd_ok(fd):
        if fd is None:
            return True
        if a.watched:
            return fd > 2
        return a.fd is None or fd == a.fd

    def pid_ok(r):
        return not a.pid or r.get("pid") in a.pid

    got = []
    got_partial = []
    lost = uncertain = 0
    for r in recs:
        src = r.get("src")
        if not pid_ok(r):
            continue
        if src == "lost" and fd_ok(r.get("fd")):
            lost += r.get("count", 0)
        elif src == "uncertain" and fd_ok(r.get("fd")):
            uncertain += r.get("count", 0)
        elif src in ("audit", "banner", "line") and "fd" in r and fd_ok(r["fd"]):
            if src == "audit":
                k = ("audit", json.dumps(r["event"], sort_keys=True, ensure_ascii=False))
            else:
                k = key_of(r["text"]) if src == "line" else ("text", r["text"])
                # a banner whose text is an audit line cannot happen; text as is
            (got_partial if r.get("partial") else got).append(k)

    tw = collections.Counter(want)
    cg = collections.Counter(got)
    captured = sum((tw & cg).values())
    missing = sum((tw - cg).values())
    invented = sum((cg - tw).values())
    # A partial record says the bytes reached the fd with no newline after
    # them before the process ended: the truth's unterminated last line, or
    # the start of a line another process (an exec'd image, a child) ended.
    partial_ok = 0
    texts = [k[1] for k in want if k[0] == "text"]
    wanted = set(want)
    for k in got_partial:
        # (an exec that failed: the line went on, and its whole is a truth line)
        if k == want_partial or k in wanted or (k[0] == "text" and any(t.startswith(k[1]) for t in texts)):
            partial_ok += 1
        else:
            invented += 1
            print("  invented partial: " + show(k))
    missing_partial = 1 if want_partial is not None and want_partial not in got_partial else 0
    counts = {
        "truth": len(want), "captured": captured, "missing": missing, "invented": invented,
        "lost": lost, "uncertain": uncertain, "partial": partial_ok,
        "missing_partial": missing_partial,
    }
    print("capcheck: truth %(truth)d lines, captured %(captured)d, missing %(missing)d, "
          "invented %(invented)d, lost %(lost)d, uncertain %(uncertain)d, partial %(partial)d" % counts)
    bad = []
    if invented:
        for k in list((cg - tw).elements())[:5]:
            print("  invented: " + show(k))
        bad.append("invented lines")
    if missing > lost + uncertain:
        for k in list((tw - cg).elements())[:5]:
            print("  missing: " + show(k))
        bad.append("%d missing lines, only %d accounted for" % (missing, lost + uncertain))
    for e in a.expect:
        name, _, val = e.partition("=")
        op = "="
        if name.endswith(">"):
            name, op = name[:-1], ">="
        elif name.endswith("<"):
            name, op = name[:-1], "<="
        v = int(val)
        c = counts[name]
        if (op == "=" and c != v) or (op == ">=" and c < v) or (op == "<=" and c > v):
            bad.append("%s is %d, expected %s %d" % (name, c, op, v))
    for b in bad:
        print("capcheck: FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
