"""Shared by the Python tests: the replay semantics of the merge audit
contract written on their own from docs/audit-format.md (so that the tests
hold `ttaudit replay` to an independent account), and small helpers that run
the ttaudit binary."""

import json
import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
TTAUDIT = os.path.join(ROOT, BUILD, "ttaudit") if not os.path.isabs(BUILD) \
    else os.path.join(BUILD, "ttaudit")
MISSING = "prerequisite missing: "


# --- the replay semantics ---------------------------------------------------

BASE_RULES = ("bare", "prefilled", "batch", "lifetime", "stamp", "bound")
COUNT_KEYS = ("merges", "taken", "substitutions", "unverified", "prevented",
              "forgone", "fired", "skipped", "shape_fallback")


def allowed_set(rule, ev, active, max_pos):
    """The set G a rule allows on a merge event, or None when the event lacks
    a field the rule needs (skipped)."""
    if "+" in rule:
        g = set(active)
        for part in rule.split("+"):
            gp = allowed_set(part, ev, active, max_pos)
            if gp is None:
                return None
            g &= gp
        return g
    host, dev = ev["host_pos"], ev["dev_pos"]
    if rule == "bare":
        return set(active)
    if rule == "prefilled":
        if ev.get("prefilled") is None:
            return None
        return set(active) - set(ev["prefilled"])
    if rule == "batch":
        same = all((dev[s] != -1) == (host[s] != -1) for s in range(len(host)))
        return set(active) if same else set()
    if rule == "lifetime":
        if ev.get("buf_step") is None:
            return None
        ok = ev["buf_step"] == ev["step"] - 1 and not ev.get("mode_switched", False)
        return set(active) if ok else set()
    if rule == "stamp":
        if ev.get("slot_gen") is not None and ev.get("buf_slot_gen") is not None:
            return {s for s in active if ev["slot_gen"][s] == ev["buf_slot_gen"][s]}
        if ev.get("gen") is not None and ev.get("buf_gen") is not None:
            return set(active) if ev["gen"] == ev["buf_gen"] else set()
        return None
    if rule == "bound":
        if max_pos is None:
            return None
        return {s for s in active if -1 <= dev[s] < max_pos}
    raise AssertionError("the test does not know rule %r" % rule)


def stale_truth(ev, s):
    """True (stale), False (current) or None (unknown), strongest evidence first."""
    sr, br = ev.get("slot_req"), ev.get("buf_req")
    if sr is not None and br is not None and sr[s] is not None and br[s] is not None:
        return sr[s] != br[s]
    if ev.get("slot_gen") is not None and ev.get("buf_slot_gen") is not None:
        return ev["slot_gen"][s] != ev["buf_slot_gen"][s]
    if ev.get("gen") is not None and ev.get("buf_gen") is not None:
        return ev["gen"] != ev["buf_gen"]
    if ev.get("buf_step") is not None:
        return ev["buf_step"] != ev["step"] - 1 or s in set(ev.get("prefilled") or ())
    return None


def float32_like(v):
    if not -(1 << 31) <= v < (1 << 31):
        return False
    f = struct.unpack("<f", struct.pack("<i", v))[0]
    return f == f and abs(f) != float("inf") and 1.0 <= abs(f) <= float(1 << 24)


class Expected:
    """Counts per rule, garbage and the arm fingerprint, from merge events
    given as the dicts the model passed to the emitter."""

    def __init__(self, rules):
        self.rules = list(rules)
        self.counts = {r: dict.fromkeys(COUNT_KEYS, 0) for r in self.rules}
        self.garbage = 0
        self.float32_like = 0
        self.fp_evaluated = dict.fromkeys(self.rules, 0)
        self.fp_mismatch = dict.fromkeys(self.rules, 0)
        self.by_truth = {"request": 0, "stamp_agrees": 0}

    def add(self, ev, max_pos):
        host, dev = ev["host_pos"], ev["dev_pos"]
        h = len(host)
        if len(dev) < h:
            for r in self.rules:
                self.counts[r]["merges"] += 1
                self.counts[r]["shape_fallback"] += 1
            return
        gpos = max_pos if max_pos is not None else 1 << 24
        for s in range(h):
            if dev[s] < -1 or dev[s] >= gpos:
                self.garbage += 1
                self.float32_like += float32_like(dev[s])
        active = [s for s in range(h) if host[s] != -1]
        bare = {s for s in active if dev[s] == host[s] or dev[s] == host[s] + 1}
        truth = {s: stale_truth(ev, s) for s in active}
        for r in self.rules:
            c = self.counts[r]
            c["merges"] += 1
            g = allowed_set(r, ev, active, max_pos)
            if g is None:
                c["skipped"] += 1
                continue
            if active and g != set(active):
                c["fired"] += 1
            take = bare & g
            for s in active:
                if s in take:
                    c["taken"] += 1
                    if truth[s] is None:
                        c["unverified"] += 1
                    elif truth[s]:
                        c["substitutions"] += 1
                elif s in bare:
                    if truth[s] is True:
                        c["prevented"] += 1
                    elif truth[s] is False:
                        c["forgone"] += 1
            if ev.get("taken") is not None:
                self.fp_evaluated[r] += 1
                if any((s in take) != ev["taken"][s] for s in active):
                    self.fp_mismatch[r] += 1

    def consistent(self):
        return sorted(r for r in self.rules
                      if self.fp_evaluated[r] and not self.fp_mismatch[r])


# --- running ttaudit ---------------------------------------------------------

def have_command(name):
    if not os.access(TTAUDIT, os.X_OK):
        return "%s%s is not built" % (MISSING, TTAUDIT)
    p = subprocess.run([TTAUDIT, name, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if "is not a command" in p.stderr:
        return "%sttaudit %s does not exist yet" % (MISSING, name)
    return None


def replay_json(path):
    p = subprocess.run([TTAUDIT, "replay", "--json", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode not in (0, 1):
        raise AssertionError("ttaudit replay --json %s exited %d: %s"
                             % (path, p.returncode, p.stderr.strip()))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError("ttaudit replay --json printed no JSON (%s): %s"
                             % (e, p.stdout[:300])) from None


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def run_tests(module, after=None):
    """Runs the unittest cases of `module`; exit status 0 all passed, 1 a
    failure, 77 when something was skipped for a missing prerequisite.
    `after` runs between the tests and the verdict (verbose reports)."""
    import sys
    import unittest
    verbosity = 2 if "-v" in sys.argv[1:] else 1
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    res = unittest.TextTestRunner(verbosity=verbosity, stream=sys.stdout).run(suite)
    if after is not None:
        after()
    if res.failures or res.errors:
        return 1
    missing = sorted({why for _, why in res.skipped if why.startswith(MISSING)})
    if missing:
        print("passed what could run; skipped: " + "; ".join(missing))
        return 77
    return 0
