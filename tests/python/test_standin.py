"""The instrumentation kit on a server shaped like the real stack, run by
tests/e2e/61-instrument-standin.sh.

tests/standin/ follows upstream's shapes (tenstorrent/tt-metal's generator at
50868c00, its keep inline in decode_forward; the TT plugin's persistent
batch, runner and decode submission at tenstorrent/vllm dev b4dd0fa6; vLLM's
engine-core entry): an API-server process that starts its engine core as a
multiprocessing spawn child (EngineCore_DP0), over real torch tensors. The
stand-in never imports the kit: it is instrumented only by `python3 -m
ttaudit_emit.run` (the sitecustomize), under `ttaudit capture`.

Each run serves tests/standin/scenario.json, then one HTTP completion, and
is stopped with SIGTERM. The stand-in writes its own account (STANDIN_TRUTH:
the host inputs, what the model decoded with, who wrote each buffer entry);
the kit's audit in the capture must equal it merge by merge, `ttaudit replay
--json` must count on the capture what the contract's rules count on that
account (tests/python/rules.py, written from the spec on its own), and the
totals must be the ones below. The outputs must equal those of the same
engine run without the kit and without the server.

Run: BUILD=build python3 tests/python/test_standin.py [-v]
STANDIN_GENERATOR=DIR runs it over DIR/models/tt_transformers/tt/generator.py
instead of the stand-in's (tt-metal's own file, for a run by hand; the
patched-guard case always patches the stand-in).
Exit 0 all passed, 1 a failure, 77 when a ttaudit command it needs is missing.
"""

import json
import os
import shutil
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
PATCH = os.path.join(STANDIN, "patches", "0022-batch-composition-guard.patch")
KIT_RUN = os.path.join(ROOT, "tools", "instrument", "ttaudit_emit", "run.py")
PROMPT = "the quick brown fox jumps"
MAX_LEN = 4096
START_TIMEOUT = float(os.environ.get("STANDIN_TIMEOUT", "120"))
GENERATOR = os.environ.get("STANDIN_GENERATOR")

# The keep as each variant's code runs it.
ASYNC = {"STANDIN_CAPS": "true"}                  # a model that declares async decode
UNDECLARED = {"STANDIN_CAPS": "undeclared"}       # tt-metal's LlamaForCausalLM as it is
BATCH_GUARD = dict(ASYNC, QWEN36_MERGE_BATCH_GUARD="1")   # with the seeds' patch 0022

# rule -> (taken, substitutions, prevented) on scenario.json, found with the
# stand-in and explained from its account. The persistent batch removes the
# running requests on every prefill step and adds them back after it, so rows
# change hands, and the stale entries met are:
#   step 8, row 0: q2, just prefilled, meets q9's entry at its own position
#     20; the slot-reuse mask (the code's) stops it;
#   step 11, rows 1 and 2: q9 and q2 came back into each other's rows and
#     meet each other's entries (and q3's) at 22: taken, two substitutions;
#     the buffer's active pattern differs from the batch's, so the batch
#     guard stops them;
#   step 13, rows 1 and 2: q2 and q3 swapped rows, both at 23, and the
#     patterns agree: two more the batch guard lets through;
#   lifetime (the buffer is from two steps back) and the per-request stamp
#     stop all five; the code itself (bare keep with the mask) makes four.
HAND = {
    "bare": (12, 5, 0),
    "prefilled": (11, 4, 1),
    "batch": (5, 2, 3),
    "lifetime": (4, 0, 5),
    "stamp": (7, 0, 5),
    "bound": (12, 5, 0),
}


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TTAUDIT_", "QWEN36_", "STANDIN_"))
           and k not in ("PYTHONPATH", "LD_PRELOAD")}
    env["PYTHONUNBUFFERED"] = "1"
    if GENERATOR:
        env["STANDIN_GENERATOR"] = GENERATOR
    env.update(extra)
    return env


def baseline(extra):
    """The scenario's outputs and the completion's tokens from the same engine
    without the kit and without the server: what a served run must return."""
    p = subprocess.run([PYTHON, os.path.join(STANDIN, "standin_engine.py"), SCENARIO, PROMPT,
                        "6"], env=clean_env(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("baseline engine failed: %s" % p.stderr[-2000:])
    return json.loads(p.stdout.splitlines()[-1])


def patched_generator():
    """A copy of the 50868c00 stand-in with the seeds' batch guard applied."""
    d = tempfile.mkdtemp(prefix="standin-0022.")
    tree = os.path.join(d, "generator")
    shutil.copytree(os.path.join(STANDIN, "generator-50868c00"), tree)
    with open(PATCH) as f:
        p = subprocess.run(["patch", "-p1", "-s"], stdin=f, cwd=tree, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0:
        raise AssertionError("the patch does not apply: %s" % p.stdout)
    return tree


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
                                    timeout=60) as r:
            return json.loads(r.read())

    def _post(self, body):
        req = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % self.port,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "X-Request-Id": "kit-1"})
        with urllib.request.urlopen(req, timeout=60) as r:
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

    def judged(self):
        """The stand-in's account of every reset decode: {(step, dp): exec record}."""
        out = {}
        if os.path.exists(self.truth_path):
            for r in read_jsonl(self.truth_path):
                if r["kind"] == "exec" and "taken" in r:
                    out[(r["step"], r["dp"])] = r
        return out


def expected_from_truth(judged):
    """The contract's counts over the stand-in's account: each judged decode
    as the merge event it is, with the request in each row and the request
    each compared entry was written for."""
    e = Expected(BASE_RULES)
    for (step, _dp), t in sorted(judged.items()):
        e.add({"step": step, "host_pos": t["host_pos"], "dev_pos": t["dev_pos"],
               "prefilled": t["prefilled"], "buf_step": t["buf_step"],
               "mode_switched": t["mode_switched"], "slot_req": t["rows"],
               "buf_req": t["buf_req"],
               "slot_gen": [0] * len(t["rows"]),
               "buf_slot_gen": [0 if a == b else 1 for a, b in zip(t["rows"], t["buf_req"])]},
              MAX_LEN)
    return e


def skip_reason():
    if "asan" in BUILD:
        return "the capture shim is not preloaded into python under sanitizers"
    for c in ("capture", "replay"):
        why = have_command(c)
        if why:
            return why
    for mod, pkg in (("loguru", "python3-loguru"), ("torch", "python3-torch")):
        if subprocess.run([PYTHON, "-c", "import " + mod], stderr=subprocess.DEVNULL).returncode:
            return MISSING + "%s is not installed for %s" % (pkg, PYTHON)
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
        got = {(m["step"], m.get("dp", 0)): m for m in run.events("merge")}
        want = run.judged()
        self.assertGreater(len(want), 0, "the stand-in judged no reset decode")
        self.assertEqual(sorted(got), sorted(want), "the merges are not the reset decodes")
        for k, t in want.items():
            m = got[k]
            for f in ("host_pos", "host_tok", "dev_pos", "dev_tok", "prefilled", "buf_step",
                      "buf_req", "mode_switched"):
                self.assertEqual(m.get(f), t[f], "step %d: %s" % (k[0], f))
            self.assertEqual(m["slot_req"], t["rows"], "step %d: slot_req" % k[0])
            for s, hp in enumerate(m["host_pos"]):
                if hp != -1 and not t["ambiguous"][s]:
                    self.assertEqual(m["taken"][s], t["taken"][s], "step %d slot %d: taken"
                                     % (k[0], s))
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
    def test_the_keep_as_the_code_runs_it(self):
        run = self.served("async", ASYNC)
        self.assertServedUnchanged(run, ASYNC)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        for r in BASE_RULES:
            c = got["rules"][r]
            self.assertEqual((c["taken"], c["substitutions"], c["prevented"]), HAND[r], r)
        # the code applies the slot-reuse mask: its decisions are that rule's
        self.assertEqual(got["fingerprint"]["consistent"], ["prefilled"])
        made = sum(sum(t["substituted"]) for t in want.values())
        self.assertEqual(made, HAND["prefilled"][1], "the stand-in's own count of substitutions")
        # the events come through the generator's own loguru logger, one line each
        err = run.stderr()
        # and name the generator's code, not the kit's (loguru's depth): the
        # frame the kit observed (the keep's decode_forward) or the call site
        audit = [l for l in err.splitlines() if "MERGE_AUDIT {" in l]
        self.assertGreater(len(audit), len(want))
        self.assertFalse([l for l in audit if "| ttaudit_emit." in l])
        merge_lines = [l for l in audit if '"ev":"merge"' in l]
        self.assertEqual(len(merge_lines), len(merges := run.events("merge")))
        self.assertTrue(all("| INFO     | models.tt_transformers.tt.generator:decode_forward:" in l
                            for l in merge_lines), merge_lines[:2])
        self.assertEqual(run.count("ttaudit: guard none engaged (unguarded merge)"), 1)
        self.assertEqual(run.count("ttaudit: keep: inline in Generator.decode_forward at "
                                   "generator.py:"), 1)
        # pid and the data-parallel rank on every event; the engine is the spawn child
        self.assertEqual({m.get("rank") for m in merges}, {0})
        starts = [r for r in run.records() if r.get("src") == "start"]
        pids = {m["pid"] for m in merges}
        self.assertEqual(len(pids), 1)
        self.assertGreaterEqual(len(starts), 2, "no start record of the spawned engine core")
        self.assertNotEqual(pids, {starts[0]["pid"]}, "the audit came from the API server")
        # vLLM's engine ids (PR #27987), the HTTP id of the completion among them
        self.assertTrue(any(r is not None and r.startswith("kit-1-")
                            for m in merges for r in m["slot_req"]) or
                        any(e["req"].startswith("kit-1-") for e in run.events("request")))
        self.assertEqual(run.count("ttaudit: kit error"), 0)
        self.assertEqual(run.count("0 target(s) missing, 0 kit error(s), 0 keep step(s) "
                                   "unobserved, 0 slot(s) whose decision and fed inputs "
                                   "disagreed, 0 audit line(s) lost, 0 call(s) rejected"), 1)

    def test_undeclared_capability(self):
        # tt-metal's own LlamaForCausalLM declares nothing: the keep does not run
        run = self.served("undeclared", UNDECLARED)
        self.assertServedUnchanged(run, UNDECLARED)
        self.assertEqual(run.events("merge"), [])
        gates = run.events("gate")
        self.assertEqual(len(gates), len(run.judged()) or len(gates))
        self.assertGreater(len(gates), 0)
        self.assertTrue(all(g["keep"] is False and g["force"] is False and
                            "supports_async_decode" not in g for g in gates))
        self.assertEqual(run.count("does not declare model_capabilities['supports_async_decode']"
                                   ": the keep does not run (an absent key means not "
                                   "supported)"), 1)
        for alarm in ("should have run", "forced", "could not be observed"):
            self.assertEqual(run.count(alarm), 0, alarm)
        got = replay_json(run.cap)
        self.assertEqual(sorted(got["not_evaluable"]), sorted(BASE_RULES),
                         "a rule was evaluable on an audit where the keep never ran")
        for r in BASE_RULES:
            self.assertEqual(got["rules"][r]["merges"], 0)
        self.assertEqual(got["gate"]["refused"], len(gates))
        self.assertTrue(got["gate"]["keep_never_ran"])

    def test_patched_batch_guard_and_arm_check(self):
        extra = dict(BATCH_GUARD, STANDIN_GENERATOR=patched_generator())
        run = self.served("batch", extra)
        self.assertServedUnchanged(run, extra)
        _, want = self.assertAuditIsTruth(run)
        got = self.assertReplayIsTruth(run, want)
        self.assertIn("batch", got["fingerprint"]["consistent"])
        self.assertNotIn("bare", got["fingerprint"]["consistent"])
        self.assertEqual(sum(sum(t["substituted"]) for t in want.values()), HAND["batch"][1],
                         "the guarded code lets through the two the batch rule lets through")
        self.assertGreater(sum(1 for m in run.events("merge") if m.get("fallback") == "host"), 0)
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
        un = self.served("async", ASYNC)
        p = subprocess.run([TTAUDIT, "arm", "--spec", spec, "--arm", "batch", "--capture",
                            un.cap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)


class TestKitFails(StandinCase):
    """Whatever goes wrong in the kit, the server starts and serves unchanged."""

    def test_unwritable_sink(self):
        extra = dict(ASYNC, TTAUDIT_EMIT_SINK="file:/nonexistent-dir/audit.jsonl")
        run = self.served("unwritable", extra)
        self.assertServedUnchanged(run, ASYNC)
        self.assertEqual(run.events("merge"), [])
        err = run.stderr()
        self.assertEqual(err.count("audit write failed"), 1, err[-3000:])
        self.assertIn("audit line(s) lost", err)

    def test_renamed_target(self):
        # upstream renames decode_forward: reported, and a config file finds it
        cfg = os.path.join(tempfile.mkdtemp(), "names.json")
        with open(cfg, "w") as f:
            json.dump({"targets": {"decode": {"module": "models.tt_transformers.tt.generator",
                                              "name": "Generator.decode_forward_text"}}}, f)
        run = self.served("renamed", ASYNC, config=cfg)
        self.assertServedUnchanged(run, ASYNC)
        self.assertEqual(run.events("merge"), [])
        self.assertEqual(run.count("ttaudit: not instrumented: decode models.tt_transformers.tt."
                                   "generator:Generator.decode_forward_text: Generator has no "
                                   "decode_forward_text"), 1, run.lines())

    def test_kit_off_without_the_run_command(self):
        run = self.served("no-kit", ASYNC, kit=False)
        self.assertServedUnchanged(run, ASYNC)
        self.assertEqual([r for r in run.records() if r.get("src") == "audit"], [])
        self.assertEqual(run.count("ttaudit:"), 0)


def report():
    """The runs' replays, every rule's counts (for the record)."""
    for name in ("async", "batch"):
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
