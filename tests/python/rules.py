"""Shared by the Python tests: the counts the merge audit contract gives for
merge events, and small helpers that run the ttaudit binary.

The counts come from scripts/replay_ref.py, the project's one Python account
of the replay semantics, written on its own from docs/audit-format.md and
sharing no code with ttaudit (docs/testing.md, "Oracles"): the tests hold
`ttaudit replay` of what the kit wrote to the contract applied to the
events the model handed the kit."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
TTAUDIT = os.path.join(ROOT, BUILD, "ttaudit") if not os.path.isabs(BUILD) \
    else os.path.join(BUILD, "ttaudit")
MISSING = "prerequisite missing: "

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import replay_ref  # noqa: E402


# --- the replay semantics ---------------------------------------------------

BASE_RULES = replay_ref.RULES
COUNT_KEYS = ("merges", "taken", "substitutions", "unverified", "prevented",
              "forgone", "fired", "skipped", "shape_fallback")


def _as_event(ev):
    """The merge event as a parsed audit line holds it: sets (the model's
    prefilled) as sorted lists, tuples as lists."""
    return {k: sorted(v) if isinstance(v, (set, frozenset)) else
            list(v) if isinstance(v, tuple) else v for k, v in ev.items()}


class Expected:
    """Counts per rule, garbage and the arm fingerprint, from merge events
    given as the dicts the model passed to the emitter (replay_ref's merge
    step; an event the format does not allow raises replay_ref.Malformed)."""

    def __init__(self, rules):
        self.rules = list(rules)
        self._replay = replay_ref.Replay(None, self.rules)
        self._proc = replay_ref.Proc(self.rules)

    def add(self, ev, max_pos):
        """One merge event; max_pos None: the bound is not known."""
        self._proc.max_pos = max_pos or 0
        self._replay.merge(self._proc, replay_ref.decode_merge(_as_event(ev)), 0)

    @property
    def counts(self):
        return {r: {k: self._proc.c[r][k] for k in COUNT_KEYS} for r in self.rules}

    @property
    def garbage(self):
        return self._proc.garbage

    @property
    def float32_like(self):
        return self._proc.f32

    def consistent(self):
        return sorted(r for r in self.rules
                      if self._proc.fp[r][0] and not self._proc.fp[r][1])


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
