"""ttaudit_emit.kit - the auto-instrumentation: wrappers around the real
generator's functions that write merge audits from their arguments and
return values, and the guard banners.

One Kit per process (install() makes it; ttaudit_emit.auto calls install()
from the sitecustomize). It watches the modules of the name table
(ttaudit_emit.names) and wraps each target when its module is imported:

  decode   Generator.decode_forward: one step of the clock; reads why the
           keep would run (on-device sampling, reset_batch or a mode switch,
           trace on, trace inputs for the key) and the capability gate
           (model_capabilities["supports_async_decode"],
           TT_FORCE_ASYNC_AHEAD_KEEP=1); writes `gate` events
  keep     the keep's helper, once per data-parallel chunk: host and device
           positions (device after slot_remap), tokens, the prefilled mask it
           applied, and `taken` from what it returned; writes `merge` events
  trace    Generator._decode_forward_trace_text: the buffer capture points,
           per trace key and chunk; writes `trace` events, gives `buf_step`
           and `buf_req` to later merges
  prefill  Generator.prefill_forward_text: a step, and the prefill slot starts
  batch, prefill_batch  the TT plugin's submissions: request ids of the rows
  engine   vLLM's engine-core entry: the data-parallel rank

A wrapper never changes what the wrapped function receives, returns or
raises. Anything that goes wrong inside the kit is counted and reported once
(a line through the sink), never raised into the server. A name in the table
that is not there is reported when its module is imported.
"""

import atexit
import collections.abc
import json
import os
import re
import sys
import threading

from . import hook, names
from .emit import MergeAudit, sink_kind

CONFIG_VAR = "TTAUDIT_EMIT_CONFIG"
SINK_VAR = "TTAUDIT_EMIT_SINK"
RANK_VAR = "TTAUDIT_RANK"

# Guard flags and the arm each engages (docs/arms.md, interfaces B).
GUARD_FLAGS = (
    ("QWEN36_PREFILLED_SLOTS_FIX", "prefilled"),
    ("QWEN36_MERGE_BATCH_GUARD", "batch"),
    ("QWEN36_MERGE_LIFETIME_GUARD", "lifetime"),
    ("QWEN36_MERGE_STAMP_GUARD", "stamp"),
    ("QWEN36_MERGE_GARBAGE_BOUND", "bound"),
)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")

_MISSING = object()
_FAILED = object()


def guard_banners(env):
    """The banner lines for the guard flags and the keep override in `env`."""
    out, engaged = [], 0
    for flag, _arm in GUARD_FLAGS:
        v = env.get(flag)
        if v is None:
            continue
        if v.strip().lower() in _TRUE:
            out.append("ttaudit: guard %s engaged (env %s=%s)" % (flag, flag, v))
            engaged += 1
        elif v.strip().lower() in _FALSE:
            out.append("ttaudit: guard %s off (env %s=%s)" % (flag, flag, v))
        else:
            out.append("ttaudit: guard %s value not understood, not engaged (env %s=%s)"
                       % (flag, flag, v))
    if not engaged:
        out.append("ttaudit: guard none engaged (unguarded merge)")
    return out


def initial_rank(env, process_name=None):
    """The process's data-parallel rank as far as its environment and name
    tell: TTAUDIT_RANK, vLLM's process name EngineCore_DP<n>, the MPI rank
    tt-run gives; None when nothing says."""
    v = env.get(RANK_VAR)
    if v is not None and v.isdigit():
        return int(v)
    m = re.match(r"EngineCore_DP(\d+)$", process_name or "")
    if m:
        return int(m.group(1))
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


class _Decode:
    """What one decode_forward call knows, for the keep and trace wrappers it calls."""
    __slots__ = ("step", "reset", "mode_switched", "ods", "bs", "ndp", "key", "would",
                 "allowed", "prefilled", "ids", "keep_calls")


class Kit:
    def __init__(self, table, env=None):
        self.env = os.environ if env is None else env
        self.table = table
        self.attrs = table["attrs"]
        self._lock = threading.RLock()
        self._tls = threading.local()
        self.audit = None
        self._sink_auto = True
        self.rank = None
        self.common = {}
        self._rank_known = False        # from the engine entry: better than any guess
        self._guess_rank()
        self.step = -1
        self.trace_state = {}           # (key text, dp) -> (step, request ids or None)
        self._prev_trace = {}           # id(generator) -> (on_device_sampling, batch)
        self._req_gen = {}
        self.wrapped = []               # "role module:name" wrapped in this process
        self.missing = []               # reports of targets that are not there
        self.faults = 0
        self._fault_said = set()
        self.keep_unobserved = 0
        self._config_done = False
        self.counts = collections.Counter()
        self._triggered = False
        self._said = set()
        self._imported = set()
        by_module = {}
        for t in table["targets"]:
            by_module.setdefault(t["module"], []).append(t)
        self._by_module = by_module
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
        force = self.attrs["force_env"]
        if self.env.get(force) == "1":
            self.note("ttaudit: keep forced on (%s=1)" % force)

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
                    "missing, %d kit error(s), %d keep step(s) unobserved, %d audit line(s) "
                    "lost, %d call(s) rejected"
                    % (os.getpid(), ", ".join(parts), len(self.missing), self.faults,
                       self.keep_unobserved, a.errors, a.rejected))
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
        return [t for m, ts in self._by_module.items() if m not in self._imported for t in ts]

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
        get, lacking = hook.getters(func, t["args"])
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
        enter = getattr(self, "_%s_enter" % t["role"])
        leave = getattr(self, "_%s_leave" % t["role"], None)
        role = t["role"]
        kit = self
        extra = t

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
                depth[role] = 1
                result = _FAILED
                try:
                    result = orig(*args, **kwargs)
                    return result
                finally:
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
        note = names.NOTES.get((t["role"], t["module"], t["name"]))
        if note:
            self.note("ttaudit: %s: a name not checked against upstream source (%s)"
                      % (where, note))

    def _report_missing(self, where, why):
        self.missing.append(where)
        self.note("ttaudit: not instrumented: %s: %s (renamed upstream? give its name in %s)"
                  % (where, why, CONFIG_VAR))

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
        self._audit().config(slots=slots,
                             max_model_len=ml if type(ml) is int and ml > 0 else None)

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
        (ods, bs) when the trace inputs are keyed by batch too (PR #53947),
        else ods. (key, inputs present) or (None, None) when there is no
        trace-input table to look in."""
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
                           "gate and the keep's buffer steps cannot be judged"
                           % (self.attrs["trace_inputs"], ", ".join(map(repr, others[:4])),
                              (ods, bs), ods))
            return None, None
        return (ods, bs), False

    def _decode_enter(self, args, kwargs, g, t):
        a = self.attrs
        gen = args[0] if args else None
        step = self._next_step()
        d = _Decode()
        d.step = step
        d.keep_calls = 0
        sp = g["start_pos"](args, kwargs)
        n_rows = _rows(sp)
        ndp = getattr(gen, a["data_parallel"], 1)
        ndp = ndp if type(ndp) is int and ndp > 0 and n_rows % ndp == 0 else 1
        d.ndp = ndp
        d.bs = bs = n_rows // ndp
        d.ods = g["sampling_params"](args, kwargs) is not None or \
            bool(g["defer_device_sampling"](args, kwargs))
        d.reset = bool(g["reset_batch"](args, kwargs))
        et = g["enable_trace"](args, kwargs)
        enable_trace = True if et is None else bool(et)
        mode = getattr(gen, a["mode"], _MISSING)
        if mode is _MISSING:
            d.mode_switched = None
        else:
            d.mode_switched = str(getattr(mode, "name", mode)) != a["mode_decode"]
        pre = getattr(gen, a["prefilled"], _MISSING)
        if pre is _MISSING:
            d.prefilled = None
        else:
            glob = set(int(s) for s in (pre or ()))
            d.prefilled = [{s - i * bs for s in glob if i * bs <= s < (i + 1) * bs}
                           for i in range(ndp)]
        ids = getattr(self._tls, "decode_ids", None)
        self._tls.decode_ids = None
        if ids is not None:
            ids = (ids + [None] * n_rows)[:n_rows]
            d.ids = [ids[i * bs:(i + 1) * bs] for i in range(ndp)]
        else:
            d.ids = None
        d.key, present = self._find_key(getattr(gen, a["trace_inputs"], _MISSING), d.ods, bs)
        caps = getattr(gen, a["capabilities"], None)
        supports = None
        if isinstance(caps, collections.abc.Mapping) and a["capability"] in caps:
            supports = bool(caps[a["capability"]])
        force = self.env.get(a["force_env"]) == "1"
        d.allowed = supports is not False or force
        aud = self._audit()
        self._config(gen, bs)
        if supports is False and not force:
            self._say_once("keep-off", "ttaudit: keep off (%s declares %s[%r] False)"
                           % (type(gen).__name__, a["capabilities"], a["capability"]))
        cond = d.ods and (d.reset or bool(d.mode_switched)) and enable_trace
        if present is None:
            d.would = False
            if cond:
                self._say_once("no-trace-inputs",
                               "ttaudit: %s has no %s: the gate cannot be judged, no gate "
                               "events are written" % (type(gen).__name__, a["trace_inputs"]))
        else:
            d.would = bool(cond and present)
        if d.would:
            if not d.allowed:
                aud.gate(step, keep=False, supports_async_decode=supports, force=False,
                         reason="model does not declare %s" % a["capability"])
                self.counts["gate"] += 1
            elif force and supports is False and not getattr(self, "_forced_done", False):
                self._forced_done = True
                aud.gate(step, keep=True, supports_async_decode=False, force=True,
                         reason="%s=1 overrides %s False" % (a["force_env"], a["capability"]))
                self.counts["gate"] += 1
        self._decode_stack().append(d)
        return d

    def _decode_leave(self, d, result):
        st = self._decode_stack()
        if st and st[-1] is d:
            st.pop()
        if d.would and d.allowed and d.keep_calls == 0 and result is not _FAILED:
            with self._lock:
                self.keep_unobserved += 1
            keeps = [t for t in self.table["targets"] if t["role"] == "keep"]
            self._say_once("keep-unobserved",
                           "ttaudit: the keep should have run at step %d (reset_batch or a mode "
                           "switch, trace inputs present, gate open) but %s was not called: "
                           "its name in the table may be wrong (%s), or a patch skips it; such "
                           "steps are counted, not written"
                           % (d.step, " or ".join("%s:%s" % (k["module"], k["name"])
                                                  for k in keeps) or "no keep helper",
                              CONFIG_VAR))

    def _trace_enter(self, args, kwargs, g, t):
        gen = args[0] if args else None
        toks = _chunks(g["tokens"](args, kwargs))
        batch = _rows(toks[0]) if toks else 0
        ods = bool(g["on_device_sampling"](args, kwargs))
        reset = bool(g["reset_batch"](args, kwargs))
        st = self._decode_stack()
        d = st[-1] if st else None
        step = d.step if d is not None else self._next_step()
        prev = self._prev_trace.get(id(gen))
        self._prev_trace[id(gen)] = (ods, batch)
        op = "restage" if (reset or not ods or prev != (ods, batch)) else "replay"
        ids = d.ids if d is not None and d.bs == batch else None
        return (gen, step, ods, batch, len(toks), op, ids)

    def _trace_leave(self, ctx, result):
        if result is _FAILED:
            return
        gen, step, ods, batch, n, op, ids = ctx
        key, _ = self._find_key(getattr(gen, self.attrs["trace_inputs"], _MISSING), ods, batch)
        kt = _key_text(key if key is not None else (ods, batch))
        a = self._audit()
        for i in range(n):
            self.trace_state[(kt, i)] = (step, ids[i] if ids is not None and i < len(ids)
                                         else None)
            a.trace(step, op, kt, dp=i)
            self.counts["trace"] += 1

    def _keep_enter(self, args, kwargs, g, t):
        st = self._decode_stack()
        d = st[-1] if st else None
        if d is None:
            self._say_once("keep-outside", "ttaudit: %s:%s was called outside decode_forward: "
                           "those calls are not written" % (t["module"], t["name"]))
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
        elif d.prefilled is not None and dp < len(d.prefilled):
            pf = d.prefilled[dp]
        else:
            pf = None
        if pf is not None:
            pf = sorted(s for s in pf if 0 <= s < h)
        ret = c["ret"]

        def part(name):
            i = ret.get(name)
            if i is None or not isinstance(result, (tuple, list)) or i >= len(result):
                return None
            return result[i]

        kw = {"reset_batch": d.reset, "mode_switched": d.mode_switched, "dp": dp,
              "prefilled": pf}
        remap = c["remap"]
        kt = _key_text(d.key) if d.key is not None else None
        buf = self.trace_state.get((kt, dp)) if kt is not None else None
        if len(dpos) < h or (dtok is not None and len(dtok) < h):
            n = min(len(dpos), len(dtok) if dtok is not None else len(dpos))
            dev, dt = dpos[:n], (dtok[:n] if dtok is not None else None)
            kw.update(taken=[False] * h, fallback="shape")
            idx = None
        elif remap is not None and (len(remap) != h or any(r < 0 or r >= h for r in remap)):
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
        if buf is not None:
            kw["buf_step"] = buf[0]
            breq = buf[1]
            if d.ids is not None and dp < len(d.ids) and breq is not None and idx is not None:
                sreq = list(d.ids[dp][:h]) + [None] * max(0, h - len(d.ids[dp]))
                bq = [breq[j] if j < len(breq) else None for j in idx]
                kw["slot_req"], kw["buf_req"] = sreq, bq
                kw["slot_gen"] = [self._gen(r) for r in sreq]
                kw["buf_slot_gen"] = [self._gen(r) for r in bq]
        self._audit().merge(d.step, hp, dev, **kw)
        self.counts["merge"] += 1


def _taken(src, mtok, mpos, ht, hp, dtok, dpos, prefilled):
    """Per slot, did the keep take the device side? From the helper's
    returned source when it is per slot; a source naming a fallback means
    nothing taken; otherwise from the returned positions and tokens: equal to
    the device's and not the host's is taken, the other way round is not.
    Where both sides are equal the result cannot tell: the slot is decided by
    the keep's own rule and listed as inferred (active slots only)."""
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
            taken.append((dpos[s] == hp[s] or dpos[s] == hp[s] + 1) and s not in prefilled)
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

