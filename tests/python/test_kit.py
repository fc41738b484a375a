"""Tests of the auto-instrumentation (tools/instrument/ttaudit_emit: names,
hook, inline, kit, run, the sitecustomize), run by tests/e2e/60-instrument.sh.

The pieces one by one (the name table and its config file, the post-import
hook on real imports, argument getters, the inline keep found in source,
the `taken` reading of a helper's return, the banners), then the kit in
fresh interpreters started the way a user starts one (`python3
ttaudit_emit/run.py -- ...`): over tests/python/keep_probe.py, which drives
the stand-in generator (tests/standin, tt-metal 50868c00's shapes) the way
tt-metal's own keep tests drive the shared Generator, and over the stand-in
engine, whose own account (standin_truth) the audit must equal, with
data-parallel chunks, Gemma4's helper, the older e749a1e5 generator, spawn
and fork children, a file sink, the kit off. Real torch tensors throughout
(Debian's python3-torch); the loguru sink is Debian's python3-loguru.

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
sys.path.insert(0, STANDIN)
import paths as standin_paths  # noqa: E402

PROBE = os.path.join(HERE, "keep_probe.py")
KIT_RUN = os.path.join(ROOT, "tools", "instrument", "ttaudit_emit", "run.py")
SCENARIO = os.path.join(STANDIN, "scenario.json")

try:
    import loguru
except ImportError:
    loguru = None


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TTAUDIT_", "QWEN36_", "STANDIN_"))
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
        # the only keep helper upstream has is Gemma4's (tt-metal 216c8690)
        self.assertEqual(keep["module"], "models.demos.gemma4.tt.async_decode")
        self.assertTrue(keep["optional"])
        self.assertEqual(keep["returns"], {"tok": 0, "pos": 1, "source": 2})
        self.assertEqual(keep["args"]["dev_pos"], "dev_pos_full")
        # no override variable: tt-metal's generator reads none
        self.assertNotIn("force_env", t["attrs"])
        self.assertNotIn("TT_FORCE", json.dumps(t))
        pre = [e for e in t["targets"] if e["role"] == "prefill"][0]
        self.assertEqual(pre["signature"], "Generator._prefill_forward_text_impl")
        dec = [e["name"] for e in t["targets"] if e["role"] == "decode"]
        self.assertEqual(dec, ["Generator.decode_forward",
                               "ChunkedPrefillPageTableGuardMixin.decode_forward"])
        trace = [e for e in t["targets"] if e["role"] == "trace"][0]
        self.assertEqual(trace["args"]["on_device_sampling"],
                         ["on_device_sampling", "sampling_on_device"])
        self.assertEqual(t["inline"]["decision"], "use_dev")

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
        self.assertEqual(len([e for e in t["targets"] if e["role"] == "decode"]), 2)
        t = names.build({"inline": {"decision": "keep_dev"}})
        self.assertEqual((t["inline"]["decision"], t["inline"]["dev_pos"]), ("keep_dev", "dev_pos"))
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
               ({"inline": {"decision": 3}}, "inline"),
               ({"targets": {"trace": {"module": "a", "name": "f",
                                       "args": {"restage": ["ok", "no way"]}}}},
                "args.restage must be"),
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
        # a list: the first name the signature has (revisions differ)
        g, missing = hook.getters(m.K.m, {"v": ["z", "y"], "w": ["q", "r"]})
        self.assertEqual(missing, ["w"])
        self.assertEqual(g["v"]((None, 1, 9), {}), 9)
        self.assertEqual(g["v"]((None, 1), {"y": 8}), 8)


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
        # (slot 4 inactive: Gemma4's helper keeps host_pos >= 0 only)
        t, inf = kit._taken("merged", [9, 2, 3, 4, 0], [5, 6, 7, 8, -1],
                            [1, 2, 3, 4, 0], [4, 6, 7, 8, -1],
                            [9, 8, 3, 4, 0], [5, 9, 7, 8, -1], {3})
        self.assertEqual(t, [True, False, True, False, False])
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
            "ttaudit: guard QWEN36_MERGE_STAMP_GUARD not engaged: the patch engages it on 1 "
            "only (env QWEN36_MERGE_STAMP_GUARD=maybe)"])
        # the seeds' patches read `== "1"`: "true", "yes", " 1" engage nothing,
        # and the banner must not say they do
        for v in ("true", "yes", "on", " 1", "01"):
            got = kit.guard_banners({"QWEN36_PREFILLED_SLOTS_FIX": v,
                                     "QWEN36_MERGE_GARBAGE_BOUND": "1"})
            self.assertEqual(got, [
                "ttaudit: guard QWEN36_PREFILLED_SLOTS_FIX not engaged: the patch engages it on "
                "1 only (env QWEN36_PREFILLED_SLOTS_FIX=%s)" % v,
                "ttaudit: guard QWEN36_MERGE_GARBAGE_BOUND engaged (env "
                "QWEN36_MERGE_GARBAGE_BOUND=1)"], v)

    def test_rank(self):
        self.assertEqual(kit.initial_rank({"TTAUDIT_RANK": "3", "OMPI_COMM_WORLD_RANK": "1"}), 3)
        self.assertEqual(kit.initial_rank({"OMPI_COMM_WORLD_RANK": "1"}), 1)
        self.assertEqual(kit.initial_rank({"PMI_RANK": "2"}), 2)
        self.assertIsNone(kit.initial_rank({}))
        # vLLM's process names: dev always EngineCore_DP<n>, main EngineCore
        # without data parallelism (vllm/v1/engine/utils.py)
        self.assertEqual(kit.initial_rank({}, "EngineCore_DP3"), 3)
        self.assertEqual(kit.initial_rank({}, "EngineCore"), 0)
        self.assertIsNone(kit.initial_rank({}, "APIServer"))


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


def audit_of(path):
    return [e for e in read_jsonl(path) if e.get("ev")] if os.path.exists(path) else []


class TestInlinePlan(unittest.TestCase):
    """The keep found in source by its statement, in every revision the
    stand-in follows, and refused where source and code disagree."""

    def setUp(self):
        self.saved = list(sys.path)

    def tearDown(self):
        sys.path[:] = self.saved

    def plan_in(self, rev, module, qualname, helpers=()):
        code = textwrap.dedent("""
            import json, sys
            sys.path[:0] = %r
            sys.path.insert(0, %r)
            import importlib
            from ttaudit_emit import inline
            obj = importlib.import_module(%r)
            for part in %r.split("."):
                obj = getattr(obj, part)
            try:
                p = inline.plan(obj, helpers=set(%r))
            except inline.PlanError as e:
                print(json.dumps({"error": str(e)}))
                raise SystemExit(0)
            print(json.dumps(None if p is None else {
                "kind": p.kind, "file": p.file, "decision": p.decision_line,
                "gate": p.gate_line, "loop": p.loop_line, "arm": p.arm_names, "cap": p.cap_name}))
            """) % (standin_paths.roots({"STANDIN_GENERATOR": rev}),
                    os.path.join(ROOT, "tools", "instrument"), module, qualname, list(helpers))
        p = subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    @staticmethod
    def line_of(path, text):
        with open(path) as f:
            hits = [n for n, ln in enumerate(f, 1) if ln.lstrip().startswith(text)]
        return hits

    def test_the_inline_keep_of_50868c00(self):
        got = self.plan_in("50868c00", "models.tt_transformers.tt.generator",
                           "Generator.decode_forward")
        path = os.path.join(standin_paths.generator_root({"STANDIN_GENERATOR": "50868c00"}),
                            "models", "tt_transformers", "tt", "generator.py")
        self.assertEqual(got["kind"], "inline")
        self.assertEqual(got["file"], path)
        # found by the statement, at the line that holds it in the file
        self.assertEqual([got["decision"]],
                         self.line_of(path, "use_dev = (dev_pos == host_pos) | (dev_pos =="))
        self.assertLess(got["gate"], got["loop"])
        self.assertLess(got["loop"], got["decision"])
        self.assertEqual(got["arm"], ["reset_batch", "mode_switched"])
        self.assertEqual(got["cap"], "supports_async_decode")

    def test_no_keep_in_e749a1e5(self):
        self.assertIsNone(self.plan_in("e749a1e5", "models.tt_transformers.tt.generator",
                                       "Generator.decode_forward",
                                       ["merge_async_ahead_decode_tokens"]))

    def test_gemma4_calls_its_helper(self):
        got = self.plan_in("50868c00", "models.demos.gemma4.tt.generator",
                           "ChunkedPrefillPageTableGuardMixin.decode_forward",
                           ["merge_async_ahead_decode_tokens"])
        self.assertEqual((got["kind"], got["cap"]), ("helper", "async_decode_enabled"))

    def test_source_that_is_not_the_code_is_refused(self):
        d = tempfile.mkdtemp()
        mod = os.path.join(d, "edited_gen.py")
        body = textwrap.dedent("""
            def decode_forward(self, tokens, reset_batch=False):
                mode_switched = False
                ok = True
                if ok and (reset_batch or mode_switched):
                    for i, tok_chunk in enumerate(tokens):
                        dev_pos = host_pos = tok_chunk
                        use_dev = (dev_pos == host_pos) | (dev_pos == host_pos + 1)
                return tokens
            """)
        with open(mod, "w") as f:
            f.write(body)
        code = textwrap.dedent("""
            import json, linecache, sys
            sys.path[:0] = [%r, %r]
            import edited_gen
            # the file changes after the import: the loaded code is the old one
            from ttaudit_emit import inline
            print("before: " + inline.plan(edited_gen.decode_forward).kind)
            text = open(%r).read()
            if sys.argv[1] == "shifted":      # lines moved before the def
                text = chr(10) * 3 + text
            else:                             # a line added inside the body
                text = text.replace("ok = True", "ok = True" + chr(10) + "    pass")
            open(%r, "w").write(text)
            linecache.checkcache()
            try:
                inline.plan(edited_gen.decode_forward)
                print("planned")
            except inline.PlanError as e:
                print("refused: " + str(e))
            """) % (d, os.path.join(ROOT, "tools", "instrument"), mod, mod)
        for how, why in (("shifted", "does not match"),
                         ("inner", "compiled again")):
            with open(mod, "w") as f:
                f.write(body)
            p = subprocess.run([PYTHON, "-c", code, how], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, env=clean_env())
            self.assertIn("before: inline", p.stdout, p.stderr)
            self.assertIn("does not match the loaded code", p.stdout, p.stderr)
            self.assertIn(why, p.stdout)


class TestKeepLikeUpstream(unittest.TestCase):
    """The kit over the stand-in generator driven the way tt-metal's own keep
    tests drive the shared Generator (tests/python/keep_probe.py, in a fresh
    interpreter under `python3 ttaudit_emit/run.py --`): the merge must carry
    the code's own per-slot decisions, the gate upstream's semantics."""

    def probe(self, case, extra=None, config=None, kit_on=True):
        d = tempfile.mkdtemp()
        audit = os.path.join(d, "audit.jsonl")
        env = dict(extra or {}, TTAUDIT_EMIT_SINK="file:" + audit)
        argv = [PYTHON, PROBE, case]
        if config is not None:
            cfg = os.path.join(d, "names.json")
            with open(cfg, "w") as f:
                json.dump(config, f)
            p = subprocess.run([PYTHON, KIT_RUN, "--config", cfg, "--"] + argv,
                               env=clean_env(env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        else:
            p = run_kit(argv, env, kit_on=kit_on)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return json.loads(p.stdout.splitlines()[-1])[case], audit_of(audit), p.stderr

    def test_declared_async_keeps_the_ahead_token(self):
        ran, ev, err = self.probe("unit/true")
        # upstream's expectation for this case: [101, 102, 3, 4] at [10, 11, 12, 50]
        self.assertEqual(ran, [[101, 102, 3, 4], [10, 11, 12, 50]])
        m = [e for e in ev if e["ev"] == "merge"]
        self.assertEqual(len(m), 1)
        self.assertEqual((m[0]["host_pos"], m[0]["dev_pos"], m[0]["host_tok"], m[0]["dev_tok"]),
                         ([10, 10, 12, 50], [10, 11, 12, 13], [1, 2, 3, 4], [101, 102, 103, 104]))
        self.assertEqual((m[0]["taken"], m[0]["prefilled"]), ([True, True, False, False], [2]))
        self.assertEqual((m[0]["reset_batch"], m[0]["mode_switched"], m[0]["dp"]), (True, True, 0))
        self.assertNotIn("taken_inferred", m[0])
        self.assertIn("ttaudit: keep: inline in Generator.decode_forward at generator.py:", err)
        self.assertIn("0 kit error(s), 0 keep step(s) unobserved, 0 slot(s) whose decision", err)

    def test_the_slot_remap_is_honoured(self):
        ran, ev, _ = self.probe("unit/true+remap")
        self.assertEqual(ran, [[102, 101, 3, 4], [11, 10, 12, 50]])
        m = [e for e in ev if e["ev"] == "merge"][0]
        self.assertEqual((m["dev_pos"], m["dev_tok"], m["taken"]),
                         ([11, 10, 12, 13], [102, 101, 103, 104], [True, True, False, False]))

    def test_declared_false_and_undeclared_do_not_keep_and_raise_no_alarm(self):
        for caps, value, reason in (("false", False, "model declares supports_async_decode False"),
                                    ("undeclared", None, "model does not declare supports_async_"
                                     "decode (absent means not supported)")):
            ran, ev, err = self.probe("unit/" + caps)
            self.assertEqual(ran, [[1, 2, 3, 4], [10, 10, 12, 50]], caps)
            self.assertEqual([e for e in ev if e["ev"] == "merge"], [], caps)
            gates = [e for e in ev if e["ev"] == "gate"]
            self.assertEqual(len(gates), 1, caps)
            self.assertEqual((gates[0]["keep"], gates[0]["force"], gates[0]["reason"]),
                             (False, False, reason))
            self.assertEqual(gates[0].get("supports_async_decode"), value)
            for alarm in ("should have run", "forced", "unobserved: ", "kit error in"):
                self.assertNotIn(alarm, err, caps)
            self.assertIn("0 keep step(s) unobserved", err)

    def test_decode_through_the_trace(self):
        # upstream's decode test: a priming decode leaves its buffers on the
        # device, the next reuses the position; the stand-in model moves the
        # position on and writes the sampled token back, so the keep takes the
        # device's continuation when async is declared
        ran, ev, _ = self.probe("decode/true")
        m = [e for e in ev if e["ev"] == "merge"]
        self.assertEqual(len(m), 1)
        self.assertEqual((m[0]["step"], m[0]["host_pos"], m[0]["dev_pos"], m[0]["taken"]),
                         (1, [10] * 4, [11] * 4, [True] * 4))
        self.assertEqual(m[0]["buf_step"], 0)
        self.assertEqual([t["op"] for t in ev if t["ev"] == "trace"], ["restage", "restage"])
        ran_off, ev_off, _ = self.probe("decode/undeclared")
        self.assertEqual([e for e in ev_off if e["ev"] == "merge"], [])
        self.assertEqual(len([e for e in ev_off if e["ev"] == "gate"]), 1)
        self.assertNotEqual(ran, ran_off, "the keep made no difference to what was decoded")

    def test_positional_prefill_is_recorded(self):
        ran, ev, err = self.probe("prefill")
        self.assertEqual([(e["step"], e["slots"]) for e in ev if e["ev"] == "prefill"],
                         [(0, [0, 1]), (1, [3])])
        self.assertNotIn("ttaudit: kit error in", err)
        base, _, _ = self.probe("prefill", kit_on=False)
        self.assertEqual(ran, base)

    def test_what_was_fed_wins_over_the_decision(self):
        # a patch that computes use_dev and feeds the host tokens anyway: the
        # audit says nothing was taken, and says the two disagreed
        cfg = {"targets": {"decode": [
            {"module": "models.tt_transformers.tt.generator", "name": "Generator.decode_forward"},
            {"module": "probe_patched", "name": "PatchedGenerator.decode_forward"}]}}
        ran, ev, err = self.probe("patched", config=cfg)
        self.assertEqual(ran, [[1, 2, 3, 4], [10, 10, 12, 50]])
        m = [e for e in ev if e["ev"] == "merge"]
        self.assertEqual(len(m), 1)
        self.assertEqual(m[0]["taken"], [False] * 4)
        self.assertIn("2 slot(s) whose decision and fed inputs disagreed", err)
        self.assertEqual(err.count("the inputs fed on to the trace are not the ones use_dev "
                                   "chose"), 1)

    def test_another_tracer_is_left_alone_and_counted(self):
        ran, ev, err = self.probe("tracer")
        self.assertEqual(ran, [[101, 102, 3, 4], [10, 11, 12, 50]])
        self.assertEqual([e for e in ev if e["ev"] == "merge"], [])
        self.assertIn("could not be observed: another trace function is set", err)
        self.assertIn("1 keep step(s) unobserved", err)

    def test_a_renamed_local_is_fixed_in_the_name_table(self):
        ran, ev, err = self.probe("unit/true", config={"inline": {"decision": "use_device"}})
        self.assertEqual([e for e in ev if e["ev"] == "merge"], [])
        self.assertIn("ttaudit: keep: none in Generator.decode_forward", err)
        self.assertIn("no statement compares dev_pos with host_pos", err)
        self.assertEqual(ran, [[101, 102, 3, 4], [10, 11, 12, 50]])


class TestKitOnStandin(unittest.TestCase):
    """The kit over the stand-in engine (the TT plugin's batch, runner and
    submissions around the generator), in the process that runs it; the audit
    against the stand-in's own account (standin_truth)."""

    SCENARIO_DP = os.path.join(STANDIN, "scenario-dp.json")

    def engine(self, extra, kit_on=True, scenario=SCENARIO):
        d = tempfile.mkdtemp()
        audit, truth = os.path.join(d, "audit.jsonl"), os.path.join(d, "truth.jsonl")
        env = dict(extra, STANDIN_TRUTH=truth, TTAUDIT_EMIT_SINK="file:" + audit)
        p = run_kit([PYTHON, os.path.join(STANDIN, "standin_engine.py"), scenario], env,
                    kit_on=kit_on)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        execs = {}
        for r in read_jsonl(truth):
            if r["kind"] == "exec":
                execs[(r["step"], r["dp"])] = r
        return audit_of(audit), execs, p

    def assertIsTruth(self, got, execs):
        merges = [e for e in got if e["ev"] == "merge"]
        judged = {k: r for k, r in execs.items() if "taken" in r}
        self.assertGreater(len(merges), 0)
        self.assertEqual(sorted((m["step"], m.get("dp", 0)) for m in merges), sorted(judged))
        subst = 0
        for m in merges:
            t = judged[(m["step"], m.get("dp", 0))]
            self.assertEqual(m["host_pos"], t["host_pos"], m["step"])
            self.assertEqual(m["host_tok"], t["host_tok"], m["step"])
            self.assertEqual(m["dev_pos"], t["dev_pos"], m["step"])
            self.assertEqual(m["dev_tok"], t["dev_tok"], m["step"])
            self.assertEqual(m["buf_step"], t["buf_step"], m["step"])
            self.assertEqual(m["slot_req"], t["rows"], m["step"])
            self.assertEqual(m["buf_req"], t["buf_req"], m["step"])
            self.assertEqual(m["prefilled"], t["prefilled"], m["step"])
            self.assertEqual(m["mode_switched"], t["mode_switched"], m["step"])
            for s, hp in enumerate(m["host_pos"]):
                if hp != -1 and not t["ambiguous"][s]:
                    self.assertEqual(m["taken"][s], t["taken"][s], "step %d slot %d"
                                     % (m["step"], s))
                if m["taken"][s] and hp != -1:
                    subst += m["slot_req"][s] != m["buf_req"][s]
        self.assertEqual(subst, sum(sum(r["substituted"]) for r in judged.values()))
        return merges

    def test_file_sink_is_plain_jsonl_with_pid_and_rank(self):
        got, execs, p = self.engine({"STANDIN_CAPS": "true"})
        self.assertIsTruth(got, execs)
        self.assertEqual(got[0]["ev"], "config")
        self.assertEqual((got[0]["max_model_len"], got[0]["slots"]), (4096, 4))
        self.assertTrue(all(e["pid"] > 0 and e["rank"] == 0 for e in got))
        # a file audit holds JSON only: the banners went to stderr
        self.assertIn("ttaudit: guard none engaged (unguarded merge)", p.stderr)

    def test_data_parallel_chunks(self):
        got, execs, _ = self.engine({"STANDIN_CAPS": "true", "STANDIN_DP": "2"},
                                    scenario=self.SCENARIO_DP)
        merges = self.assertIsTruth(got, execs)
        self.assertEqual({m["dp"] for m in merges}, {0, 1})
        # chunk-local prefilled slots: rows 2 and 3 of the batch are chunk 1's 0 and 1
        self.assertEqual({tuple(m["prefilled"]) for m in merges}, {(0, 1)})
        self.assertEqual({t["dp"] for t in got if t["ev"] == "trace"}, {0, 1})

    def test_gemma4s_helper(self):
        got, execs, p = self.engine({"STANDIN_CAPS": "true", "STANDIN_MODEL": "gemma4"})
        self.assertIsTruth(got, execs)
        self.assertIn("calls the helper merge_async_ahead_decode_tokens", p.stderr)
        self.assertEqual({e["key"] for e in got if e["ev"] == "trace"}, {"(True, 4)"})

    def test_the_older_revision_has_no_keep(self):
        got, execs, p = self.engine({"STANDIN_CAPS": "true", "STANDIN_GENERATOR": "e749a1e5"})
        self.assertEqual([e for e in got if e["ev"] in ("merge", "gate")], [])
        self.assertIn("ttaudit: keep: none in Generator.decode_forward", p.stderr)
        ops = [e["op"] for e in got if e["ev"] == "trace"]
        # e749a1e5 restages whenever the page table changed: both kinds occur
        self.assertEqual(set(ops), {"restage", "replay"})
        self.assertNotIn("ttaudit: kit error in", p.stderr)

    def test_undeclared_capability_gates_without_alarm(self):
        got, execs, p = self.engine({"STANDIN_CAPS": "undeclared"})
        self.assertEqual([e for e in got if e["ev"] == "merge"], [])
        gates = [e for e in got if e["ev"] == "gate"]
        self.assertGreater(len(gates), 0)
        self.assertTrue(all("supports_async_decode" not in g for g in gates))
        self.assertIn("does not declare model_capabilities['supports_async_decode']: the keep "
                      "does not run", p.stderr)
        self.assertNotIn("should have run", p.stderr)

    def test_off_without_ttaudit_emit(self):
        got, _, p = self.engine({"STANDIN_CAPS": "true"}, kit_on=False)
        self.assertEqual(got, [])
        self.assertNotIn("ttaudit", p.stderr)

    def test_bad_config_is_reported_and_the_defaults_used(self):
        d = tempfile.mkdtemp()
        cfg = os.path.join(d, "bad.json")
        with open(cfg, "w") as f:
            f.write('{"targets": {"kep": {}}}')
        got, execs, p = self.engine({"STANDIN_CAPS": "true", "TTAUDIT_EMIT_CONFIG": cfg})
        self.assertIsTruth(got, execs)
        self.assertIn("TTAUDIT_EMIT_CONFIG ignored, using the built-in name table", p.stderr)
        self.assertIn("unknown role 'kep'", p.stderr)


class TestProcesses(unittest.TestCase):
    """Every process: spawn and fork children, sitecustomize chaining, the run command."""

    PROG = textwrap.dedent("""
        import json, multiprocessing, os, sys
        sys.path[:0] = %r

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
        """) % standin_paths.roots({})

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
