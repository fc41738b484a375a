"""The instrumentation kit on a server shaped like the real one, run by
tests/e2e/61-instrument-standin.sh.

tests/standin/ holds modules at the real paths (models.tt_transformers.tt.
generator, vllm_tt_plugin.*, vllm.v1.engine.core) with the real names and
signatures, written for these tests: an API-server process that starts its
engine core as a multiprocessing spawn child (EngineCore_DP0), and a
generator that runs the async-ahead keep the way tt-metal's does. The
stand-in never imports the kit: it is instrumented only by
`python3 -m ttaudit_emit.run` (the sitecustomize), under `ttaudit capture`.

Each run serves tests/standin/scenario.json (requests chosen so that stale
trace buffers meet coinciding positions), then one HTTP completion, and is
stopped with SIGTERM. The stand-in writes its own account of every keep
decision (STANDIN_TRUTH, from its internals); the kit's audit in the capture
must equal it event by event, `ttaudit replay --json` must count on the
capture what the contract's rules count on that account, and the totals must
be the ones worked out by hand below. The outputs must equal those of the
same engine run without the kit, whatever the kit meets (a broken sink, a
renamed function).

Run: BUILD=build python3 tests/python/test_standin.py [-v]
Exit 0 all passed, 1 a failure, 77 when a ttaudit command it needs is missing.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rules import (BASE_RULES, BUILD, COUNT_KEYS, MISSING, ROOT, TTAUDIT,  # noqa: E402
                   Expected, have_command, read_jsonl, replay_json, run_tests)

PYTHON = os.environ.get("PYTHON", sys.executable)
STANDIN = os.path.join(ROOT, "tests", "standin")
SCENARIO = os.path.join(STANDIN, "scenario.json")
KIT_RUN = os.path.join(ROOT, "tools", "instrument", "ttaudit_emit", "run.py")
PROMPT = "the quick brown fox jumps"
MAX_LEN = 4096
START_TIMEOUT = float(os.environ.get("STANDIN_TIMEOUT", "90"))

# The keep as each variant's code runs it (tests/standin/.../generator_vllm.py).
UNGUARDED = {"STANDIN_CAPS": "true", "STANDIN_PREFILL": "own"}      # mask inert, as on Qwen3.6
MASKED = {"STANDIN_CAPS": "true", "STANDIN_PREFILL": "generator"}   # the Generator fills the mask
GATE_OFF = {"STANDIN_CAPS": "false", "STANDIN_PREFILL": "own"}      # Qwen3.6 upstream since #54565
FORCED = dict(GATE_OFF, TT_FORCE_ASYNC_AHEAD_KEEP="1")
BATCH_GUARD = dict(UNGUARDED, QWEN36_MERGE_BATCH_GUARD="1")

# Worked out by hand from scenario.json (see HAND_NOTES): rule -> (taken,
# substitutions, prevented). The stale takes of the bare keep are five:
#   r3 in row 1 takes r2's entry (the condense remapped row 1 onto row 1's
#     old occupant) at the first decode after r3's prefill;
#   b1 takes a2's 42 and c1 takes a3's 52 from the width-4 buffer written
#     before the batch shrank to widths 1 and 2 (b1 decoded three times at
#     width 2 first, so the slot-reuse mask no longer lists it);
#   s1 takes q1's 72 and t1 s0's 82 (one ahead) the same way, from a width-4
#     buffer whose row 3 was inactive while t2 now runs there.
# The four fresh takes are r2's own entry (same step as r3) and the three
# rows of the last width-4 merge, each the device's own continuation.
HAND = {
    "bare": (9, 5, 0),
    "prefilled_inert": (9, 5, 0),      # the mask never filled: the bare keep
    "prefilled": (6, 2, 3),            # catches r3, c1, t1; misses b1 and s1
    "batch": (4, 3, 2),                # only the buffer with row 3 inactive differs
    "lifetime": (3, 0, 5),             # every stale buffer is older than one step
    "stamp": (4, 0, 5),                # per-request generations refuse all five
    "bound": (9, 5, 0),                # no garbage: the bare keep
}
HAND_NOTES = "taken, substitutions, prevented per rule"


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TTAUDIT_", "QWEN36_", "STANDIN_", "TT_FORCE_"))
           and k not in ("PYTHONPATH", "LD_PRELOAD")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def baseline(extra):
    """The scenario's outputs and the completion's tokens from the same engine
    without the kit and without the server: what a served run must return."""
    p = subprocess.run([PYTHON, os.path.join(STANDIN, "standin_engine.py"), SCENARIO, PROMPT,
                        "6"], env=clean_env(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("baseline engine failed: %s" % p.stderr[-2000:])
    return json.loads(p.stdout.splitlines()[-1])


class Served:
    """One run of the stand-in server: under capture and the kit unless told."""

    def __init__(self, extra, kit=True, capture=True, config=None):
        self.d = tempfile.mkdtemp(prefix="standin.")
        self.cap = os.path.join(self.d, "run.cap.jsonl")
        self.truth_path = os.path.join(self.d, "truth.jsonl")
        port_file = os.path.join(self.d, "port")
        cmd = [PYTHON, os.path.join(STANDIN, "standin_serve.py"), "--port-file", port_file,
               "--scenario", SCENARIO, "--max-model-len", str(MAX_LEN)]
        if kit:
            cmd = [PYTHON, KIT_RUN] + (["--config", config] if config else []) + ["--"] + cmd
        if capture:
            cmd = [TTAUDIT, "capture", "--all-lines", "-o", self.cap, "--"] + cmd
        env = clean_env(dict(extra, STANDIN_TRUTH=self.truth_path))
        self.out_path = os.path.join(self.d, "stdout")
        self.err_path = os.path.join(self.d, "stderr")
        with open(self.out_path, "w") as o, open(self.err_path, "w") as e:
            self.p = subprocess.Popen(cmd, env=env, stdout=o, stderr=e, cwd=self.d)
        try:
            self.port = self._wait_port(port_file)
            self._wait_health()
            self.scenario = self._get("/scenario")
            self.completion = self._post({"prompt": PROMPT, "max_tokens": 6})
        finally:
            self.stop()

    def _wait_port(self, path):
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            if self.p.poll() is not None:
                raise AssertionError("the server exited %d before listening: %s"
                                     % (self.p.returncode, self.stderr()[-3000:]))
            try:
                with open(path) as f:
                    return int(f.read())
            except (OSError, ValueError):
                time.sleep(0.05)
        raise AssertionError("the server did not listen within %.0f s" % START_TIMEOUT)

    def _wait_health(self):
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % self.port,
                                            timeout=5) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                if e.code != 503:
                    raise
            except OSError:
                pass
            if self.p.poll() is not None:
                raise AssertionError("the server exited: %s" % self.stderr()[-3000:])
            time.sleep(0.05)
        raise AssertionError("the server was not healthy within %.0f s" % START_TIMEOUT)

    def _get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                    timeout=30) as r:
            return json.loads(r.read())

    def _post(self, body):
        req = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % self.port,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "X-Request-Id": "kit-1"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["choices"][0]["token_ids"]

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.rc = self.p.returncode

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def records(self):
        return read_jsonl(self.cap) if os.path.exists(self.cap) else []

    def events(self, ev):
        return [r["event"] for r in self.records()
                if r.get("src") == "audit" and r["event"].get("ev") == ev]

    def lines(self):
        """Every line text the capture holds (banner and line records)."""
        return [r.get("text", "") for r in self.records() if r.get("src") in ("banner", "line")]

    def count(self, text):
        """Lines of the capture holding `text` (after any log prefix)."""
        return sum(1 for t in self.lines() if text in t)

    def truth(self, kind):
        if not os.path.exists(self.truth_path):
            return []
        return [r for r in read_jsonl(self.truth_path) if r["kind"] == kind]


def expected_from_truth(merges):
    """Expected counts over the stand-in's own account. Its per-request
    generation stamp is what the kit derives from request ids: equal exactly
    when the slot's request is the one the buffer entry was written for."""
    e = Expected(BASE_RULES)
    for m in merges:
        ev = dict(m)
        if "buf_req" in ev:
            ev["slot_gen"] = [0] * len(ev["host_pos"])
            ev["buf_slot_gen"] = [0 if a == b else 1 for a, b in zip(ev["slot_req"],
                                                                     ev["buf_req"])]
        e.add(ev, MAX_LEN)
    return e


TRUTH_FIELDS = ("step", "dp", "host_pos", "dev_pos", "reset_batch", "mode_switched",
                "prefilled", "buf_step", "slot_req", "buf_req", "taken", "fallback")


def skip_reason():
    if "asan" in BUILD:
        return "the capture shim is not preloaded into python under sanitizers"
    for c in ("capture", "replay"):
        why = have_command(c)
        if why:
            return why
    if subprocess.run([PYTHON, "-c", "import loguru"], stderr=subprocess.DEVNULL).returncode:
        return MISSING + "python3-loguru is not installed for %s" % PYTHON
    return None


class StandinCase(unittest.TestCase):
    runs = {}
    bases = {}

    def setUp(self):
        why = skip_reason()
        if why:
            self.skipTest(why)

    def served(self, name, extra, **kw):
        if name not in self.runs:
            self.runs[name] = Served(extra, **kw)
        return self.runs[name]

    def base(self, extra):
        key = json.dumps(extra, sort_keys=True)
        if key not in self.bases:
            self.bases[key] = baseline(extra)
        return self.bases[key]

    def assertServedUnchanged(self, run, extra):
        self.assertEqual(run.rc, 0, "server exit status: %s" % run.stderr()[-2000:])
        b = self.base(extra)
        self.assertEqual(run.scenario, b["scenario"], "the scenario's outputs changed")
        self.assertEqual(run.completion, b["completion"], "the completion changed")

    def assertAuditIsTruth(self, run):
        got = sorted(run.events("merge"), key=lambda e: (e["step"], e.get("dp", 0)))
        want = run.truth("merge")
        self.assertGreater(len(want), 0, "the stand-in made no keep decision")
        self.assertEqual(len(got), len(want), "merge events: %d in the audit, %d decisions"
                         % (len(got), len(want)))
        for g, w in zip(got, want):
            for k in TRUTH_FIELDS:
                if k in w and not (w.get("fallback") and k in ("slot_req", "buf_req")):
                    self.assertEqual(g.get(k), w[k], "step %d: %s" % (w["step"], k))
        return got, want

    def assertReplayIsTruth(self, run, want):
        e = expected_from_truth(want)
        got = replay_json(run.cap)
        for r in BASE_RULES:
            for k in COUNT_KEYS:
                self.assertEqual(got["rules"][r][k], e.counts[r][k], "%s %s" % (r, k))
        self.assertEqual(got["input"]["capture_lost"], 0)
        self.assertEqual(got["malformed"], 0)
        return got


class TestKeepRuns(StandinCase):
    def test_unguarded_keep(self):
        run = self.served("unguarded", UNGUARDED)
        self.assertServedUnchanged(run, UNGUARDED)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        for r in BASE_RULES:
            hand = HAND["prefilled_inert" if r == "prefilled" else r]
            c = got["rules"][r]
            self.assertEqual((c["taken"], c["substitutions"], c["prevented"]), hand, r)
        self.assertEqual(sorted(got["fingerprint"]["consistent"]), ["bare", "bound", "prefilled"])
        subst = sum(sum(m.get("substituted") or ()) for m in want)
        self.assertEqual(subst, HAND["bare"][1], "the stand-in's own count of substitutions")
        # the events come through the generator's own loguru logger, one line each
        err = run.stderr()
        self.assertGreater(err.count("| INFO     | ttaudit_emit.emit:"), len(want))
        self.assertEqual(run.count("ttaudit: guard none engaged (unguarded merge)"), 1)
        # pid and the data-parallel rank on every event; the engine is the spawn child
        merges = run.events("merge")
        self.assertEqual({m.get("rank") for m in merges}, {0})
        starts = [r for r in run.records() if r.get("src") == "start"]
        pids = {m["pid"] for m in merges}
        self.assertEqual(len(pids), 1)
        self.assertGreaterEqual(len(starts), 2, "no start record of the spawned engine core")
        self.assertNotEqual(pids, {starts[0]["pid"]}, "the audit came from the API server")
        self.assertGreater(len(run.events("trace")), len(want))
        self.assertEqual(run.count("ttaudit: kit error"), 0)
        self.assertEqual(run.count("is keyed by"), 0)
        self.assertEqual(run.count("0 target(s) missing, 0 kit error(s), 0 keep step(s) "
                                   "unobserved, 0 audit line(s) lost, 0 call(s) rejected"), 1)

    def test_slot_reuse_mask(self):
        run = self.served("masked", MASKED)
        self.assertServedUnchanged(run, MASKED)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        for r in BASE_RULES:
            c = got["rules"][r]
            self.assertEqual((c["taken"], c["substitutions"], c["prevented"]), HAND[r], r)
        self.assertEqual(got["fingerprint"]["consistent"], ["prefilled"])
        self.assertEqual(got["fingerprint"]["verdict"], "CONSISTENT")
        self.assertTrue(any(e["ev"] == "prefill" for e in
                            [r["event"] for r in run.records() if r.get("src") == "audit"]))

    def test_forced_keep(self):
        run = self.served("forced", FORCED)
        self.assertServedUnchanged(run, FORCED)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        self.assertEqual(got["rules"]["bare"]["substitutions"], HAND["bare"][1])
        gates = run.events("gate")
        self.assertEqual(len(gates), 1, gates)
        self.assertEqual((gates[0]["keep"], gates[0]["force"], gates[0]["supports_async_decode"]),
                         (True, True, False))
        self.assertEqual(gates[0]["step"], want[0]["step"])
        self.assertEqual(run.count("ttaudit: keep forced on (TT_FORCE_ASYNC_AHEAD_KEEP=1)"), 1)

    def test_gate_off(self):
        run = self.served("gate_off", GATE_OFF)
        self.assertServedUnchanged(run, GATE_OFF)
        self.assertEqual(run.events("merge"), [])
        gates = run.events("gate")
        want = run.truth("gate")
        self.assertGreater(len(want), 0)
        self.assertEqual([g["step"] for g in gates], [w["step"] for w in want])
        self.assertTrue(all(g["keep"] is False and g["force"] is False and
                            g["supports_async_decode"] is False for g in gates))
        self.assertEqual(run.count("ttaudit: keep off (Qwen36ForCausalLM declares "
                                   "model_capabilities['supports_async_decode'] False)"), 1)
        got = replay_json(run.cap)
        self.assertEqual(sorted(got["not_evaluable"]), sorted(BASE_RULES),
                         "a rule was evaluable on an audit where the keep never ran")
        for r in BASE_RULES:
            self.assertEqual(got["rules"][r]["merges"], 0)
        p = subprocess.run([TTAUDIT, "replay", run.cap], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if "never ran" in p.stdout:
            self.assertIn("%d steps" % len(gates), p.stdout)
        else:
            print("\n  (replay does not read gate events yet: checked that no rule is "
                  "evaluable; %d gate events in the capture)" % len(gates))

    def test_batch_guard_and_arm_check(self):
        run = self.served("batch", BATCH_GUARD)
        self.assertServedUnchanged(run, BATCH_GUARD)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        self.assertEqual(got["fingerprint"]["consistent"], ["batch"])
        self.assertEqual(run.count("ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged "
                                   "(env QWEN36_MERGE_BATCH_GUARD=1)"), 1)
        self.assertEqual(run.count("ttaudit: guard none engaged"), 0)
        if have_command("arm"):
            self.skipTest(have_command("arm"))
        spec = os.path.join(run.d, "arms.json")
        with open(spec, "w") as f:
            json.dump({"version": 1, "arms": {"batch": {
                "env": {"QWEN36_MERGE_BATCH_GUARD": "1"},
                "requires": [
                    {"log": "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged \\(env "
                            "QWEN36_MERGE_BATCH_GUARD=1\\)", "why": "the kit's banner"},
                    {"env": "QWEN36_MERGE_BATCH_GUARD", "equals": "1",
                     "why": "the server's environment"},
                    {"audit": "batch", "why": "the decisions are the guard's"}],
                "forbids": [{"log": "ttaudit: guard none engaged", "why": "the control"}]}}},
                f)
        p = subprocess.run([TTAUDIT, "arm", "--spec", spec, "--arm", "batch", "--capture",
                            run.cap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # and the unguarded run's capture does not confirm it
        un = self.served("unguarded", UNGUARDED)
        p = subprocess.run([TTAUDIT, "arm", "--spec", spec, "--arm", "batch", "--capture",
                            un.cap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)


class TestKitFails(StandinCase):
    """Whatever goes wrong in the kit, the server starts and serves unchanged."""

    def test_broken_sink(self):
        extra = dict(UNGUARDED, STANDIN_LOGGER="broken")
        run = self.served("broken", extra)
        self.assertServedUnchanged(run, extra)
        self.assertEqual(run.events("merge"), [])
        err = run.stderr()
        self.assertEqual(err.count("audit write failed"), 1, err[-3000:])
        self.assertIn("the log sink is broken", err)
        self.assertIn("audit line(s) lost", err)

    def test_stdlib_logger_nobody_configured(self):
        # the old documented patch: logging.getLogger(__name__) that vLLM never
        # configures; its INFO records would vanish, so the kit writes to stderr
        extra = dict(UNGUARDED, STANDIN_LOGGER="logging")
        run = self.served("logging", extra)
        self.assertServedUnchanged(run, extra)
        self.assertAuditIsTruth(run)
        self.assertEqual(run.stderr().count("would drop the audit lines"), 1)

    def test_renamed_keep_helper(self):
        extra = dict(UNGUARDED, STANDIN_RENAME="1")
        run = self.served("renamed", extra)
        self.assertServedUnchanged(run, extra)
        self.assertEqual(run.events("merge"), [])
        self.assertEqual(run.count("ttaudit: not instrumented: keep models.tt_transformers.tt."
                                   "generator:merge_async_ahead_decode_tokens: "), 1, run.lines())
        self.assertEqual(run.count("the keep should have run at step"), 1)
        self.assertEqual(run.count("13 keep step(s) unobserved"), 1)
        # the name table, overridden by a config file, finds it again
        cfg = os.path.join(run.d, "names.json")
        with open(cfg, "w") as f:
            json.dump({"targets": {"keep": {"module": "models.tt_transformers.tt.generator",
                                            "name": "_keep_async_ahead_tokens"}}}, f)
        run2 = self.served("renamed-config", extra, config=cfg)
        self.assertServedUnchanged(run2, extra)
        self.assertAuditIsTruth(run2)
        self.assertEqual(run2.count("ttaudit: not instrumented"), 0)

    def test_kit_off_without_the_run_command(self):
        run = self.served("no-kit", UNGUARDED, kit=False)
        self.assertServedUnchanged(run, UNGUARDED)
        self.assertEqual([r for r in run.records() if r.get("src") == "audit"], [])
        self.assertEqual(run.count("ttaudit:"), 0)


def report():
    """The unguarded and masked runs' replays, every rule's counts (for the record)."""
    for name in ("unguarded", "masked"):
        run = StandinCase.runs.get(name)
        if run is None:
            continue
        p = subprocess.run([TTAUDIT, "replay", run.cap], stdout=subprocess.PIPE,
                           universal_newlines=True)
        print("\n== ttaudit replay of the %s stand-in run\n%s" % (name, p.stdout))


def main():
    return run_tests(sys.modules[__name__], report if "-v" in sys.argv[1:] else None)


if __name__ == "__main__":
    sys.exit(main())
