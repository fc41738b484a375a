"""Holds a watch exposition to `ttaudit replay --json` of the same input.

usage: expo-vs-replay.py EXPOSITION REPLAY.json
Sums every ttaudit_* counter over source, pid and host, and compares it with
the replay's totals, count by count; prints the differences, exits 1 on any.
"""
import json
import re
import sys

LINE = re.compile(r'^([a-z_:]+)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def read(path):
    series = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = LINE.match(line.rstrip("\n"))
            if not m:
                sys.exit("unparsable exposition line: %r" % line)
            labels = dict(LABEL.findall(m.group(3) or ""))
            series.append((m.group(1), labels, float(m.group(4))))
    return series


def total(series, name, **want):
    return sum(v for n, l, v in series if n == name and all(l.get(k) == x for k, x in want.items()))


def main():
    series = read(sys.argv[1])
    rep = json.load(open(sys.argv[2]))
    bad = []
    fields = {"taken": "taken", "unverified": "unverified", "prevented": "prevented",
              "forgone": "forgone", "fired": "fired", "skipped": "skipped"}
    for rule, c in rep["rules"].items():
        for field, metric in fields.items():
            got = total(series, "ttaudit_%s_total" % metric, rule=rule)
            if got != c[field]:
                bad.append("%s %s: watch %g, replay %d" % (rule, field, got, c[field]))
        got = total(series, "ttaudit_substitutions_total", rule=rule)
        if got != c["substitutions"]:
            bad.append("%s substitutions: watch %g, replay %d" % (rule, got, c["substitutions"]))
        for ev, n in c["evidence"]["substitutions"].items():
            got = total(series, "ttaudit_substitutions_total", rule=rule, evidence=ev)
            if got != n:
                bad.append("%s substitutions by %s: watch %g, replay %d" % (rule, ev, got, n))
        merges = c["merges"]
    if total(series, "ttaudit_merges_total") != merges:
        bad.append("merges: watch %g, replay %d" % (total(series, "ttaudit_merges_total"), merges))
    for name, want in (("ttaudit_garbage_positions_total", rep["garbage"]["count"]),
                       ("ttaudit_malformed_lines_total", rep["malformed"])):
        if total(series, name) != want:
            bad.append("%s: watch %g, replay %d" % (name, total(series, name), want))
    for reason, key in (("capture", "capture_lost"), ("uncertain", "capture_uncertain")):
        got = total(series, "ttaudit_lost_lines_total", reason=reason)
        if got != rep["input"][key]:
            bad.append("lost %s: watch %g, replay %d" % (reason, got, rep["input"][key]))
    # the arm: a rule the replay calls consistent is 1 on every series of it, one it rules out 0 somewhere
    for rule in rep["fingerprint"]["consistent"]:
        vals = [v for n, l, v in series if n == "ttaudit_arm_consistent" and l.get("rule") == rule]
        if not vals or min(vals) != 1:
            bad.append("arm %s: consistent in the replay, %s in watch" % (rule, vals))
    print("\n".join(bad))
    sys.exit(1 if bad else 0)


main()
