"""ttaudit_emit.kit - the auto-instrumentation: wrappers around the real
generator's functions, and an observer of its inline keep, that write merge
audits from what the code did, and the guard banners.

One Kit per process (install() makes it; ttaudit_emit.auto calls install()
from the sitecustomize). It watches the modules of the name table
(ttaudit_emit.names) and wraps each target when its module is imported:

  decode   Generator.decode_forward (and Gemma4's mixin): one step of the
           clock. Its keep is inline (tt-metal: no helper); the kit finds it
           in the function's source by its statement (ttaudit_emit.inline)
           and, on the steps its gate can open (reset_batch or a mode switch),
           observes it in the running frame: per data-parallel chunk the host
           and device inputs as compared, the decision after the prefilled
           mask, and the values fed on to the trace; writes `merge` events,
           and a `gate` event when the capability alone kept the keep off
  trace    Generator._decode_forward_trace_text: the buffer capture points,
           per trace key and chunk, restage or replay as observed (below);
           writes `trace` events, gives `buf_step` and `buf_req` to merges
  restage  copy_host_to_device: a copy into a trace's inputs during a trace
           call is a restage
  keep     Gemma4's helper merge_async_ahead_decode_tokens, once per chunk:
           `merge` events from its arguments and return value
  prefill  Generator.prefill_forward_text (arguments bound through
           _prefill_forward_text_impl's signature): a step, the slot starts
  batch, prefill_batch  the TT plugin's submissions: request ids of the rows
  engine   vLLM's engine-core entry: the data-parallel rank

The gate is upstream's: model_capabilities.get("supports_async_decode",
False), an absent key meaning "not supported" (tt-metal PR #54565); the kit
reads the code's own decision and never assumes one. A wrapper never changes
what the wrapped function receives, returns or raises. Anything that goes
wrong inside the kit is counted and reported once (a line through the sink),
never raised into the server. A name in the table that is not there is
reported when its module is imported.
"""

import atexit
import collections.abc
import json
import os
import re
import sys
import threading

from . import hook, inline, names
from .emit import MergeAudit, sink_kind

CONFIG_VAR = "TTAUDIT_EMIT_CONFIG"
SINK_VAR = "TTAUDIT_EMIT_SINK"
RANK_VAR = "TTAUDIT_RANK"

# Guard flags of the seeds' patched generator and the arm each engages
# (docs/arms.md, interfaces B). Upstream prints no banner for any of them.
# A copy of the C list (analyzer/rule.h RULE_GUARD_FLAGS), the kit running
# without ttaudit; tests/test_rule.c holds the two together row for row.
GUARD_FLAGS = (
    ("QWEN36_PREFILLED_SLOTS_FIX", "prefilled"),
    ("QWEN36_MERGE_BATCH_GUARD", "batch"),
    ("QWEN36_MERGE_LIFETIME_GUARD", "lifetime"),
    ("QWEN36_MERGE_STAMP_GUARD", "stamp"),
    ("QWEN36_MERGE_GARBAGE_BOUND", "bound"),
)
# The seeds' patches engage a guard on exactly "1" (os.environ.get(F) ==
# "1"): any other value leaves it off, whatever it looks like.
_FALSE = ("0", "false", "no", "off", "")

_MISSING = object()
_FAILED = object()


def guard_banners(env):
    """The banner lines for the guard flags in `env`."""
    out, engaged = [], 0
    for flag, _arm in GUARD_FLAGS:
        v = env.get(flag)
        if v is None:
            continue
        if v == "1":
            out.append("ttaudit: guard %s engaged (env %s=%s)" % (flag, flag, v))
            engaged += 1
        elif v.strip().lower() in _FALSE:
            out.append("ttaudit: guard %s off (env %s=%s)" % (flag, flag, v))
        else:
            out.append("ttaudit: guard %s not engaged: the patch engages it on 1 only "
                       "(env %s=%s)" % (flag, flag, v))
    if not engaged:
        out.append("ttaudit: guard none engaged (unguarded merge)")
    return out


def initial_rank(env, process_name=None):
    """The process's data-parallel rank as far as its environment and name
    tell: TTAUDIT_RANK; vLLM's process name, EngineCore_DP<n> (data parallel;
    always so on the TT fork's dev branch) or EngineCore (vLLM main without
    data parallelism: rank 0); the MPI rank tt-run gives; None when nothing
    says."""
    v = env.get(RANK_VAR)
    if v is not None and v.isdigit():
        return int(v)
    name = process_name or ""
    m = re.match(r"EngineCore_DP(\d+)$", name)
    if m:
        return int(m.group(1))
    if name == "EngineCore":
        return 0
    for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        v = env.get(k)
        if v is not None and v.isdigit():
            return int(v)
    return None


def _process_name():
    try:
        import multiprocessing
        return multiprocessing.current_process().name
    except Exception:
        return None


def _flat(x):
    """A flat list from a tensor, array, list or tuple (nested ones flattened);
    None stays None."""
    if x is None:
        return None
    if hasattr(x, "tolist") and not isinstance(x, (list, tuple)):
        x = x.tolist()
    if not isinstance(x, (list, tuple)):
        return [x]
    out = []
    stack = [iter(x)]
    while stack:
        for v in stack[-1]:
            if isinstance(v, (list, tuple)):
                stack.append(iter(v))
                break
            if hasattr(v, "tolist") and not isinstance(v, (int, float, bool)):
                v = v.tolist()
                if isinstance(v, list):
                    stack.append(iter(v))
                    break
            out.append(v)
        else:
            stack.pop()
    return out


def _ints(x):
    v = _flat(x)
    if v is None:
        return None
    return [int(e) for e in v]


def _rows(x):
    """The number of rows of a batch input (tensor or list)."""
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return len(x)


def _chunks(x):
    """The per-chunk inputs of the trace functions: a list or tuple of chunks,
    or one tensor (one chunk)."""
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _attr_path(obj, path):
    """obj.a.0.b for "a.0.b"; None when any part is missing."""
    for p in path.split("."):
        if obj is None:
            return None
        if p.isdigit():
            try:
                obj = obj[int(p)]
            except Exception:
                return None
        else:
            obj = getattr(obj, p, None)
    return obj


def _key_text(key):
    return key if isinstance(key, str) else repr(key)


def _lookup(table, key):
    """table[key] without filling a defaultdict; None when absent."""
    try:
        if hasattr(table, "get"):
            return table.get(key)
        return table[key]
    except Exception:
        return None


class _Decode:
    """What one decode call knows, for the wrappers and observer inside it."""
    __slots__ = ("step", "gen", "reset", "mode_switched", "ods", "bs", "ndp", "key", "ids",
                 "slot_remap", "keep_calls", "observer", "observed")


class _Trace:
    __slots__ = ("gen", "step", "ods", "batch", "n", "restage_arg", "had_trace", "ids",
                 "restaged")


class Kit:
    def __init__(self, table, env=None):
        self.env = os.environ if env is None else env
        self.table = table
        self.attrs = table["attrs"]
        self.inline_names = table.get("inline", dict(inline.DEFAULT_NAMES))
        self._lock = threading.RLock()
        self._tls = threading.local()
        self.audit = None
        self._sink_auto = True
        self.rank = None
        self.common = {}
        self._rank_known = False        # from the engine entry: better than any guess
        self._guess_rank()
        self.step = -1
        self.trace_state = {}           # (key text, dp) -> (step, request ids or None, inputs id)
        self._req_gen = {}
        self.wrapped = []               # "role module:name" wrapped in this process
        self.missing = []               # reports of targets that are not there
        self.faults = 0
        self._fault_said = set()
        self.unobserved = 0             # decode steps whose keep could not be observed
        self.inconsistent = 0           # slots whose decision and fed inputs disagreed
        self.restage_seen = False       # the restage role is wrapped
        self._config_done = False
        self.counts = collections.Counter()
        self._triggered = False
        self._said = set()
        self._imported = set()
        by_module = {}
        for t in table["targets"]:
            by_module.setdefault(t["module"], []).append(t)
        self._by_module = by_module
        self._helpers = {t["name"].split(".")[-1] for t in table["targets"] if t["role"] == "keep"}
        self.watcher = hook.ImportWatcher(self._on_import, self._fault)

    # -- lifecycle --

    def start(self):
        mods = set(self._by_module) | set(self.table["trigger"])
        self.watcher.install()
        self.watcher.watch(mods)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self):
        self._lock = threading.RLock()
        self._tls = threading.local()
        # a fork child is another process: its rank is its own (guessed again
        # when it imports the generator or enters the engine)
        self._rank_known = False
        self.rank = None
        self.common.pop("rank", None)

    def _guess_rank(self):
        if self._rank_known:
            return
        r = initial_rank(self.env, _process_name())
        if r is not None:
            self.rank = r
            self.common["rank"] = r

    def _on_import(self, module):
        name = module.__name__
        self._imported.add(name)
        if name in self.table["trigger"] and not self._triggered:
            self._trigger(module)
        for t in self._by_module.get(name, ()):
            self._wrap(module, t)

    def _trigger(self, module):
        """The engine process imported the generator: resolve the sink to the
        generator's own logger and print the banners from this process's
        environment, once."""
        self._triggered = True
        # registered now, after the generator's logger: atexit runs it first,
        # while that logger still has its handlers
        atexit.register(self._at_exit)
        self._guess_rank()      # a multiprocessing child has its name only by now
        if self._sink_auto and self.env.get(SINK_VAR) is None:
            lg = getattr(module, "logger", None)
            if sink_kind(lg) in ("loguru", "logging"):
                self._set_audit(lg)
        who = "pid %d" % os.getpid()
        if self.rank is not None:
            who += ", rank %d" % self.rank
        self.note("ttaudit: instrumentation on (%s), audit through %s"
                  % (who, self._audit().kind))
        for line in guard_banners(self.env):
            self.note(line)

    # -- the sink --

    def _sink_from_env(self):
        v = self.env.get(SINK_VAR)
        if v is None or v in ("", "auto"):
            lg = None
            if "loguru" in sys.modules:
                lg = getattr(sys.modules["loguru"], "logger", None)
            return lg, True
        self._sink_auto = False
        if v == "stderr":
            return None, False
        if v == "loguru":
            from loguru import logger
            return logger, False
        if v.startswith("logging:"):
            import logging
            return logging.getLogger(v[8:]), False
        if v.startswith("file:"):
            v = v[5:]
        return v, False

    def _set_audit(self, sink):
        old = self.audit
        self.audit = MergeAudit(sink, enable=True, pid=True, common=self.common)
        if old is not None:
            old.close()

    def _audit(self):
        if self.audit is None:
            with self._lock:
                if self.audit is None:
                    try:
                        sink, auto = self._sink_from_env()
                    except Exception as e:
                        sink, auto = None, False
                        MergeAudit._say("%s: %s; writing to stderr" % (SINK_VAR, e))
                    self._sink_auto = auto
                    self._set_audit(sink)
        return self.audit

    def note(self, text):
        self._audit().note(text)

    def _say_once(self, key, text):
        if key not in self._said:
            self._said.add(key)
            self.note(text)

    def _fault(self, where, exc):
        """A failure of the kit's own: counted, the first per place reported."""
        with self._lock:
            self.faults += 1
            first = where not in self._fault_said
            self._fault_said.add(where)
        if first:
            try:
                self.note("ttaudit: kit error in %s: %s: %s; the server is not affected, "
                          "later errors here are only counted"
                          % (where, type(exc).__name__, str(exc).replace("\n", " ")[:300]))
            except Exception:
                pass

    def _at_exit(self):
        if not self._triggered:
            return
        try:
            for t in self._never_imported():
                self.note("ttaudit: not instrumented: %s %s:%s: its module was never imported "
                          "in this process" % (t["role"], t["module"], t["name"]))
            a = self._audit()
            parts = ["%d %s" % (self.counts[k], k) for k in ("merge", "gate", "trace", "prefill")]
            text = ("ttaudit: instrumentation summary (pid %d): %s event(s); %d target(s) "
                    "missing, %d kit error(s), %d keep step(s) unobserved, %d slot(s) whose "
                    "decision and fed inputs disagreed, %d audit line(s) lost, %d call(s) "
                    "rejected"
                    % (os.getpid(), ", ".join(parts), len(self.missing), self.faults,
                       self.unobserved, self.inconsistent, a.errors, a.rejected))
            if a.errors:        # the sink is failing: say it where it will be seen
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
            else:
                self.note(text)
        except Exception:
            pass

    def _never_imported(self):
        if not self._triggered:
            return []
        return [t for m, ts in self._by_module.items() if m not in self._imported
                for t in ts if not t.get("optional")]

    # -- wrapping --

    def _wrap(self, module, t):
        where = "%s %s:%s" % (t["role"], t["module"], t["name"])
        try:
            owner, attr, raw = hook.resolve(module, t["name"])
        except LookupError as e:
            self._report_missing(where, str(e))
            return
        func, _kind = hook.function_of(raw)
        if func is None:
            self._report_missing(where, "it is a %s, not a function" % type(raw).__name__)
            return
        sig_func = func
        if t.get("signature"):
            try:
                _o, _a, sraw = hook.resolve(module, t["signature"])
                sfunc, _k = hook.function_of(sraw)
                if sfunc is not None and _only_varargs(func):
                    sig_func = sfunc
            except LookupError:
                pass            # an older revision: the target has its own parameters
        get, lacking = hook.getters(sig_func, t["args"])
        req = [v for v in lacking if v in names.REQUIRED[t["role"]]]
        if req:
            self._report_missing(where, "its signature has no parameter %s"
                                 % ", ".join(repr(t["args"][v]) for v in req))
            return
        if lacking:
            self.note("ttaudit: %s: its signature has no parameter %s; those values are "
                      "left out" % (where, ", ".join(repr(t["args"][v]) for v in lacking)))
            for v in lacking:
                get[v] = hook.ArgGetter(None, "", None)
        extra = dict(t)
        if t["role"] == "decode":
            extra["_plan"] = self._plan(where, func, t)
        if t["role"] == "restage":
            self.restage_seen = True
        enter = getattr(self, "_%s_enter" % t["role"])
        leave = getattr(self, "_%s_leave" % t["role"], None)
        role = t["role"]
        kit = self

        def make(orig):
            def wrapper(*args, **kwargs):
                depth = kit._depth()
                if depth.get(role):
                    return orig(*args, **kwargs)
                try:
                    ctx = enter(args, kwargs, get, extra)
                except Exception as e:
                    kit._fault(role, e)
                    ctx = None
                obs = getattr(ctx, "observer", None)
                if obs is not None:
                    try:
                        if not obs.start():
                            kit._unobserved(ctx, "another trace function is set (a debugger "
                                            "or coverage tool)")
                            ctx.observer = obs = None
                    except Exception as e:
                        kit._fault("decode (observing the keep)", e)
                        ctx.observer = obs = None
                depth[role] = 1
                result = _FAILED
                try:
                    result = orig(*args, **kwargs)
                    return result
                finally:
                    if obs is not None:
                        try:
                            obs.stop()
                        except Exception as e:
                            kit._fault("decode (observing the keep)", e)
                    depth[role] = 0
                    if leave is not None and ctx is not None:
                        try:
                            leave(ctx, result)
                        except Exception as e:
                            kit._fault(role, e)
            return wrapper
        try:
            w = hook.install_wrapper(owner, attr, raw, make)
        except Exception as e:
            self._report_missing(where, "it cannot be wrapped: %s" % e)
            return
        if w is not None:
            self.wrapped.append(where)

    def _plan(self, where, func, t):
        """The keep of a decode target, said once at start-up."""
        what = "%s.%s" % (t["module"].rsplit(".", 1)[-1], t["name"]) \
            if "." not in t["name"] else t["name"]
        try:
            p = inline.plan(func, self.inline_names, self._helpers, self.attrs["capability"])
        except inline.PlanError as e:
            self.note("ttaudit: keep: %s cannot be located (%s); its keep steps are counted "
                      "as unobserved" % (what, e))
            return False
        if p is None:
            code = getattr(func, "__code__", None)
            at = "%s:%d" % (os.path.basename(code.co_filename), code.co_firstlineno) if code else "?"
            self.note("ttaudit: keep: none in %s (%s): no statement compares %s with %s and no "
                      "keep helper (%s) is called; this code writes no merge events"
                      % (what, at, self.inline_names["dev_pos"], self.inline_names["host_pos"],
                         ", ".join(sorted(self._helpers)) or "none named"))
            return None
        steps = "on reset and mode-switch steps" if p.arm_names else "on every step"
        if p.kind == "inline":
            self.note("ttaudit: keep: inline in %s at %s (%s = ... %s == %s ...), observed in "
                      "its frame %s; gate at line %d"
                      % (what, inline.where(p), self.inline_names["decision"],
                         self.inline_names["dev_pos"], self.inline_names["host_pos"], steps,
                         p.gate_line))
        else:
            self.note("ttaudit: keep: %s calls the helper %s at %s (Gemma4's); its gate is "
                      "observed %s" % (what, p.helper, inline.where(p), steps))
        return p

    def _report_missing(self, where, why):
        self.missing.append(where)
        self.note("ttaudit: not instrumented: %s: %s (renamed upstream? give its name in %s)"
                  % (where, why, CONFIG_VAR))

    def _unobserved(self, d, why):
        with self._lock:
            self.unobserved += 1
        self._say_once("unobserved:" + why, "ttaudit: the keep at step %d could not be observed: "
                       "%s; such steps are counted, not written" % (d.step, why))

    def _depth(self):
        d = getattr(self._tls, "depth", None)
        if d is None:
            d = self._tls.depth = {}
        return d

    def _decode_stack(self):
        s = getattr(self._tls, "decode", None)
        if s is None:
            s = self._tls.decode = []
        return s

    def _next_step(self):
        with self._lock:
            self.step += 1
            return self.step

    def _gen(self, req):
        if req is None:
            return -1
        with self._lock:
            g = self._req_gen.get(req)
            if g is None:
                g = self._req_gen[req] = len(self._req_gen)
            return g

    def set_rank(self, rank):
        self._rank_known = True
        self.rank = rank
        self.common["rank"] = rank

    def _config(self, gen, slots):
        """The config event, once, before any other event of the generator."""
        if self._config_done:
            return
        self._config_done = True
        ml = _attr_path(gen, self.attrs["max_model_len"])
        if slots is None:
            slots = _attr_path(gen, self.attrs["batch_width"])
            slots = slots if type(slots) is int and slots > 0 else None
        self._audit().config(slots=slots,
                             max_model_len=ml if type(ml) is int and ml > 0 else None)

    def _capability(self, gen):
        """(declared, value): whether the model's capabilities dict has the
        key, and its value (False when absent: upstream's reading)."""
        caps = getattr(gen, self.attrs["capabilities"], None)
        key = self.attrs["capability"]
        if isinstance(caps, collections.abc.Mapping) and key in caps:
            return True, bool(caps[key])
        return False, False

    # -- roles --

    def _engine_enter(self, args, kwargs, g, t):
        r = g["dp_rank"](args, kwargs)
        if type(r) is int and r >= 0:
            self.set_rank(r)
        return None

    def _batch_enter(self, args, kwargs, g, t):
        self._tls.decode_ids = None
        mi = g["model_input"](args, kwargs)
        a = self.attrs
        runner = getattr(args[0], a["runner"], None) if args else None
        ib = getattr(runner, a["input_batch"], None)
        ub = getattr(mi, a["unpadded_batch_size"], None)
        if isinstance(ub, (list, tuple)):
            if len(ub) != 1:
                return True        # several data-parallel ranks merged: their ids are not here
            ub = ub[0]
        ids = getattr(ib, a["req_ids"], None)
        if ids is None or ub is None:
            return True
        self._tls.decode_ids = [None if r is None else str(r) for r in list(ids)[:int(ub)]]
        return True

    def _batch_leave(self, ctx, result):
        self._tls.decode_ids = None

    def _prefill_batch_enter(self, args, kwargs, g, t):
        self._tls.prefill_ids = None
        a = self.attrs
        bsp = g["batch_size_per_dp"](args, kwargs)
        if isinstance(bsp, (list, tuple)) and len(bsp) > 1:
            return True
        ib = getattr(args[0], a["input_batch"], None) if args else None
        ids = getattr(ib, a["req_ids"], None)
        n = getattr(ib, a["num_reqs"], None)
        if ids is None:
            return True
        ids = list(ids)
        if type(n) is int:
            ids = ids[:n]
        self._tls.prefill_ids = [None if r is None else str(r) for r in ids]
        return True

    def _prefill_batch_leave(self, ctx, result):
        self._tls.prefill_ids = None

    def _prefill_enter(self, args, kwargs, g, t):
        step = self._next_step()
        rows = _rows(g["tokens"](args, kwargs))
        es = g["empty_slots"](args, kwargs)
        slots = list(range(rows)) if es is None else _ints(es)
        self._config(args[0] if args else None, None)
        a = self._audit()
        a.prefill(step, slots)
        self.counts["prefill"] += 1
        ids = getattr(self._tls, "prefill_ids", None)
        if ids:
            for slot, rid in zip(slots, ids):
                if rid is not None:
                    self._gen(rid)
                    a.request("start", rid, slot, step)
        return None

    def _find_key(self, tid, ods, bs):
        """The trace key the generator uses for (on_device_sampling, batch):
        (ods, bs) when the trace inputs are keyed by batch too (Gemma4), else
        ods (the shared Generator). (key, inputs present) or (None, None)
        when there is no trace-input table to look in."""
        if tid is _MISSING or tid is None or not hasattr(tid, "__contains__"):
            return None, None
        for k in ((ods, bs), ods):
            try:
                if k in tid:
                    return k, bool(tid[k])
            except Exception:
                continue
        try:
            others = [k for k in tid if tid[k]]
        except Exception:
            others = []
        if any(isinstance(k, tuple) and len(k) == 2 for k in others):
            return (ods, bs), False         # keyed by batch too: this width has none yet
        if any(isinstance(k, bool) for k in others):
            return ods, False
        if others:
            self._say_once("trace-key", "ttaudit: %s is keyed by %s, neither %r nor %r: the "
                           "keep's buffer steps cannot be judged"
                           % (self.attrs["trace_inputs"], ", ".join(map(repr, others[:4])),
                              (ods, bs), ods))
            return None, None
        return ods, False

    def _decode_enter(self, args, kwargs, g, t):
        a = self.attrs
        gen = args[0] if args else None
        d = _Decode()
        d.step = self._next_step()
        d.gen = gen
        d.keep_calls = 0
        d.observer = None
        d.observed = False
        sp = g["start_pos"](args, kwargs)
        n_rows = _rows(sp)
        ndp = getattr(gen, a["data_parallel"], 1)
        ndp = ndp if type(ndp) is int and ndp > 0 and n_rows % ndp == 0 else 1
        d.ndp = ndp
        d.bs = bs = n_rows // ndp
        d.ods = g["sampling_params"](args, kwargs) is not None or \
            bool(g["defer_device_sampling"](args, kwargs))
        d.reset = bool(g["reset_batch"](args, kwargs))
        d.slot_remap = g["slot_remap"](args, kwargs)
        mode = getattr(gen, a["mode"], _MISSING)
        d.mode_switched = None if mode is _MISSING else \
            str(getattr(mode, "name", mode)) != a["mode_decode"]
        ids = getattr(self._tls, "decode_ids", None)
        self._tls.decode_ids = None
        if ids is not None:
            ids = (ids + [None] * n_rows)[:n_rows]
            d.ids = [ids[i * bs:(i + 1) * bs] for i in range(ndp)]
        else:
            d.ids = None
        d.key, _present = self._find_key(getattr(gen, a["trace_inputs"], _MISSING), d.ods, bs)
        self._config(gen, bs)
        p = t.get("_plan")
        if p:
            self._gate_note(gen, p)
            if not p.arm_names or d.reset or d.mode_switched:
                d.observer = inline.Observer(p, lambda o: self._observed(d, o),
                                             lambda e: self._fault("decode (observing the keep)",
                                                                   e))
        elif p is False and (d.reset or d.mode_switched):
            self._unobserved(d, "the keep could not be located in the source (said at start-up)")
        self._decode_stack().append(d)
        return d

    def _decode_leave(self, d, result):
        st = self._decode_stack()
        if st and st[-1] is d:
            st.pop()
        obs = d.observer
        if obs is not None and not obs.done and result is not _FAILED:
            self._unobserved(d, "the decode returned before the statement after the keep ran")

    def _gate_note(self, gen, p):
        if p.cap_name is None:
            return
        cls = type(gen).__name__
        key = "gate:" + cls
        if key in self._said:
            return
        declared, value = self._capability(gen)
        cap = "%s[%r]" % (self.attrs["capabilities"], self.attrs["capability"])
        if not declared:
            text = ("ttaudit: gate: %s does not declare %s: the keep does not run (an absent "
                    "key means not supported)" % (cls, cap))
        elif not value:
            text = "ttaudit: gate: %s declares %s False: the keep does not run" % (cls, cap)
        else:
            text = ("ttaudit: gate: %s declares %s True: the keep runs on reset and "
                    "mode-switch steps" % (cls, cap))
        self._say_once(key, text)

    # -- the inline keep, as observed --

    def _observed(self, d, obs):
        """Called from inside the decode's frame at the statement after the keep."""
        d.observed = True
        if obs.plan.kind == "inline" and obs.chunks:
            for c in obs.chunks:
                self._merge_from_chunk(d, obs, c)
        elif obs.gate is not None:
            self._gate_from_frame(d, obs)

    def _gate_from_frame(self, d, obs):
        """The keep's body did not run: say so when the capability alone kept it off."""
        v = inline.gate_values(obs.plan, obs.gate, self.attrs["trace_inputs"])
        if not v["capability_known"] or v["capability"] or v["others"] is not True:
            return
        declared, value = self._capability(d.gen)
        reason = ("model declares %s False" % self.attrs["capability"]) if declared else \
            ("model does not declare %s (absent means not supported)" % self.attrs["capability"])
        self._audit().gate(d.step, keep=False, supports_async_decode=value if declared else None,
                           force=False, reason=reason)
        self.counts["gate"] += 1

    def _merge_from_chunk(self, d, obs, c):
        i = c.index if type(c.index) is int else 0
        hp, ht = c.host_pos, c.host_tok
        if hp is None:
            return
        h = len(hp)
        hp = [int(x) for x in hp]
        ht = [int(x) for x in ht] if ht is not None and len(ht) == h else None
        dpos = [int(x) for x in c.dev_pos] if c.dev_pos is not None else []
        dtok = [int(x) for x in c.dev_tok] if c.dev_tok is not None else None
        kw = {"reset_batch": d.reset, "mode_switched": d.mode_switched, "dp": i}
        pre = c.prefilled if c.prefilled_known else _lookup_attr(d.gen, self.attrs["prefilled"])
        if pre is None:
            self._say_once("no-prefilled", "ttaudit: %s has no %s (no prefill went through the "
                           "Generator's): the merge events leave `prefilled` out"
                           % (type(d.gen).__name__, self.attrs["prefilled"]))
        else:
            kw["prefilled"] = sorted(s - i * h for s in pre if i * h <= s < (i + 1) * h)
        fed_ok = c.fed_pos is not None and len(c.fed_pos) == h and \
            c.fed_tok is not None and len(c.fed_tok) == h
        if c.decided and c.decision is not None and len(c.decision) == h and len(dpos) == h:
            taken = list(c.decision)
            if fed_ok and ht is not None and dtok is not None and len(dtok) == h:
                for s in range(h):
                    if hp[s] == -1:
                        continue
                    fed = (int(c.fed_pos[s]), int(c.fed_tok[s]))
                    host, dev = (hp[s], ht[s]), (dpos[s], dtok[s])
                    if fed == host and fed == dev:
                        continue            # either way the same: the decision stands
                    got = fed != host
                    if got != taken[s] or (got and fed != dev):
                        with self._lock:
                            self.inconsistent += 1
                        self._say_once("inconsistent", "ttaudit: at step %d chunk %d slot %d "
                                       "the inputs fed on to the trace are not the ones %s "
                                       "chose: the audit records what was fed"
                                       % (d.step, i, s, self.inline_names["decision"]))
                        taken[s] = got
            kw["taken"] = taken
        else:
            # the pass kept the host chunk before deciding: a buffer narrower
            # than the batch, or a patch's guard taking the same branch
            kw["taken"] = [False] * h
            kw["fallback"] = "shape" if len(dpos) < h else "host"
        if ht is not None and dtok is not None and len(dtok) == len(dpos):
            kw["host_tok"], kw["dev_tok"] = ht, dtok
        self._buffer_fields(d, i, h, c.trace_in, self._remap_rows(d, obs, i, h), kw)
        self._audit().merge(d.step, hp, dpos, **kw)
        self.counts["merge"] += 1

    def _remap_rows(self, d, obs, i, h):
        """The buffer rows slot s of chunk i was compared with: the code's own
        remap index when it remapped, else s."""
        if d.slot_remap is None:
            return list(range(h))
        r = _ints(d.slot_remap)
        if r is None or len(r) < (i + 1) * h:
            return None
        return [x - i * h for x in r[i * h:(i + 1) * h]]

    def _buffer_fields(self, d, i, h, trace_in, rows, kw):
        """buf_step, and with request ids slot_req/buf_req and their
        generations, from the last trace the kit saw write this chunk's
        inputs; left out when those inputs are not the ones read now."""
        if d.key is None:
            return
        buf = self.trace_state.get((_key_text(d.key), i))
        if buf is None:
            return
        if trace_in is not None and buf[2] is not None and id(trace_in) != buf[2]:
            self._say_once("inputs-replaced", "ttaudit: the trace inputs the keep read at step "
                           "%d are not the ones the kit saw written (captured elsewhere): "
                           "buf_step and buf_req are left out" % d.step)
            return
        kw["buf_step"] = buf[0]
        breq = buf[1]
        if d.ids is None or i >= len(d.ids) or breq is None or rows is None:
            return
        sreq = (list(d.ids[i][:h]) + [None] * h)[:h]
        n = len(breq)
        bq = [breq[j] if -n <= j < n else None for j in rows]
        kw["slot_req"], kw["buf_req"] = sreq, bq
        kw["slot_gen"] = [self._gen(r) for r in sreq]
        kw["buf_slot_gen"] = [self._gen(r) for r in bq]

    # -- the trace and its restages --

    def _trace_enter(self, args, kwargs, g, t):
        c = _Trace()
        c.gen = args[0] if args else None
        toks = _chunks(g["tokens"](args, kwargs))
        c.batch = _rows(toks[0]) if toks else 0
        c.n = len(toks)
        c.ods = bool(g["on_device_sampling"](args, kwargs))
        c.restage_arg = bool(g["restage"](args, kwargs))
        st = self._decode_stack()
        d = st[-1] if st else None
        c.step = d.step if d is not None else self._next_step()
        c.ids = d.ids if d is not None and d.bs == c.batch else None
        key, present = self._find_key(getattr(c.gen, self.attrs["trace_ids"], _MISSING),
                                      c.ods, c.batch)
        c.had_trace = bool(present)
        c.restaged = set()
        self._tls.restaged = c.restaged
        return c

    def _trace_leave(self, c, result):
        self._tls.restaged = None
        if result is _FAILED:
            return
        table = getattr(c.gen, self.attrs["trace_inputs"], _MISSING)
        key, _ = self._find_key(table, c.ods, c.batch)
        inputs = _lookup(table, key) if key is not None else None
        kt = _key_text(key if key is not None else (c.ods, c.batch))
        a = self._audit()
        for i in range(c.n):
            inp = inputs[i] if isinstance(inputs, (list, tuple)) and i < len(inputs) else None
            if self.restage_seen:
                op = "restage" if not c.had_trace or (inp is not None and id(inp) in c.restaged) \
                    else "replay"
            else:
                op = "restage" if not c.had_trace or c.restage_arg else "replay"
            self.trace_state[(kt, i)] = (c.step, c.ids[i] if c.ids is not None and
                                         i < len(c.ids) else None,
                                         id(inp) if inp is not None else None)
            a.trace(c.step, op, kt, dp=i)
            self.counts["trace"] += 1

    def _restage_enter(self, args, kwargs, g, t):
        s = getattr(self._tls, "restaged", None)
        if s is not None:
            dt = g["device_tensors"](args, kwargs)
            if dt is not None:
                s.add(id(dt))
        return None

    # -- a keep helper (Gemma4's) --

    def _keep_enter(self, args, kwargs, g, t):
        st = self._decode_stack()
        d = st[-1] if st else None
        if d is None:
            self._say_once("keep-outside", "ttaudit: %s:%s was called outside a decode: those "
                           "calls are not written" % (t["module"], t["name"]))
            return None
        dp = d.keep_calls
        d.keep_calls += 1
        pre = g["prefilled"](args, kwargs)
        return {
            "d": d, "dp": dp, "ret": t.get("returns", {}),
            "host_tok": _ints(g["host_tok"](args, kwargs)),
            "host_pos": _ints(g["host_pos"](args, kwargs)),
            "dev_tok": _ints(g["dev_tok"](args, kwargs)),
            "dev_pos": _ints(g["dev_pos"](args, kwargs)),
            "remap": _ints(g["slot_remap"](args, kwargs)),
            "prefilled_arg": t["args"].get("prefilled") is not None,
            "prefilled": None if pre is None else {int(s) for s in pre},
        }

    def _keep_leave(self, c, result):
        if result is _FAILED:
            return
        d, dp = c["d"], c["dp"]
        hp, ht = c["host_pos"], c["host_tok"]
        dpos, dtok = c["dev_pos"], c["dev_tok"]
        h = len(hp)
        if ht is not None and len(ht) != h:
            ht = None
        if c["prefilled_arg"]:
            pf = c["prefilled"] or set()
        else:
            pre = _lookup_attr(d.gen, self.attrs["prefilled"])
            pf = None if pre is None else {s - dp * h for s in pre if dp * h <= s < (dp + 1) * h}
        if pf is not None:
            pf = sorted(s for s in pf if 0 <= s < h)
        ret = c["ret"]

        def part(name):
            k = ret.get(name)
            if k is None or not isinstance(result, (tuple, list)) or k >= len(result):
                return None
            return result[k]

        kw = {"reset_batch": d.reset, "mode_switched": d.mode_switched, "dp": dp,
              "prefilled": pf}
        remap = c["remap"]
        if len(dpos) < h or (dtok is not None and len(dtok) < h):
            n = min(len(dpos), len(dtok) if dtok is not None else len(dpos))
            dev, dt = dpos[:n], (dtok[:n] if dtok is not None else None)
            kw.update(taken=[False] * h, fallback="shape")
            idx = None
        elif remap is not None and (len(remap) != h or any(r < 0 or r >= len(dpos)
                                                           for r in remap)):
            dev, dt = [], ([] if dtok is not None else None)
            kw.update(taken=[False] * h, fallback="slot_remap")
            idx = None
        else:
            idx = remap if remap is not None else list(range(h))
            dev = [dpos[j] for j in idx]
            dt = [dtok[j] for j in idx] if dtok is not None else None
            taken, inferred = _taken(part("source"), _ints(part("tok")), _ints(part("pos")),
                                     ht, hp, dt, dev, set(pf or ()))
            kw["taken"] = taken
            if inferred:
                kw["taken_inferred"] = inferred
        if ht is not None and dt is not None:
            kw["host_tok"], kw["dev_tok"] = ht, dt
        self._buffer_fields(d, dp, h, None, idx, kw)
        self._audit().merge(d.step, hp, dev, **kw)
        self.counts["merge"] += 1


def _only_varargs(func):
    """func takes (self, *args, **kwargs) and nothing else by name."""
    import inspect
    try:
        ps = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    named = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                         p.KEYWORD_ONLY)]
    return len(named) <= 1 and any(p.kind is p.VAR_POSITIONAL for p in ps)


def _lookup_attr(obj, name):
    return getattr(obj, name, None) if obj is not None else None


def _taken(src, mtok, mpos, ht, hp, dtok, dpos, prefilled):
    """Per slot, did a keep helper take the device side? From its returned
    source when it is per slot; a source naming a fallback means nothing
    taken; otherwise from the returned positions and tokens: equal to the
    device's and not the host's is taken, the other way round is not. Where
    both sides are equal the result cannot tell: the slot is decided by the
    helper's comparison (dev_pos == host_pos or host_pos + 1, not prefilled)
    and listed as inferred (active slots only)."""
    h = len(hp)
    if src is not None and not isinstance(src, (str, bytes)):
        lv = _flat(src)
        if lv is not None and len(lv) == h:
            out = []
            for v in lv:
                if isinstance(v, str):
                    out.append(v.lower() in ("dev", "device", "d"))
                else:
                    out.append(bool(v))
            return out, None
    if isinstance(src, str) and ("fallback" in src or src == "host"):
        return [False] * h, None
    use_tok = dtok is not None and ht is not None and mtok is not None
    taken, inferred = [], []
    for s in range(h):
        out_p = mpos[s] if mpos is not None and s < len(mpos) else None
        out_t = mtok[s] if use_tok and s < len(mtok) else None
        got = (out_p, out_t)
        dev = (dpos[s], dtok[s] if use_tok else None)
        host = (hp[s], ht[s] if use_tok else None)
        is_dev = out_p is not None and got == dev
        is_host = out_p is not None and got == host
        if is_dev and not is_host:
            taken.append(True)
        elif is_host and not is_dev:
            taken.append(False)
        else:
            taken.append(hp[s] >= 0 and (dpos[s] == hp[s] or dpos[s] == hp[s] + 1)
                         and s not in prefilled)
            if hp[s] != -1:
                inferred.append(s)
    return taken, inferred or None


_KIT = None


def install(env=None):
    """Makes this process's Kit from the table (and TTAUDIT_EMIT_CONFIG) and
    starts watching imports; returns it. A bad config is reported and the
    default table used. Idempotent."""
    global _KIT
    if _KIT is not None:
        return _KIT
    env = os.environ if env is None else env
    err = None
    table = names.build()
    path = env.get(CONFIG_VAR)
    if path:
        try:
            table = names.load(path)
        except (names.ConfigError, OSError) as e:
            err = e
    kit = Kit(table, env)
    _KIT = kit
    if err is not None:
        kit.note("ttaudit: %s ignored, using the built-in name table: %s" % (CONFIG_VAR, err))
        kit.faults += 1
    kit.start()
    return kit


def current():
    """The Kit of this process, or None."""
    return _KIT


def describe(table=None):
    """The name table as JSON text (for `python3 -m ttaudit_emit.run --names`)."""
    t = table if table is not None else names.build()
    return json.dumps(t, indent=2, sort_keys=True)
