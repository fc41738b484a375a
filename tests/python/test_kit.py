"""Tests of the auto-instrumentation (tools/instrument/ttaudit_emit: names,
hook, kit, run, the sitecustomize), run by tests/e2e/60-instrument.sh.

The pieces one by one (the name table and its config file, the post-import
hook on real imports, argument getters, the `taken` reading of the keep's
return, the banners), then the kit in fresh interpreters started the way a
user starts one (`python3 ttaudit_emit/run.py -- ...`) over the stand-in of
tests/standin: the audit must equal the stand-in's own account, with data-
parallel chunks, multiprocessing spawn and fork children, a file sink, the
kit off. The loguru sink is Debian's python3-loguru.

Run: python3 tests/python/test_kit.py [-v]
"""

import importlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "instrument"))
sys.path.insert(0, HERE)

from rules import run_tests  # noqa: E402
from ttaudit_emit import MergeAudit, hook, kit, names  # noqa: E402

PYTHON = os.environ.get("PYTHON", sys.executable)
STANDIN = os.path.join(ROOT, "tests", "standin")
KIT_RUN = os.path.join(ROOT, "tools", "instrument", "ttaudit_emit", "run.py")
SCENARIO = os.path.join(STANDIN, "scenario.json")

try:
    import loguru
except ImportError:
    loguru = None


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TTAUDIT_", "QWEN36_", "STANDIN_", "TT_FORCE_"))
           and k not in ("PYTHONPATH", "LD_PRELOAD")}
    env.update(extra or {})
    return env


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(ln) for ln in f if ln.strip()]


class TestNames(unittest.TestCase):
    def test_default_table(self):
        t = names.build()
        roles = {e["role"] for e in t["targets"]}
        self.assertEqual(roles, set(names.ROLES))
        keep = [e for e in t["targets"] if e["role"] == "keep"][0]
        self.assertEqual(keep["module"], "models.tt_transformers.tt.generator")
        self.assertEqual(keep["returns"], {"tok": 0, "pos": 1, "source": 2})
        self.assertEqual(keep["args"]["dev_pos"], "dev_pos_full")
        self.assertEqual(t["attrs"]["force_env"], "TT_FORCE_ASYNC_AHEAD_KEEP")

    def test_config_replaces_a_role_and_merges_args(self):
        t = names.build({"targets": {"keep": [
            {"module": "models.demos.gemma4.tt.async_decode",
             "name": "merge_async_ahead_decode_tokens"},
            {"module": "x.y", "name": "keep2", "args": {"dev_pos": "dpos", "prefilled": None},
             "returns": {"source": None}}]},
            "attrs": {"capability": "supports_async"}})
        keeps = [e for e in t["targets"] if e["role"] == "keep"]
        self.assertEqual([k["module"] for k in keeps], ["models.demos.gemma4.tt.async_decode",
                                                        "x.y"])
        self.assertEqual(keeps[1]["args"]["dev_pos"], "dpos")
        self.assertEqual(keeps[1]["args"]["host_pos"], "host_pos")
        self.assertIsNone(keeps[1]["args"]["prefilled"])
        self.assertEqual(keeps[1]["returns"], {"tok": 0, "pos": 1, "source": None})
        self.assertEqual(t["attrs"]["capability"], "supports_async")
        self.assertEqual(len([e for e in t["targets"] if e["role"] == "decode"]), 1)
        off = names.build({"targets": {"engine": []}})
        self.assertFalse(any(e["role"] == "engine" for e in off["targets"]))

    def test_config_errors_name_what_is_wrong(self):
        bad = [({"target": {}}, "unknown key"),
               ({"targets": {"merge": {"module": "a", "name": "b"}}}, "unknown role 'merge'"),
               ({"targets": {"keep": {"module": "a b", "name": "f"}}}, "targets.keep[0]: module"),
               ({"targets": {"keep": {"module": "a", "name": "f", "args": {"x": "y"}}}},
                "reads no value 'x'"),
               ({"targets": {"decode": {"module": "a", "name": "f", "returns": {}}}},
                "only the keep"),
               ({"attrs": {"nope": "x"}}, "attrs"),
               ({"trigger": "a.b"}, "trigger")]
        for cfg, words in bad:
            with self.assertRaises(names.ConfigError) as cm:
                names.build(cfg)
            self.assertIn(words, str(cm.exception))
        d = tempfile.mkdtemp()
        p = os.path.join(d, "c.json")
        with open(p, "w") as f:
            f.write("{not json")
        with self.assertRaises(names.ConfigError) as cm:
            names.load(p)
        self.assertIn(p + ": not JSON", str(cm.exception))


class TestHook(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.pkg = "ttaudit_hooktest_%d" % id(self)
        os.makedirs(os.path.join(self.d, self.pkg))
        with open(os.path.join(self.d, self.pkg, "__init__.py"), "w") as f:
            f.write("")
        with open(os.path.join(self.d, self.pkg, "mod.py"), "w") as f:
            f.write(textwrap.dedent("""
                def helper(a, b=2, *, c=3):
                    return a + b + c

                class K:
                    def m(self, x, y=None):
                        return ("m", x, y)

                    @staticmethod
                    def s(x, dp_rank=0):
                        return ("s", x, dp_rank)

                    @classmethod
                    def c(cls, x):
                        return ("c", cls.__name__, x)
                """))
        sys.path.insert(0, self.d)
        self.seen, self.errors = [], []
        self.w = hook.ImportWatcher(self.seen.append, lambda w, e: self.errors.append((w, e)))

    def tearDown(self):
        sys.path.remove(self.d)
        if self.w in sys.meta_path:
            sys.meta_path.remove(self.w)
        for m in list(sys.modules):
            if m.startswith(self.pkg):
                del sys.modules[m]

    def test_callback_after_the_module_ran_and_loader_restored(self):
        self.w.install()
        self.w.watch({self.pkg + ".mod"})
        m = importlib.import_module(self.pkg + ".mod")
        self.assertEqual(self.seen, [m])
        self.assertEqual(type(m.__loader__).__name__, "SourceFileLoader")
        self.assertIs(m.__spec__.loader, m.__loader__)
        importlib.reload(m)             # a reload neither fails nor calls again
        self.assertEqual(len(self.seen), 1)

    def test_already_imported_module_is_called_at_once(self):
        m = importlib.import_module(self.pkg + ".mod")
        self.w.watch({self.pkg + ".mod"})
        self.assertEqual(self.seen, [m])

    def test_a_failing_callback_does_not_fail_the_import(self):
        def boom(mod):
            raise RuntimeError("kit bug")
        w = hook.ImportWatcher(boom, lambda wh, e: self.errors.append((wh, e)))
        w.install()
        try:
            w.watch({self.pkg + ".mod"})
            m = importlib.import_module(self.pkg + ".mod")
            self.assertEqual(m.helper(1), 6)
            self.assertEqual(len(self.errors), 1)
            self.assertIn("instrumenting", self.errors[0][0])
        finally:
            sys.meta_path.remove(w)

    def test_resolve_and_wrap_each_kind(self):
        m = importlib.import_module(self.pkg + ".mod")
        calls = []

        def make(orig):
            def w(*a, **k):
                calls.append(orig.__name__)
                return orig(*a, **k)
            return w
        for q in ("helper", "K.m", "K.s", "K.c"):
            owner, attr, raw = hook.resolve(m, q)
            self.assertIsNotNone(hook.install_wrapper(owner, attr, raw, make))
            owner, attr, raw = hook.resolve(m, q)
            self.assertIsNone(hook.install_wrapper(owner, attr, raw, make), "wrapped twice")
        self.assertEqual(m.helper(1, c=0), 3)
        self.assertEqual(m.K().m(1), ("m", 1, None))
        self.assertEqual(m.K.s(2, dp_rank=3), ("s", 2, 3))
        self.assertEqual(m.K().s(2), ("s", 2, 0))
        self.assertEqual(m.K.c(4), ("c", "K", 4))
        self.assertEqual(calls, ["helper", "m", "s", "s", "c"])
        self.assertEqual(m.helper.__name__, "helper")
        with self.assertRaises(LookupError) as cm:
            hook.resolve(m, "K.gone")
        self.assertIn("K has no gone", str(cm.exception))
        with self.assertRaises(LookupError):
            hook.resolve(m, "Nope.m")

    def test_arg_getters(self):
        m = importlib.import_module(self.pkg + ".mod")
        g, missing = hook.getters(m.helper, {"a": "a", "b": "b", "c": "c", "z": "zz", "n": None})
        self.assertEqual(missing, ["z"])
        args, kw = (10,), {"c": 5}
        self.assertEqual((g["a"](args, kw), g["b"](args, kw), g["c"](args, kw)), (10, 2, 5))
        self.assertEqual(g["b"]((1, 7), {}), 7)
        self.assertIsNone(g["n"]((1,), {}))
        g, missing = hook.getters(lambda x, **kw: None, {"x": "x", "y": "y"})
        self.assertEqual(missing, [], "**kwargs may carry any name")
        self.assertEqual(g["y"]((), {"y": 4}), 4)


class TestTaken(unittest.TestCase):
    def test_per_slot_source(self):
        t, inf = kit._taken([True, False], None, None, [1, 2], [5, 6], [9, 9], [5, 7], set())
        self.assertEqual((t, inf), ([True, False], None))
        t, _ = kit._taken(["dev", "host"], None, None, [1, 2], [5, 6], None, [5, 7], set())
        self.assertEqual(t, [True, False])

    def test_fallback_source_takes_nothing(self):
        t, inf = kit._taken("host_fallback", [9, 9], [5, 7], [1, 2], [5, 6], [9, 9], [5, 7],
                            set())
        self.assertEqual((t, inf), ([False, False], None))

    def test_from_returned_values(self):
        # slot 0: returned the device's (5, 9) -> taken; slot 1: the host's -> not;
        # slot 2: both sides equal, the keep's own rule decides and it is marked;
        # slot 3: equal but prefilled -> not taken, marked; slot 4: inactive
        t, inf = kit._taken("merged", [9, 2, 3, 4, 0], [5, 6, 7, 8, -1],
                            [1, 2, 3, 4, 0], [4, 6, 7, 8, -1],
                            [9, 8, 3, 4, 0], [5, 9, 7, 8, -1], {3})
        self.assertEqual(t, [True, False, True, False, True])
        self.assertEqual(inf, [2, 3])


class TestBanners(unittest.TestCase):
    def test_guard_lines(self):
        self.assertEqual(kit.guard_banners({}), ["ttaudit: guard none engaged (unguarded merge)"])
        got = kit.guard_banners({"QWEN36_MERGE_BATCH_GUARD": "1",
                                 "QWEN36_MERGE_LIFETIME_GUARD": "0",
                                 "QWEN36_MERGE_STAMP_GUARD": "maybe"})
        self.assertEqual(got, [
            "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)",
            "ttaudit: guard QWEN36_MERGE_LIFETIME_GUARD off (env QWEN36_MERGE_LIFETIME_GUARD=0)",
            "ttaudit: guard QWEN36_MERGE_STAMP_GUARD value not understood, not engaged "
            "(env QWEN36_MERGE_STAMP_GUARD=maybe)"])
        got = kit.guard_banners({"QWEN36_PREFILLED_SLOTS_FIX": "true",
                                 "QWEN36_MERGE_GARBAGE_BOUND": "1"})
        self.assertEqual(len(got), 2)
        self.assertTrue(all(" engaged (env " in g for g in got))

    def test_rank(self):
        self.assertEqual(kit.initial_rank({"TTAUDIT_RANK": "3", "OMPI_COMM_WORLD_RANK": "1"}), 3)
        self.assertEqual(kit.initial_rank({"OMPI_COMM_WORLD_RANK": "1"}), 1)
        self.assertEqual(kit.initial_rank({"PMI_RANK": "2"}), 2)
        self.assertIsNone(kit.initial_rank({}))


class TestTraceKey(unittest.TestCase):
    def test_keys_found_missing_and_unknown(self):
        k = kit.Kit(names.build(), {"TTAUDIT_EMIT_SINK": "stderr"})
        notes = []
        k.note = notes.append
        self.assertEqual(k._find_key({(True, 4): [1]}, True, 4), ((True, 4), True))
        self.assertEqual(k._find_key({True: [1]}, True, 4), (True, True))
        self.assertEqual(k._find_key({(True, 4): [1]}, True, 2), ((True, 2), False))
        self.assertEqual(k._find_key({False: [1]}, True, 2), (True, False))
        self.assertEqual(k._find_key(kit._MISSING, True, 2), (None, None))
        self.assertEqual(notes, [])
        self.assertEqual(k._find_key({"decode-b4": [1]}, True, 4), (None, None))
        self.assertEqual(len(notes), 1)
        self.assertIn("is keyed by 'decode-b4'", notes[0])


@unittest.skipIf(loguru is None, "python3-loguru is not installed")
class TestLoguruSink(unittest.TestCase):
    def setUp(self):
        from loguru import logger
        self.logger = logger
        self.out = io.StringIO()
        logger.remove()
        self.hid = logger.add(self.out, format="{time} | {level} | {name}:{line} - {message}")

    def tearDown(self):
        self.logger.remove()
        self.logger.add(sys.stderr)

    def test_one_line_per_event(self):
        a = MergeAudit(self.logger, enable=True)
        self.assertEqual(a.kind, "loguru")
        a.merge(1, [1, -1], [2, -1], reset_batch=True, mode_switched=False)
        a.note("ttaudit: guard none engaged (unguarded merge)")
        a.gate(2, keep=False, supports_async_decode=False, force=False, reason="r {x}")
        lines = self.out.getvalue().splitlines()
        self.assertEqual(len(lines), 3, lines)
        self.assertTrue(lines[0].endswith('MERGE_AUDIT {"ev":"merge","step":1,"host_pos":[1,-1],'
                                          '"dev_pos":[2,-1],"reset_batch":true,'
                                          '"mode_switched":false}'), lines[0])
        self.assertIn("| INFO | ", lines[0])
        self.assertTrue(lines[1].endswith(" - ttaudit: guard none engaged (unguarded merge)"))
        self.assertIn('"reason":"r {x}"', lines[2])
        self.assertEqual((a.lines, a.notes, a.errors), (2, 1, 0))

    def test_no_handler_or_a_high_level_goes_to_stderr(self):
        a = MergeAudit(self.logger, enable=True)
        self.logger.remove()
        old, sys.stderr = sys.stderr, io.StringIO()
        try:
            a.merge(1, [1], [2], reset_batch=True, mode_switched=False)
            a.merge(2, [1], [2], reset_batch=True, mode_switched=False)
            err = sys.stderr.getvalue()
        finally:
            sys.stderr = old
        self.assertEqual(err.count("MERGE_AUDIT {"), 2)
        self.assertEqual(err.count("would drop the audit lines (it has no handler)"), 1)
        self.logger.add(self.out, level="WARNING")
        old, sys.stderr = sys.stderr, io.StringIO()
        try:
            b = MergeAudit(self.logger, enable=True)
            b.merge(1, [1], [2], reset_batch=True, mode_switched=False)
            err = sys.stderr.getvalue()
        finally:
            sys.stderr = old
        self.assertIn("above INFO", err)
        self.assertEqual(self.out.getvalue(), "")


def run_kit(argv, extra=None, kit_on=True, cwd=None, timeout=60):
    """argv under `python3 run.py --` (or plainly when kit_on is False)."""
    cmd = ([PYTHON, KIT_RUN, "--"] if kit_on else []) + argv
    return subprocess.run(cmd, env=clean_env(extra), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, cwd=cwd,
                          timeout=timeout)


class TestKitOnStandin(unittest.TestCase):
    """The kit over the stand-in engine, in the process that runs it."""

    def engine(self, extra, kit_on=True):
        d = tempfile.mkdtemp()
        audit, truth = os.path.join(d, "audit.jsonl"), os.path.join(d, "truth.jsonl")
        env = dict(extra, STANDIN_TRUTH=truth, TTAUDIT_EMIT_SINK="file:" + audit)
        p = run_kit([PYTHON, os.path.join(STANDIN, "standin_engine.py"), SCENARIO], env,
                    kit_on=kit_on)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        got = read_jsonl(audit) if os.path.exists(audit) else []
        want = [r for r in read_jsonl(truth) if r["kind"] == "merge"]
        return got, want, p

    def assertSame(self, got, want):
        merges = [e for e in got if e["ev"] == "merge"]
        self.assertEqual(len(merges), len(want))
        for g, w in zip(merges, want):
            for k in ("step", "dp", "host_pos", "dev_pos", "taken", "prefilled", "buf_step",
                      "fallback", "mode_switched", "reset_batch"):
                if k in w:
                    self.assertEqual(g.get(k), w[k], "step %d %s" % (w["step"], k))
            if "buf_req" in w:
                self.assertEqual((g["slot_req"], g["buf_req"]), (w["slot_req"], w["buf_req"]))

    def test_file_sink_is_plain_jsonl_with_pid_and_rank(self):
        got, want, p = self.engine({"STANDIN_CAPS": "true"})
        self.assertSame(got, want)
        self.assertEqual(got[0]["ev"], "config")
        self.assertEqual(got[0]["max_model_len"], 4096)
        self.assertTrue(all(e["pid"] > 0 and e["rank"] == 0 for e in got))
        # a file audit holds JSON only: the banners went to stderr
        self.assertIn("ttaudit: guard none engaged (unguarded merge)", p.stderr)

    def test_data_parallel_chunks(self):
        got, want, _ = self.engine({"STANDIN_CAPS": "true", "STANDIN_PREFILL": "own",
                                    "STANDIN_DP": "2", "STANDIN_BUCKETS": "2,4"})
        self.assertSame(got, want)
        self.assertEqual({e["dp"] for e in got if e["ev"] == "merge"}, {0, 1})
        self.assertTrue(any(e.get("fallback") == "slot_remap" for e in got))
        traces = [e for e in got if e["ev"] == "trace"]
        self.assertEqual({t["dp"] for t in traces}, {0, 1})
        self.assertEqual({t["key"] for t in traces}, {"(True, 1)", "(True, 2)"})

    def test_traces_keyed_by_sampling_only_meet_other_widths(self):
        # before PR #53947: one buffer for every width, so a narrower one meets a
        # wider batch (the shape fallback) and the key is the sampling flag alone
        got, want, _ = self.engine({"STANDIN_CAPS": "true", "STANDIN_TRACE_KEY": "sampling"})
        self.assertSame(got, want)
        self.assertTrue(any(e.get("fallback") == "shape" for e in got))
        self.assertEqual({e["key"] for e in got if e["ev"] == "trace"}, {"True"})

    def test_undeclared_capability_keeps(self):
        got, want, _ = self.engine({"STANDIN_CAPS": "undeclared"})
        self.assertSame(got, want)
        self.assertEqual([e for e in got if e["ev"] == "gate"], [])

    def test_off_without_ttaudit_emit(self):
        got, _, p = self.engine({"STANDIN_CAPS": "true"}, kit_on=False)
        self.assertEqual(got, [])
        self.assertNotIn("ttaudit", p.stderr)

    def test_bad_config_is_reported_and_the_defaults_used(self):
        d = tempfile.mkdtemp()
        cfg = os.path.join(d, "bad.json")
        with open(cfg, "w") as f:
            f.write('{"targets": {"kep": {}}}')
        got, want, p = self.engine({"STANDIN_CAPS": "true", "TTAUDIT_EMIT_CONFIG": cfg})
        self.assertSame(got, want)
        self.assertIn("TTAUDIT_EMIT_CONFIG ignored, using the built-in name table", p.stderr)
        self.assertIn("unknown role 'kep'", p.stderr)


class TestProcesses(unittest.TestCase):
    """Every process: spawn and fork children, sitecustomize chaining, the run command."""

    PROG = textwrap.dedent("""
        import json, multiprocessing, os, sys
        sys.path.insert(0, %r)

        def child(q):
            import models.tt_transformers.tt.generator as g
            from ttaudit_emit import kit
            k = kit.current()
            q.put({"pid": os.getpid(), "kit": k is not None,
                   "wrapped": hasattr(g.Generator.decode_forward, "__ttaudit_wrapped__"),
                   "name": multiprocessing.current_process().name,
                   "rank": k.rank if k else None})

        if __name__ == "__main__":
            ctx = multiprocessing.get_context(sys.argv[1])
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,), name="EngineCore_DP2")
            p.start()
            print(json.dumps(q.get(timeout=60)))
            p.join()
        """) % STANDIN

    def run_children(self, method):
        d = tempfile.mkdtemp()
        prog = os.path.join(d, "prog.py")
        with open(prog, "w") as f:
            f.write(self.PROG)
        p = run_kit([PYTHON, prog, method], {"TTAUDIT_EMIT_SINK": "stderr"})
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return json.loads(p.stdout.splitlines()[-1]), p.stderr

    def test_spawn_child_is_instrumented(self):
        got, err = self.run_children("spawn")
        self.assertEqual((got["kit"], got["wrapped"], got["rank"]), (True, True, 2))
        self.assertIn("ttaudit: instrumentation on (pid %d, rank 2)" % got["pid"], err)

    def test_fork_child_is_instrumented(self):
        got, err = self.run_children("fork")
        self.assertEqual((got["kit"], got["wrapped"]), (True, True))
        self.assertIn("ttaudit: instrumentation on (pid %d" % got["pid"], err)

    def test_shadowed_sitecustomize_still_runs(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['THEIRS_RAN'] = '1'\n")
        p = run_kit([PYTHON, "-c", "import os, sys; from ttaudit_emit import kit; "
                     "print(os.environ.get('THEIRS_RAN'), kit.current() is not None)"],
                    {"PYTHONPATH": d})
        self.assertEqual(p.stdout.split(), ["1", "True"], p.stderr)

    def test_run_command_usage(self):
        p = subprocess.run([PYTHON, KIT_RUN], stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no command to run", p.stderr)
        p = subprocess.run([PYTHON, KIT_RUN, "--", "/nonexistent/cmd"], stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot be run", p.stderr)
        p = subprocess.run([PYTHON, KIT_RUN, "--names"], stdout=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("merge_async_ahead_decode_tokens", json.loads(p.stdout)["targets"][-1]
                      ["name"] + p.stdout)
        d = tempfile.mkdtemp()
        cfg = os.path.join(d, "c.json")
        with open(cfg, "w") as f:
            f.write('{"targets": {"keep": {"module": "a", "name": "b c"}}}')
        p = subprocess.run([PYTHON, KIT_RUN, "--config", cfg, "--", "true"],
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("targets.keep[0]: name", p.stderr)

    def test_run_keeps_the_pid_and_the_exit_status(self):
        p = run_kit([PYTHON, "-c", "import os, sys; print(os.environ['TTAUDIT_EMIT'], "
                     "os.environ['PYTHONPATH'].split(os.pathsep)[0].endswith('boot')); "
                     "sys.exit(7)"])
        self.assertEqual(p.returncode, 7)
        self.assertEqual(p.stdout.split(), ["1", "True"])


def main():
    return run_tests(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
