"""Tests of tools/instrument/ttaudit_emit.py, run by tests/e2e/60-instrument.sh.

A pure-Python model of the generator's async-ahead merge block (prefills,
trace and eager decodes, finishes, width changes, mode switches, garbage in
the device buffer, prompt lengths chosen to land on a stale buffer's
positions) drives the emitter for a few hundred steps. The model keeps its
own expected counts per rule, computed here from the replay semantics of the
merge audit contract, and they must equal what `ttaudit replay --json` counts
on the emitted file. The same run written through `logging` under
`ttaudit capture` must read back as the same event objects.

Run: BUILD=build python3 tests/python/test_emit.py [-v]
Exit 0 all passed, 1 a failure, 77 when a ttaudit command the test needs is
not built (the reason is the last line printed).

Also a helper program for the capture test:
  test_emit.py --emit log SEED ARM EVIDENCE    the model's audit through logging to stderr
"""

import io
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "instrument"))

from ttaudit_emit import MergeAudit, Stamp  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rules import (BASE_RULES, BUILD, COUNT_KEYS, TTAUDIT, Expected,  # noqa: E402
                   have_command, read_jsonl, replay_json, run_tests)

PYTHON = os.environ.get("PYTHON", sys.executable)
SLOTS = 8
MAX_LEN = 4096


# --- the model of the generator ------------------------------------------------

GARBAGE = (lambda r: 1206993122 + r.randrange(0, 200),     # float32 CCL index read as int32
           lambda r: 0x3F800000,                           # 1.0f
           lambda r: (1 << 40) + r.randrange(0, 1000),     # does not fit int32
           lambda r: -2 - r.randrange(0, 5),
           lambda r: MAX_LEN + r.randrange(0, 1000))        # past max_model_len, tiny as a float


class Model:
    """A generator with SLOTS slots: prefill steps put a request into the
    lowest free slot; trace decodes run the merge block when the batch was
    reset or the mode switched and then refresh the device buffer (stamping
    it); eager decodes advance the batch without refreshing the buffer, so
    it ages across whole request generations, and clear the prefilled set
    all the same. The running code applies `arm` ("bare", "batch" or
    "stamp", the last driven by the Stamp object itself).

    `evidence`: "mixed" cycles the merge events through five field sets
    (request ids and stamps, per-slot stamps, batch stamp only, buf_step
    only, nothing); "per-slot" leaves out the batch-stamp-only set; "none"
    gives no evidence at all. `config`: write the config
    event (max_model_len, so the garbage bound is known)."""

    def __init__(self, audit, seed, arm, evidence="mixed", config=True, steps=400):
        self.audit = audit
        self.r = random.Random(seed)
        self.arm = arm
        self.evidence = evidence
        self.config = config
        self.steps = steps
        self.stamp = Stamp(SLOTS)
        self.req = [None] * SLOTS
        self.pos = [0] * SLOTS
        self.left = [0] * SLOTS
        self.tok = [0] * SLOTS
        self.buf_pos = [-1] * SLOTS
        self.buf_tok = [0] * SLOTS
        self.buf_writer = [None] * SLOTS
        self.buf_step = None
        self.prefilled = set()
        self.trace = True
        self.eager_left = 0     # eager decodes before the next trace decode
        self.mode_switched = False
        self.reset = False
        self.width = 4
        self.n_req = 0
        self.merges = []        # the merge events as passed to the emitter
        self.truth_subst = 0    # slots the running code took from a buffer written for another request
        self.coincidences = 0   # prompt lengths chosen to land on a stale buffer's position
        self.past_prefilled = 0  # stale slots bare takes that the prefilled set does not hold

    def run(self):
        if self.config:
            self.audit.config(slots=SLOTS, max_model_len=MAX_LEN, arm=self.arm)
        for step in range(self.steps):
            free = [s for s in range(SLOTS) if self.req[s] is None]
            busy = [s for s in range(SLOTS) if self.req[s] is not None]
            if free and (not busy or self.r.random() < 0.3):
                self.prefill_step(step, free[0])
            else:
                self.decode_step(step, busy)
        return self

    def prefill_step(self, step, s):
        self.n_req += 1
        rid = "cmpl-%08x" % (self.n_req * 2654435761 % (1 << 32))
        old = self.buf_pos[s] if s < len(self.buf_pos) else -1
        if 8 < old < MAX_LEN and self.buf_writer[s] is not None and self.r.random() < 0.6:
            # lands on dev == host or host + 1 at the next merge; in eager
            # mode a few decodes (which clear the prefilled set) come first
            plen = old - self.r.randrange(0, 2) - (0 if self.trace else self.eager_left)
            self.coincidences += 1
        else:
            plen = self.r.randrange(5, 900)
        self.req[s] = rid
        self.pos[s] = plen
        self.left[s] = self.r.randrange(2, 30)
        self.tok[s] = self.r.randrange(0, 150000)
        self.stamp.start(s, rid)
        self.prefilled.add(s)
        self.reset = True
        self.audit.request("start", rid, s, step)
        self.audit.prefill(step, [s])

    def decode_step(self, step, busy):
        if self.trace and self.r.random() < 0.06:
            self.trace = False
            self.eager_left = self.r.randrange(1, 6)
        if not self.trace:
            if self.eager_left == 0:
                self.trace = True
                self.mode_switched = True
            else:
                self.eager_left -= 1
        width = 4 if all(s < 4 for s in busy) else SLOTS
        if width != self.width:
            self.audit.width_change(step, self.width, width)
            self.stamp.changed()
            self.width = width
            self.reset = True
        if self.trace and (self.reset or self.mode_switched):
            self.merge_block(step)
        for s in busy:
            self.pos[s] += 1
            self.tok[s] = self.r.randrange(0, 150000)
            self.left[s] -= 1
        if self.trace:
            self.refresh_buffer(step)
            self.reset = False
            self.mode_switched = False
        self.audit.decode(step, busy)
        self.prefilled.clear()     # cleared on every decode, trace or eager
        for s in busy:
            if self.left[s] <= 0:
                self.audit.request("finish", self.req[s], s, step)
                self.stamp.finish(s)
                self.req[s] = None
                self.reset = True

    def refresh_buffer(self, step):
        w = self.width
        self.buf_pos = [-1] * w
        self.buf_tok = [0] * w
        self.buf_writer = [None] * w
        for s in range(w):
            if self.req[s] is not None:
                # async-ahead: the device is one position ahead, or level
                # with a host that has already taken its token
                self.buf_pos[s] = self.pos[s] + (1 if self.r.random() < 0.7 else 0)
                self.buf_tok[s] = self.r.randrange(0, 150000)
                self.buf_writer[s] = self.req[s]
                if self.r.random() < 0.03:
                    self.buf_pos[s] = self.r.choice(GARBAGE)(self.r)
            elif self.r.random() < 0.15:
                self.buf_pos[s] = self.r.choice(GARBAGE)(self.r)
        self.buf_step = step
        self.stamp.capture(step)

    def merge_block(self, step):
        h = self.width
        host = [self.pos[s] if self.req[s] is not None else -1 for s in range(h)]
        dev = list(self.buf_pos)
        active = [s for s in range(h) if host[s] != -1]
        if len(dev) < h:
            taken = [False] * h          # the shape-mismatch branch keeps host tokens
        else:
            bare = [s in active and (dev[s] == host[s] or dev[s] == host[s] + 1)
                    for s in range(h)]
            if self.arm == "bare":
                g = [True] * h
            elif self.arm == "batch":
                same = all((dev[s] != -1) == (host[s] != -1) for s in range(h))
                g = [same] * h
            elif self.arm == "stamp":
                g = self.stamp.allowed(h)
            else:
                raise AssertionError(self.arm)
            taken = [bare[s] and g[s] for s in range(h)]
            for s in active:
                stale = self.buf_writer[s] != self.req[s]
                if taken[s] and stale:
                    self.truth_subst += 1
                if bare[s] and stale and s not in self.prefilled:
                    self.past_prefilled += 1
        kw = {"reset_batch": self.reset, "mode_switched": self.mode_switched,
              "taken": taken, "arm": self.arm}
        tiers = {"mixed": (0, 1, 2, 3, 4), "per-slot": (0, 1, 3, 4), "none": (4,)}[self.evidence]
        tier = tiers[len(self.merges) % len(tiers)]
        f = self.stamp.fields(h)
        if tier == 0:
            kw.update(f)
            kw["prefilled"] = set(self.prefilled)
            kw["host_tok"] = [self.tok[s] if self.req[s] is not None else 0 for s in range(h)]
            kw["dev_tok"] = list(self.buf_tok)
        elif tier == 1:
            kw.update({k: f[k] for k in ("gen", "buf_gen", "slot_gen", "buf_slot_gen")})
            kw["buf_step"] = self.buf_step
            kw["prefilled"] = sorted(self.prefilled)
        elif tier == 2:
            kw.update(gen=f["gen"], buf_gen=f["buf_gen"], prefilled=set(self.prefilled))
        elif tier == 3:
            kw.update(buf_step=self.buf_step, prefilled=set(self.prefilled))
        self.audit.merge(step, host, dev, **kw)
        ev = dict(kw, ev="merge", step=step, host_pos=host, dev_pos=dev)
        self.merges.append({k: v for k, v in ev.items() if v is not None})


def expected_for(model, rules):
    e = Expected(rules)
    max_pos = MAX_LEN if model.config else None
    for ev in model.merges:
        e.add(ev, max_pos)
    return e


# --- helpers -------------------------------------------------------------------

def with_env(value):
    """Context: TTAUDIT_EMIT set to value (None: unset)."""
    class _Env:
        def __enter__(self):
            self.old = os.environ.get("TTAUDIT_EMIT")
            if value is None:
                os.environ.pop("TTAUDIT_EMIT", None)
            else:
                os.environ["TTAUDIT_EMIT"] = value

        def __exit__(self, *exc):
            if self.old is None:
                os.environ.pop("TTAUDIT_EMIT", None)
            else:
                os.environ["TTAUDIT_EMIT"] = self.old
    return _Env()


class Poison:
    """An argument that fails the test if the emitter looks at it."""
    def _touched(self, *a, **k):
        raise AssertionError("a disabled emitter touched its argument")
    __iter__ = __len__ = __index__ = __int__ = __bool__ = __eq__ = _touched
    __getattr__ = _touched
    __hash__ = object.__hash__


class Broken(io.StringIO):
    def write(self, s):
        raise OSError(28, "No space left on device")


# --- tests ---------------------------------------------------------------------

class TestFormat(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def test_known_incident_exact_line(self):
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out)
        a.merge(41, [22, 25, 27, 25, 22, 25, 27, 27], [29, -1, -1, -1, -1, -1, -1, 28],
                reset_batch=True, mode_switched=False, taken=[False] * 7 + [True], arm="bare")
        self.assertEqual(out.getvalue(),
                         'MERGE_AUDIT {"ev":"merge","step":41,'
                         '"host_pos":[22,25,27,25,22,25,27,27],'
                         '"dev_pos":[29,-1,-1,-1,-1,-1,-1,28],'
                         '"reset_batch":true,"mode_switched":false,'
                         '"taken":[false,false,false,false,false,false,false,true],'
                         '"arm":"bare"}\n')

    def test_file_is_plain_jsonl_in_contract_key_order(self):
        path = os.path.join(self.d, "a.jsonl")
        with with_env("1"):
            a = MergeAudit(path)
        st = Stamp(4)
        st.start(0, "cmpl-a")
        st.capture(5)
        st.finish(0)
        st.start(0, "cmpl-b")
        a.config(slots=4, max_model_len=131072, arm="stamp")
        a.merge(7, (10, -1, -1, -1), range(11, 15), reset_batch=True, mode_switched=True,
                host_tok=[1, 0, 0, 0], dev_tok=[2, 3, 4, 5], prefilled={0},
                taken=[False] * 4, arm="stamp", **st.fields(4))
        a.close()
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], '{"ev":"config","slots":4,"max_model_len":131072,"arm":"stamp"}')
        ev = json.loads(lines[1])
        self.assertEqual(list(ev), ["ev", "step", "host_pos", "dev_pos", "reset_batch",
                                    "mode_switched", "host_tok", "dev_tok", "prefilled",
                                    "buf_step", "gen", "buf_gen", "slot_gen", "buf_slot_gen",
                                    "slot_req", "buf_req", "taken", "arm"])
        self.assertEqual(ev["slot_req"], ["cmpl-b", None, None, None])
        self.assertEqual(ev["buf_req"], ["cmpl-a", None, None, None])
        self.assertEqual((ev["gen"], ev["buf_gen"]), (3, 1))
        self.assertEqual((ev["slot_gen"][0], ev["buf_slot_gen"][0]), (2, 1))
        self.assertEqual(ev["buf_step"], 5)
        self.assertNotIn(" ", lines[1])

    def test_context_events(self):
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out, prefix="")
        a.decode(3, {2, 0})
        a.prefill(4, [5])
        a.width_change(5, 4, 8)
        a.request("start", "chatcmpl-1f", 5, 4)
        a.request("finish", "chatcmpl-1f", 5)
        self.assertEqual(out.getvalue().splitlines(), [
            '{"ev":"decode","step":3,"slots":[0,2]}',
            '{"ev":"prefill","step":4,"slots":[5]}',
            '{"ev":"width_change","step":5,"from":4,"to":8}',
            '{"ev":"request","phase":"start","req":"chatcmpl-1f","slot":5,"step":4}',
            '{"ev":"request","phase":"finish","req":"chatcmpl-1f","slot":5}'])

    def test_logger_line_carries_prefix_after_log_prefix(self):
        out = io.StringIO()
        lg = logging.getLogger("ttaudit-test-fmt")
        lg.propagate = False
        h = logging.StreamHandler(out)
        h.setFormatter(logging.Formatter("%(levelname)s [generator.py:1930] %(message)s"))
        lg.addHandler(h)
        lg.setLevel(logging.INFO)
        with with_env("1"):
            a = MergeAudit(lg)
        a.merge(1, [1], [2], reset_batch=False, mode_switched=True)
        self.assertEqual(out.getvalue(), 'INFO [generator.py:1930] MERGE_AUDIT {"ev":"merge",'
                         '"step":1,"host_pos":[1],"dev_pos":[2],"reset_batch":false,'
                         '"mode_switched":true}\n')

    def test_record_names_the_callers_line(self):
        # the log record's source is the code that called merge (the
        # generator's line), never this package's own write
        out = io.StringIO()
        lg = logging.getLogger("ttaudit-test-src")
        lg.propagate = False
        h = logging.StreamHandler(out)
        h.setFormatter(logging.Formatter("%(filename)s:%(funcName)s:%(lineno)d %(message)s"))
        lg.addHandler(h)
        lg.setLevel(logging.INFO)
        with with_env("1"):
            a = MergeAudit(lg)

        def decode_forward():
            a.merge(1, [1], [2], reset_batch=True, mode_switched=False)
            return sys._getframe().f_lineno - 1
        line = decode_forward()
        self.assertEqual(out.getvalue().split(" ")[0], "test_emit.py:decode_forward:%d" % line)
        try:
            from loguru import logger
        except ImportError:
            return
        out = io.StringIO()
        logger.remove()
        hid = logger.add(out, format="{file}:{function}:{line} {message}")
        try:
            with with_env("1"):
                a = MergeAudit(logger)
            line = decode_forward()
        finally:
            logger.remove(hid)
            logger.add(sys.stderr)
        self.assertEqual(out.getvalue().split(" ")[0], "test_emit.py:decode_forward:%d" % line)

    def test_timestamps(self):
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out, prefix="", timestamps=True)
        a.merge(2, [5], [6], reset_batch=True, mode_switched=False)
        ev = json.loads(out.getvalue())
        self.assertEqual(list(ev)[-1], "t")
        self.assertIsInstance(ev["t"], float)
        self.assertGreater(ev["t"], 1.5e9)

    def test_array_likes_are_converted(self):
        class Arr:                      # what torch and numpy offer
            def __init__(self, v):
                self.v = v

            def tolist(self):
                return self.v
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out, prefix="")
        a.merge(2, Arr([5, -1]), Arr([6, -1, 9]), reset_batch=Arr(True), mode_switched=False,
                taken=Arr([True, False]))
        ev = json.loads(out.getvalue())
        self.assertEqual((ev["host_pos"], ev["dev_pos"], ev["reset_batch"], ev["taken"]),
                         ([5, -1], [6, -1, 9], True, [True, False]))


class TestWrongCalls(unittest.TestCase):
    """With strict=True a wrong call raises, naming the argument; the
    default (what a server runs with) counts it instead (TestNeverRaises)."""

    def setUp(self):
        self.out = io.StringIO()
        with with_env("1"):
            self.a = MergeAudit(self.out, strict=True)

    def good(self, **over):
        kw = dict(step=3, host_pos=[1, 2, -1], dev_pos=[2, 3, -1], reset_batch=True,
                  mode_switched=False)
        kw.update(over)
        return kw

    def bad(self, exc, words, **over):
        with self.assertRaises(exc) as cm:
            self.a.merge(**self.good(**over))
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertEqual(self.out.getvalue(), "", "a wrong call wrote a line")

    def test_good_call_writes(self):
        self.a.merge(**self.good())
        self.assertTrue(self.out.getvalue().startswith("MERGE_AUDIT {"))

    def test_float_position(self):
        self.bad(TypeError, ["dev_pos[1]", "float"], dev_pos=[2, 3.0, -1])

    def test_bool_position(self):
        self.bad(TypeError, ["host_pos[0]", "bool"], host_pos=[True, 2, -1])

    def test_int64_range(self):
        self.bad(ValueError, ["dev_pos[0]", "int64"], dev_pos=[1 << 63, 3, -1])
        self.bad(ValueError, ["host_pos[2]", "int64"], host_pos=[1, 2, -(1 << 63) - 1])

    def test_lengths_differ(self):
        self.bad(ValueError, ["taken", "2 entries", "host_pos has 3"], taken=[True, False])
        self.bad(ValueError, ["slot_gen"], slot_gen=[1, 2], buf_slot_gen=[1, 2])
        self.bad(ValueError, ["buf_req"], slot_req=["a", "b", None], buf_req=["a", None])
        self.bad(ValueError, ["dev_tok"], dev_tok=[1, 2])

    def test_pairs_go_together(self):
        self.bad(ValueError, ["gen and buf_gen"], gen=3)
        self.bad(ValueError, ["slot_gen and buf_slot_gen"], buf_slot_gen=[1, 1, 1])
        self.bad(ValueError, ["slot_req and buf_req"], slot_req=["a", "b", None])

    def test_other_types(self):
        self.bad(TypeError, ["host_pos", "str"], host_pos="1,2,-1")
        self.bad(TypeError, ["reset_batch", "bool"], reset_batch=1)
        self.bad(TypeError, ["taken[0]", "bool"], taken=[1, 0, 0])
        self.bad(TypeError, ["slot_req[1]"], slot_req=["a", 7, None], buf_req=["a", "b", None])
        self.bad(TypeError, ["step"], step=2.0)
        self.bad(ValueError, ["step", ">= 0"], step=-1)
        self.bad(ValueError, ["prefilled", "slot 3"], prefilled={3})
        self.bad(TypeError, ["arm"], arm="")
        with self.assertRaises(TypeError):
            self.a.merge(3, [1], [1])           # reset_batch, mode_switched are required

    def test_context_events_validate(self):
        with self.assertRaises(ValueError):
            self.a.request("done", "cmpl-1", 0)
        with self.assertRaises(TypeError):
            self.a.prefill(1, [0.5])
        with self.assertRaises(ValueError):
            self.a.config(max_model_len=0)
        with self.assertRaises(ValueError):
            self.a.width_change(1, 4, 0)
        self.assertEqual(self.out.getvalue(), "")



def capture_stderr(fn):
    old, sys.stderr = sys.stderr, io.StringIO()
    try:
        fn()
        return sys.stderr.getvalue()
    finally:
        sys.stderr = old


class TestNeverRaises(unittest.TestCase):
    """Whatever the caller does wrong, nothing reaches it: counted, reported once."""

    def test_wrong_calls_counted_and_reported_once(self):
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out)

        def go():
            a.merge(3, [1, 2.0], [2, 3], reset_batch=True, mode_switched=False)
            a.merge(3, [1], [2], reset_batch=True, mode_switched=False, taken=[True, False])
            a.merge(3, [1], [2])                         # why the merge ran is missing
            a.merge(3, [1], [2], True, False)            # positional where keywords belong
            a.merge()                                    # nothing at all
            a.request("done", "cmpl-1", 0)
            a.config(slots="8")
            a.gate(1, keep="no", supports_async_decode=False, force=False, reason="x")
            a.trace(1, "run", "(True, 8)")
            a.note("two\nlines")
            a.merge(4, [1], [2], reset_batch=True, mode_switched=False)
        err = capture_stderr(go)
        self.assertEqual(a.rejected, 10)
        self.assertEqual(a.lines, 1, "the good call after the wrong ones is written")
        self.assertEqual(out.getvalue().count("MERGE_AUDIT"), 1)
        self.assertEqual(err.count("ttaudit_emit:"), 1, err)
        self.assertIn("host_pos[1] is a float", err)

    def test_bad_constructor_arguments_fall_back(self):
        def go():
            with with_env("1"):
                self.a1 = MergeAudit(io.StringIO(), prefix="X {")
                self.a2 = MergeAudit(os.path.join(tempfile.mkdtemp(), "a.jsonl"),
                                     prefix="MERGE_AUDIT ")
                self.a3 = MergeAudit(42)
        err = capture_stderr(go)
        self.assertEqual(err.count("ttaudit_emit:"), 3, err)
        self.assertEqual(self.a1._prefix, "MERGE_AUDIT ")
        self.assertEqual(self.a2._prefix, "")
        self.assertEqual(self.a3.kind, "stderr")
        err = capture_stderr(lambda: self.a3.merge(1, [1], [2], reset_batch=True,
                                                   mode_switched=False))
        self.assertIn('MERGE_AUDIT {"ev":"merge"', err)

    def test_bad_common_field_is_rejected_not_raised(self):
        out = io.StringIO()
        with with_env("1"):
            a = MergeAudit(out, common={"rank": object()})
        capture_stderr(lambda: a.merge(1, [1], [2], reset_batch=True, mode_switched=False))
        self.assertEqual((a.rejected, a.lines, out.getvalue()), (1, 0, ""))


class TestOff(unittest.TestCase):
    def test_off_writes_nothing_and_touches_nothing(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "off.jsonl")
        for value in (None, "", "0", "yes"):
            with with_env(value):
                a, s = MergeAudit(path), MergeAudit(io.StringIO())
            self.assertFalse(a.on)
            p = Poison()
            for x in (a, s):
                x.merge(p, p, p, reset_batch=p, mode_switched=p, host_tok=p, dev_tok=p,
                        prefilled=p, buf_step=p, gen=p, buf_gen=p, slot_gen=p,
                        buf_slot_gen=p, slot_req=p, buf_req=p, taken=p, arm=p)
                x.config(slots=p, max_model_len=p, arm=p)
                x.decode(p, p)
                x.prefill(p, p)
                x.request(p, p, p, p)
                x.width_change(p, p, p)
            self.assertEqual(s._target.getvalue(), "")
            a.close()
            self.assertFalse(os.path.exists(path), "TTAUDIT_EMIT=%r created the file" % value)

    def test_model_run_off_writes_nothing(self):
        path = os.path.join(tempfile.mkdtemp(), "off.jsonl")
        with with_env(None):
            a = MergeAudit(path)
        m = Model(a, seed=5, arm="batch").run()
        a.close()
        self.assertGreater(len(m.merges), 20)
        self.assertFalse(os.path.exists(path))
        self.assertEqual(a.lines, 0)


class TestFailures(unittest.TestCase):
    capture_stderr = staticmethod(lambda fn: capture_stderr(fn))

    def test_stream_error_counted_and_reported_once(self):
        with with_env("1"):
            a = MergeAudit(Broken())

        def go():
            for i in range(5):
                a.merge(i, [1], [2], reset_batch=True, mode_switched=False)
        err = self.capture_stderr(go)
        self.assertEqual(a.errors, 5)
        self.assertEqual(a.lines, 0)
        self.assertEqual(err.count("ttaudit_emit:"), 1, err)
        self.assertIn("No space left on device", err)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full on this system")
    def test_disk_full_file(self):
        with with_env("1"):
            a = MergeAudit("/dev/full")

        def go():
            a.merge(1, [1], [2], reset_batch=True, mode_switched=False)
            a.merge(2, [1], [2], reset_batch=True, mode_switched=False)
            a.close()
        err = self.capture_stderr(go)
        self.assertEqual(a.errors, 2)
        self.assertIn("/dev/full: audit write failed", err)
        self.assertIn("2 audit line(s) lost", err)

    def test_unopenable_path(self):
        def go():
            with with_env("1"):
                a = MergeAudit(os.path.join(tempfile.mkdtemp(), "no", "such", "a.jsonl"))
            a.merge(1, [1], [2], reset_batch=True, mode_switched=False)
            return a
        err = self.capture_stderr(go)
        self.assertIn("audit write failed", err)

    def test_logger_that_drops_info_writes_to_stderr_instead(self):
        # the bug of the old patch: a logging.getLogger(__name__) that nobody
        # configured drops INFO records; the lines now go to stderr, reported once
        for name, level in (("ttaudit-test-quiet", logging.WARNING),
                            ("ttaudit-test-unconfigured", logging.NOTSET)):
            lg = logging.getLogger(name)
            lg.setLevel(level)
            lg.propagate = level != logging.NOTSET or lg.propagate
            with with_env("1"):
                a = MergeAudit(lg)

            def go():
                a.merge(1, [1], [2], reset_batch=True, mode_switched=False)
                a.merge(2, [1], [2], reset_batch=True, mode_switched=False)
            err = self.capture_stderr(go)
            self.assertEqual((a.errors, a.lines), (0, 2), name)
            self.assertEqual(err.count("MERGE_AUDIT {"), 2, err)
            self.assertEqual(err.count("ttaudit_emit:"), 1, err)
            self.assertIn("would drop the audit lines", err)


class TestStamp(unittest.TestCase):
    def test_generations(self):
        st = Stamp(3)
        self.assertEqual(st.allowed(), [False, False, False])     # never captured
        st.start(0, "r1")
        st.start(1, "r2")
        st.capture(10)
        self.assertTrue(st.current())
        self.assertEqual(st.allowed(2), [True, True])
        st.finish(1)
        self.assertFalse(st.current())
        self.assertEqual(st.allowed(2), [True, True])      # slot 1 free, its entry still r2's
        st.start(1, "r3")                                   # slot reuse
        self.assertEqual(st.allowed(2), [True, False])
        f = st.fields(2)
        self.assertEqual(f["slot_req"], ["r1", "r3"])
        self.assertEqual(f["buf_req"], ["r1", "r2"])
        self.assertEqual(f["buf_step"], 10)
        self.assertEqual(f["gen"] - f["buf_gen"], 2)
        gens = [st.gen]
        st.changed()
        gens.append(st.gen)
        self.assertLess(gens[0], gens[1])
        with self.assertRaises(ValueError):
            st.start(3)
        with self.assertRaises(ValueError):
            st.fields(4)

    def test_fields_without_request_ids(self):
        st = Stamp(2)
        st.start(0)
        st.capture()
        self.assertEqual(sorted(st.fields()), ["buf_gen", "buf_slot_gen", "gen", "slot_gen"])


class TestModel(unittest.TestCase):
    """The model's own sanity, without ttaudit: it must produce what the
    replay test needs to mean anything."""

    def test_model_produces_the_cases(self):
        m = Model(MergeAudit(io.StringIO(), enable=False), seed=1, arm="stamp").run()
        e = expected_for(m, BASE_RULES + ("batch+lifetime",))
        c = e.counts
        self.assertGreater(len(m.merges), 60)
        self.assertLess(max(max(ev["host_pos"]) for ev in m.merges), MAX_LEN)
        self.assertGreater(m.coincidences, 5)
        self.assertGreater(m.past_prefilled, 0, "no stale match outlived the prefilled set")
        self.assertGreater(c["bare"]["substitutions"], 3, "no stale buffer ever matched")
        self.assertGreater(c["batch"]["substitutions"], 0, "no residual case batch lets through")
        self.assertGreater(c["prefilled"]["substitutions"], 0,
                           "no stale buffer outlived the prefilled set")
        self.assertEqual(c["stamp"]["substitutions"], 0)
        self.assertGreater(c["stamp"]["prevented"], 0)
        for r in ("prefilled", "lifetime", "stamp"):
            self.assertGreater(c[r]["skipped"], 0, r)
        for k in ("forgone", "fired", "shape_fallback"):
            self.assertGreater(c["batch"][k], 0, k)
        self.assertGreater(c["bare"]["unverified"], 0)
        self.assertGreater(e.garbage, 0)
        self.assertGreater(e.float32_like, 0)
        self.assertLess(e.float32_like, e.garbage)
        self.assertEqual(m.truth_subst, 0, "the stamp guard let a stale slot through")
        # events that carry only the batch stamp (gen) judge a per-slot
        # guard by the whole batch, so the fingerprint cannot name it here
        self.assertNotIn("stamp", e.consistent())
        self.assertNotIn("bare", e.consistent())

    def test_stamp_evidence_agrees_with_request_ids(self):
        m = Model(MergeAudit(io.StringIO(), enable=False), seed=2, arm="bare").run()
        n = 0
        for ev in m.merges:
            if ev.get("slot_req") is None or len(ev["dev_pos"]) < len(ev["host_pos"]):
                continue
            for s, hp in enumerate(ev["host_pos"]):
                if hp != -1 and ev["buf_req"][s] is not None:
                    n += 1
                    self.assertEqual(ev["slot_req"][s] != ev["buf_req"][s],
                                     ev["slot_gen"][s] != ev["buf_slot_gen"][s], ev)
        self.assertGreater(n, 20)
        self.assertGreater(m.truth_subst, 0)

    def test_expected_counts_follow_the_known_cases(self):
        e = Expected(BASE_RULES)
        e.add({"step": 9, "host_pos": [22, 25, 27, 25, 22, 25, 27, 27],
               "dev_pos": [29, -1, -1, -1, -1, -1, -1, 28], "buf_step": 3}, 131072)
        self.assertEqual(e.counts["bare"]["substitutions"], 1)
        self.assertEqual(e.counts["batch"]["prevented"], 1)
        self.assertEqual(e.counts["batch"]["fired"], 1)
        e = Expected(BASE_RULES)
        e.add({"step": 202, "host_pos": [128738, 128738, 128751, 128855, -1, -1, -1, -1],
               "dev_pos": [128852, 128852, 1206993122, 128842, -1, -1, -1, -1]}, None)
        self.assertEqual((e.garbage, e.float32_like), (1, 1))
        self.assertEqual(e.counts["batch"]["fired"], 0)
        e = Expected(BASE_RULES)
        e.add({"step": 5, "host_pos": [10, 10, 12, 50], "dev_pos": [10, 11, 12, 13],
               "prefilled": [2], "slot_req": ["a", "b", "c", "d"],
               "buf_req": ["a", "b", "x", "d"]}, 4096)
        self.assertEqual(e.counts["bare"]["taken"], 3)
        self.assertEqual(e.counts["prefilled"]["taken"], 2)
        self.assertEqual(e.counts["prefilled"]["prevented"], 1)


class TestReplay(unittest.TestCase):
    """The emitted audit, replayed by ttaudit, counts what the model counts."""

    def setUp(self):
        why = have_command("replay")
        if why:
            self.skipTest(why)
        self.d = tempfile.mkdtemp()

    def check(self, model, got):
        rules = sorted(got.get("rules", {}))
        for r in BASE_RULES:
            self.assertIn(r, rules, "replay --json lacks rule %s" % r)
        e = expected_for(model, rules)
        for r in rules:
            want = e.counts[r]
            have = {k: got["rules"][r].get(k) for k in COUNT_KEYS}
            self.assertEqual(have, want, "rule %s: replay counted %s, the model %s"
                             % (r, have, want))
        self.assertEqual(got["garbage"]["count"], e.garbage)
        self.assertEqual(got["garbage"]["float32_like"], e.float32_like)
        self.assertEqual(got["malformed"], 0)
        fp = got.get("fingerprint", {})
        self.assertEqual(sorted(fp.get("consistent", [])), e.consistent())
        self.assertTrue(fp.get("verdict"))
        return e

    def run_model(self, name, **kw):
        path = os.path.join(self.d, name)
        with with_env("1"):
            a = MergeAudit(path)
        m = Model(a, **kw).run()
        a.close()
        self.assertEqual(a.errors, 0)
        objs = read_jsonl(path)
        merges = [o for o in objs if o["ev"] == "merge"]
        self.assertEqual(len(merges), len(m.merges))
        for got, want in zip(merges, m.merges):
            want = dict(want)
            if "prefilled" in want:
                want["prefilled"] = sorted(want["prefilled"])
            self.assertEqual(got, want)
        return m, path

    def test_mixed_evidence_stamp_arm(self):
        m, path = self.run_model("stamp.jsonl", seed=1, arm="stamp")
        e = self.check(m, replay_json(path))
        self.assertGreater(e.counts["bare"]["substitutions"], 0)
        self.assertEqual(e.counts["stamp"]["substitutions"], 0)

    def test_per_slot_evidence_names_the_stamp_arm(self):
        m, path = self.run_model("slot.jsonl", seed=4, arm="stamp", evidence="per-slot")
        e = self.check(m, replay_json(path))
        self.assertEqual(e.consistent(), ["stamp"])

    def test_mixed_evidence_batch_arm(self):
        m, path = self.run_model("batch.jsonl", seed=7, arm="batch", steps=300)
        e = self.check(m, replay_json(path))
        self.assertIn("batch", e.consistent())

    def test_no_evidence_no_config(self):
        m, path = self.run_model("none.jsonl", seed=3, arm="bare", evidence="none",
                                 config=False, steps=250)
        got = replay_json(path)
        e = self.check(m, got)
        for r in ("prefilled", "lifetime", "stamp", "bound"):
            self.assertEqual(got["rules"][r]["skipped"] + got["rules"][r]["shape_fallback"],
                             got["rules"][r]["merges"], r)
        self.assertGreater(e.counts["bare"]["unverified"], 0)

    def test_counts_move_when_one_event_changes(self):
        # the comparison is not blind: one flipped position changes the replay
        m, path = self.run_model("flip.jsonl", seed=1, arm="stamp")
        before = replay_json(path)
        objs = read_jsonl(path)
        for o in objs:
            if o["ev"] == "merge" and len(o["dev_pos"]) >= len(o["host_pos"]) \
                    and o["host_pos"][0] != -1 and o["dev_pos"][0] not in \
                    (o["host_pos"][0], o["host_pos"][0] + 1):
                o["dev_pos"][0] = o["host_pos"][0]
                break
        with open(path, "w") as f:
            f.writelines(json.dumps(o, separators=(",", ":")) + "\n" for o in objs)
        after = replay_json(path)
        self.assertEqual(after["rules"]["bare"]["taken"], before["rules"]["bare"]["taken"] + 1)

def doc_example():
    """The python block of docs/instrumenting.md's "By hand" section."""
    with open(os.path.join(ROOT, "docs", "instrumenting.md"), encoding="utf-8") as f:
        doc = f.read()
    part = doc[doc.index("## By hand"):]
    block = part[part.index("```python\n") + 10:]
    return block[:block.index("```\n")]


class TestDocExample(unittest.TestCase):
    """docs/instrumenting.md's example runs as it stands, through loguru, and
    writes the event a replay reads."""

    def test_by_hand_example(self):
        try:
            from loguru import logger
        except ImportError:
            self.skipTest("python3-loguru is not installed")
        out = io.StringIO()
        logger.remove()
        hid = logger.add(out, format="{time} | {level} | {name}:{line} - {message}")
        try:
            ns = {}
            with with_env("1"):
                exec(compile(doc_example(), "instrumenting.md", "exec"), ns)
            got = ns["audited_use_dev"](141, [22, 25, 27, 25], [29, -1, -1, 26], {1}, True,
                                        False)
            ns["audited_use_dev"](142, [1, 2], [2.5, 3], set(), True, False)   # a wrong call
        finally:
            logger.remove(hid)
            logger.add(sys.stderr)
        self.assertEqual(got, [False, False, False, True])
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        ev = json.loads(lines[0][lines[0].index("MERGE_AUDIT ") + 12:])
        self.assertEqual(ev, {"ev": "merge", "step": 141, "host_pos": [22, 25, 27, 25],
                              "dev_pos": [29, -1, -1, 26], "reset_batch": True,
                              "mode_switched": False, "prefilled": [1],
                              "taken": [False, False, False, True], "dp": 0})
        self.assertEqual((ns["audit"].lines, ns["audit"].rejected), (1, 1))


BANNERS = {
    "bare": "async merge: unguarded position match (no merge guard engaged)",
    "batch": "QWEN36_MERGE_BATCH_GUARD engaged: merge requires the buffer's active-slot "
             "pattern to match the batch",
    "stamp": "QWEN36_MERGE_STAMP_GUARD engaged: merge requires the buffer's generation "
             "stamp to match",
}


def emit_main(argv):
    """--emit log SEED ARM EVIDENCE: the model's audit through logging on stderr."""
    _, mode, seed, arm, evidence = argv
    assert mode == "log"
    lg = logging.getLogger("vllm.generator")
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(levelname)s %(asctime)s [generator.py:%(lineno)d] "
                                     "%(message)s", "%m-%d %H:%M:%S"))
    lg.addHandler(h)
    lg.setLevel(logging.INFO)
    lg.info(BANNERS[arm])
    a = MergeAudit(lg)
    Model(a, seed=int(seed), arm=arm, evidence=evidence).run()
    return 0 if a.errors == 0 else 1


class TestCapture(unittest.TestCase):
    """Lines emitted through logging under `ttaudit capture` read back as the
    same objects as the plain file of the same run."""

    def setUp(self):
        if "asan" in BUILD:
            self.skipTest("the capture shim is not preloaded into python under sanitizers")
        why = have_command("capture")
        if why:
            self.skipTest(why)
        self.d = tempfile.mkdtemp()

    def test_logging_under_capture_matches_file(self):
        seed, arm, evidence = "11", "batch", "mixed"
        plain = os.path.join(self.d, "plain.jsonl")
        with with_env("1"):
            a = MergeAudit(plain)
        Model(a, seed=int(seed), arm=arm, evidence=evidence).run()
        a.close()
        want = read_jsonl(plain)

        cap = os.path.join(self.d, "run.cap.jsonl")
        env = dict(os.environ, TTAUDIT_EMIT="1", BUILD=BUILD)
        p = subprocess.run([TTAUDIT, "capture", "-o", cap, "--", PYTHON, os.path.abspath(__file__),
                            "--emit", "log", seed, arm, evidence],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 0, "ttaudit capture exited %d: %s"
                         % (p.returncode, p.stderr[-2000:]))
        recs = read_jsonl(cap)
        got = [r["event"] for r in recs if r.get("src") == "audit"]
        lost = sum(r.get("count", 0) for r in recs if r.get("src") == "lost")
        self.assertEqual(lost, 0, "capture lost lines")
        self.assertEqual(len(got), len(want))
        self.assertEqual(got, want)
        banners = [r for r in recs if r.get("src") == "banner"]
        self.assertEqual(len(banners), 1, "want the one arm banner, got %s" % banners)
        self.assertIn(BANNERS[arm], banners[0].get("text", ""))

        # and the capture replays to the same counts as the plain file
        if have_command("replay") is None:
            a, b = replay_json(plain), replay_json(cap)
            self.assertEqual(a["rules"], b["rules"])
            self.assertEqual(a["garbage"], b["garbage"])

    def test_off_under_capture_writes_nothing(self):
        cap = os.path.join(self.d, "off.cap.jsonl")
        env = dict(os.environ, BUILD=BUILD)
        env.pop("TTAUDIT_EMIT", None)
        p = subprocess.run([TTAUDIT, "capture", "-o", cap, "--", PYTHON, os.path.abspath(__file__),
                            "--emit", "log", "11", "batch", "mixed"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        recs = read_jsonl(cap)
        self.assertEqual([r for r in recs if r.get("src") == "audit"], [])
        self.assertNotIn("MERGE_AUDIT", p.stderr)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--emit":
        return emit_main(sys.argv[1:])
    return run_tests(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
