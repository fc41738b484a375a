"""ttaudit_emit.emit - the emitter: merge audits that `ttaudit replay` can count.

Standard library only, Python 3.9 or later. `from ttaudit_emit import
MergeAudit, Stamp` gives it to code that calls it by hand; the
auto-instrumentation (ttaudit_emit.kit) calls it from its wrappers.
docs/instrumenting.md says where the calls go and why each field is there;
the format is the project's merge audit contract (one JSON object per line).

Switched on by TTAUDIT_EMIT=1, read when a MergeAudit is constructed. Any
other value, or none, leaves it off: every method then returns before it
looks at its arguments (a disabled call costs a fraction of a microsecond,
`make bench` prints it).

The sink is detected, never configured: a loguru logger (duck-typed: it has
opt, bind and log and no isEnabledFor), a stdlib logging.Logger or
LoggerAdapter, a file path (plain JSONL, no prefix), a file object (anything
with .write), or None (sys.stderr as it is at each write). Loggers and
streams get "MERGE_AUDIT {...}"; the capture shim finds the object after any
prefix a log handler adds. A logger that would drop the record (its level is
above INFO, or nothing handles it) is not written to: the line goes to
stderr instead, and that is reported once.

Nothing here ever raises into the caller unless it asks (strict=True): a
wrong call (a float position, per-slot lists of the wrong length, a slot
outside the batch, a value outside int64, a missing argument) writes nothing
and is counted in `rejected`; a failure to write (disk full, closed stream,
a sink that raises) is counted in `errors`. The first of each is reported
once on stderr, `close()` reports the totals. A wrong constructor argument
is reported and the audit falls back to stderr.

Tensors and arrays: anything with a .tolist() method (torch tensors, numpy
arrays and scalars) is converted with it; neither library is imported here.
"""

import json
import logging
import operator
import os
import sys
import threading
import time

__all__ = ["MergeAudit", "Stamp", "ENV_VAR", "enabled", "sink_kind"]

ENV_VAR = "TTAUDIT_EMIT"
DEFAULT_PREFIX = "MERGE_AUDIT "

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_NOT_GIVEN = object()
_DUMPS = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def enabled():
    """True when TTAUDIT_EMIT is "1" in the environment right now."""
    return os.environ.get(ENV_VAR) == "1"


# --- validation -------------------------------------------------------------
# Each checker takes the method name and the argument name so the message says
# which call and which argument are wrong ("merge: dev_pos[3] is a float ...").

def _describe(v):
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return "%s (%s)" % (type(v).__name__, r)


def _as_int(where, v):
    """An int in int64 range; bools, floats and strings are refused."""
    if type(v) is not int:
        if isinstance(v, (bool, float, str, bytes)) or \
                getattr(getattr(v, "dtype", None), "kind", "") in ("b", "f", "c"):
            raise TypeError("%s is a %s, want an int" % (where, _describe(v)))
        try:
            v = operator.index(v)       # numpy and torch integer scalars
        except TypeError:
            raise TypeError("%s is a %s, want an int" % (where, _describe(v))) from None
        if isinstance(v, bool):
            raise TypeError("%s is a bool, want an int" % where)
    if v < _INT64_MIN or v > _INT64_MAX:
        raise ValueError("%s is %d, outside the int64 range" % (where, v))
    return v


def _as_bool(where, v):
    if type(v) is bool:
        return v
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple, str, bytes)):
        b = v.tolist()                 # numpy.bool_ or a 0-d bool tensor
        if type(b) is bool:
            return b
    raise TypeError("%s is a %s, want a bool" % (where, _describe(v)))


def _as_list(where, v, sets=False):
    """A list from a list, tuple, range, tensor or array (and a set when
    `sets`, sorted). Strings, bytes, dicts and scalars are refused."""
    if isinstance(v, list):
        return v
    if isinstance(v, (tuple, range)):
        return list(v)
    if sets and isinstance(v, (set, frozenset)):
        try:
            return sorted(v)
        except TypeError:
            raise TypeError("%s holds values that are not all ints" % where) from None
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        lv = v.tolist()
        if isinstance(lv, list):
            return lv
    raise TypeError("%s is a %s, want a list" % (where, _describe(v)))


def _int_list(where, v, n=None):
    lv = _as_list(where, v)
    if n is not None and len(lv) != n:
        raise ValueError("%s has %d entries, host_pos has %d" % (where, len(lv), n))
    out = lv if all(type(x) is int for x in lv) else None
    if out is None:
        out = [_as_int("%s[%d]" % (where, i), x) for i, x in enumerate(lv)]
    else:
        for i, x in enumerate(lv):
            if x < _INT64_MIN or x > _INT64_MAX:
                _as_int("%s[%d]" % (where, i), x)
    return out


def _bool_list(where, v, n):
    lv = _as_list(where, v)
    if len(lv) != n:
        raise ValueError("%s has %d entries, host_pos has %d" % (where, len(lv), n))
    return [_as_bool("%s[%d]" % (where, i), x) for i, x in enumerate(lv)]


def _req_list(where, v, n):
    lv = _as_list(where, v)
    if len(lv) != n:
        raise ValueError("%s has %d entries, host_pos has %d" % (where, len(lv), n))
    for i, x in enumerate(lv):
        if x is not None and not isinstance(x, str):
            raise TypeError("%s[%d] is a %s, want a request id string or None"
                            % (where, i, _describe(x)))
    return [None if x is None else str(x) for x in lv]


def _slot_list(where, v, n=None):
    """Slot indices: ints >= 0 (and < n when n is given), sorted, no repeats."""
    lv = _as_list(where, v, sets=True)
    out = set()
    for i, x in enumerate(lv):
        s = _as_int("%s[%d]" % (where, i), x)
        if s < 0 or (n is not None and s >= n):
            raise ValueError("%s holds slot %d, outside [0, %d)" % (where, s, n)
                             if n is not None else "%s holds slot %d, below 0" % (where, s))
        out.add(s)
    return sorted(out)


def _nonneg(where, v):
    v = _as_int(where, v)
    if v < 0:
        raise ValueError("%s is %d, want >= 0" % (where, v))
    return v


def _name(where, v):
    if not isinstance(v, str) or not v or any(c in v for c in "\r\n"):
        raise TypeError("%s is a %s, want a non-empty one-line string" % (where, _describe(v)))
    return v


# --- the sink -----------------------------------------------------------------

_LOGURU_INFO = 20       # loguru's INFO level number


def sink_kind(obj):
    """What MergeAudit makes of `obj`: "stderr" (None), "file" (a path),
    "loguru", "logging", "stream", or None when it is none of them."""
    if obj is None:
        return "stderr"
    if isinstance(obj, (str, bytes, os.PathLike)):
        return "file"
    if isinstance(obj, (logging.Logger, logging.LoggerAdapter)):
        return "logging"
    if hasattr(obj, "isEnabledFor") and hasattr(obj, "log"):
        return "logging"
    if hasattr(obj, "opt") and hasattr(obj, "bind") and hasattr(obj, "log"):
        return "loguru"
    if hasattr(obj, "write"):
        return "stream"
    return None


_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _caller_depth():
    """Frames between the caller's caller (the sink's `log` call, in _write)
    and the first frame outside this package: the generator's code that made
    the call or, with the kit, whose frame the kit observed. The log record
    then names that file, function and line, not this module's."""
    f = sys._getframe(1)     # _write: depth 0 to the sink
    depth = 0
    while f is not None and _in_pkg(f.f_code.co_filename):
        f = f.f_back
        depth += 1
    return depth if f is not None else 0


_IN_PKG = {}


def _in_pkg(filename):
    """Whether a code object's file is in this package or importlib (the name
    may be relative to where the import ran, so it is made absolute once)."""
    v = _IN_PKG.get(filename)
    if v is None:
        # importlib's frozen frames too: a note the kit writes as the
        # generator's module loads names the import that loaded it
        v = _IN_PKG[filename] = (filename.startswith("<frozen ") or
                                 os.path.abspath(filename).startswith(_PKG_DIR))
    return v


def _loguru_drops(lg):
    """Why loguru would drop an INFO record (its level, no handler), or None.
    Reads loguru's private core, as nothing public says it; when that is not
    there the record is assumed to go through."""
    core = getattr(lg, "_core", None)
    if core is None:
        return None
    handlers = getattr(core, "handlers", None)
    if isinstance(handlers, dict) and not handlers:
        return "it has no handler"
    lvl = getattr(core, "min_level", None)
    if isinstance(lvl, int) and lvl > _LOGURU_INFO:
        return "its lowest handler level is %d, above INFO" % lvl
    return None


def _logging_drops(lg, level):
    if not lg.isEnabledFor(level):
        return "its level drops %s records" % logging.getLevelName(level)
    base = getattr(lg, "logger", lg)          # a LoggerAdapter's logger
    has = getattr(base, "hasHandlers", None)
    if has is not None and not has() and level < logging.WARNING:
        return "no handler takes its records (logging's last resort shows WARNING and above only)"
    return None


# --- the emitter --------------------------------------------------------------

_LIVE = []      # audits with a lock, re-made in a fork child (the lock may be held)


def _after_fork():
    for a in _LIVE:
        a._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class MergeAudit:
    """Writes merge audit events, one JSON object per line.

    `sink`: a loguru logger, a logging.Logger or LoggerAdapter, a file path
    (plain JSONL, no prefix), a stream with .write, or None for sys.stderr.
    `prefix` goes before the object on loggers and streams ("MERGE_AUDIT "
    unless given). `level`: the logging level (INFO). `timestamps` adds "t"
    (wall seconds) to every event. `enable` overrides TTAUDIT_EMIT (None:
    read the variable). `strict`: wrong calls raise TypeError/ValueError
    instead of being counted (for tests). `pid`: add the writing process's
    pid to every event. `common`: fields added to every event (the kit puts
    the data-parallel rank there); the dict may be changed later.

    Counters: `lines` written, `errors` (lines lost to write failures),
    `rejected` (wrong calls, nothing written), `notes` (text lines written).
    Thread-safe and fork-safe. The owner calls close() (or uses `with`).
    """

    def __init__(self, sink=None, prefix=_NOT_GIVEN, level=logging.INFO,
                 timestamps=False, enable=None, strict=False, pid=False, common=None):
        self._on = enabled() if enable is None else bool(enable)
        self.lines = 0
        self.errors = 0
        self.rejected = 0
        self.notes = 0
        self.common = common if isinstance(common, dict) else {}
        self._strict = bool(strict)
        self._pid = bool(pid)
        self._fd = -1
        self._target = None
        self._what = "stderr"
        self._lock = threading.Lock()
        self._timestamps = bool(timestamps)
        self._level = level if isinstance(level, int) and not isinstance(level, bool) \
            else logging.INFO
        self._reported_write = False
        self._reported_call = False
        self._reported_drop = False
        _LIVE.append(self)

        kind = sink_kind(sink)
        if kind is None:
            self._say("%s is not a path, logger or stream: writing to stderr"
                      % _describe(sink))
            kind, sink = "stderr", None
        self._kind = kind
        if prefix is _NOT_GIVEN:
            prefix = "" if kind == "file" else DEFAULT_PREFIX
        if not isinstance(prefix, str) or "{" in prefix or "\n" in prefix or "\r" in prefix \
                or (kind == "file" and prefix):
            self._say("prefix %r cannot be used (a file audit takes none, others no '{' or "
                      "newline): using the default" % (prefix,))
            prefix = "" if kind == "file" else DEFAULT_PREFIX
        self._prefix = prefix
        if kind == "file":
            self._what = os.fsdecode(sink)
        elif kind in ("logging", "loguru"):
            self._target = sink
            self._what = ("%s logger %s" % (kind, getattr(sink, "name", "") or "")).strip()
        elif kind == "stream":
            self._target = sink
            self._what = str(getattr(sink, "name", "stream"))
        if not self._on:
            return          # off: no file is created
        if kind == "file":
            try:
                self._fd = os.open(sink, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                                   0o644)
            except OSError as e:
                self._fail_write(e)

    @property
    def on(self):
        """True when this audit writes."""
        return self._on

    @property
    def kind(self):
        """The sink as detected: "loguru", "logging", "file", "stream" or "stderr"."""
        return self._kind

    def close(self):
        """Closes a file audit; says on stderr what was lost or refused, if anything."""
        with self._lock:
            if self._fd >= 0:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = -1
            if self.errors:
                self._say("%s: %d audit line(s) lost to write errors" % (self._what, self.errors))
            if self.rejected:
                self._say("%s: %d wrong call(s) wrote nothing" % (self._what, self.rejected))
            self._on = False
        try:
            _LIVE.remove(self)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- events: each public method checks `on` first, then hands its
    # arguments to the checking builder; a wrong call is counted, not raised --

    def merge(self, step=_NOT_GIVEN, host_pos=_NOT_GIVEN, dev_pos=_NOT_GIVEN, *extra,
              reset_batch=_NOT_GIVEN, mode_switched=_NOT_GIVEN, host_tok=None, dev_tok=None,
              prefilled=None, buf_step=None, gen=None, buf_gen=None, slot_gen=None,
              buf_slot_gen=None, slot_req=None, buf_req=None, taken=None, arm=None,
              dp=None, rank=None, taken_inferred=None, fallback=None, **unknown):
        """One evaluation of the merge block: what it compared and why it ran.
        host_pos[H] and dev_pos[D] as compared (-1 = inactive; D < H is the
        shape fallback). Per-slot lists (slot_gen, buf_slot_gen, slot_req,
        buf_req, taken) have H entries, host_tok H and dev_tok D. `prefilled`
        is a set or list of slots; None omits it (the slot-reuse rule is then
        not evaluable), an empty set records "none". `dp`: the data-parallel
        chunk, `rank`: the process's data-parallel rank. `taken_inferred`:
        slots whose `taken` the writer could not observe and inferred;
        `fallback`: why the code kept the host tokens without comparing.
        """
        # Named parameters, not **kwargs: binding them costs less than building a
        # dict, and this is the call a disabled audit must make cheap.
        if not self._on:
            return
        if extra or unknown or dev_pos is _NOT_GIVEN:
            what = []
            if dev_pos is _NOT_GIVEN:
                what.append("step, host_pos and dev_pos are required")
            if extra:
                what.append("%d positional argument(s) too many" % len(extra))
            if unknown:
                what.append("unknown keyword(s) %s" % ", ".join(sorted(unknown)))
            self._reject("merge: " + "; ".join(what), TypeError)
            return
        self._call(_merge_event, (step, host_pos, dev_pos), {
            "reset_batch": reset_batch, "mode_switched": mode_switched, "host_tok": host_tok,
            "dev_tok": dev_tok, "prefilled": prefilled, "buf_step": buf_step, "gen": gen,
            "buf_gen": buf_gen, "slot_gen": slot_gen, "buf_slot_gen": buf_slot_gen,
            "slot_req": slot_req, "buf_req": buf_req, "taken": taken, "arm": arm, "dp": dp,
            "rank": rank, "taken_inferred": taken_inferred, "fallback": fallback})

    def config(self, *args, **kwargs):
        """config(*, slots=None, max_model_len=None, arm=None): the batch width,
        the model's max_model_len (the analyzer's garbage bound) and the guard
        the code applies; write it first."""
        if not self._on:
            return
        self._call(_config_event, args, kwargs)

    def gate(self, *args, **kwargs):
        """gate(step, *, keep, supports_async_decode, force, reason, dp=None):
        the capability gate decided on a step where the keep would otherwise
        have run (refused: keep False). supports_async_decode None: the
        model does not declare it. `force`: the code overrode the gate (no
        upstream revision can; a patched one may say so)."""
        if not self._on:
            return
        self._call(_gate_event, args, kwargs)

    def trace(self, *args, **kwargs):
        """trace(step, op, key, dp=None): a trace buffer was written at `step`
        ("replay": the trace ran and wrote its sampled tokens back; "restage":
        the host copied the inputs first), for trace key `key` (text)."""
        if not self._on:
            return
        self._call(_trace_event, args, kwargs)

    def decode(self, *args, **kwargs):
        """decode(step, slots=None): a decode forward at `step`, over the active
        `slots` if given."""
        if not self._on:
            return
        self._call(_decode_event, args, kwargs)

    def prefill(self, *args, **kwargs):
        """prefill(step, slots): a prefill forward at `step` into `slots` (what
        the slot-reuse mask records)."""
        if not self._on:
            return
        self._call(_prefill_event, args, kwargs)

    def width_change(self, *args, **kwargs):
        """width_change(step, from_width, to_width): the decode bucket width changed."""
        if not self._on:
            return
        self._call(_width_event, args, kwargs)

    def request(self, *args, **kwargs):
        """request(phase, req, slot, step=None): a request starts in or finishes
        from a slot. `req` is the id the engine gave it, so benchmark records
        join audit events."""
        if not self._on:
            return
        self._call(_request_event, args, kwargs)

    def note(self, text):
        """One plain text line (a banner, a report) through the same sink,
        without the prefix. A file audit is JSONL, so its notes go to stderr."""
        if not self._on:
            return
        if not isinstance(text, str) or "\n" in text or "\r" in text:
            self._reject("note: text is a %s, want a one-line string" % _describe(text),
                         TypeError)
            return
        self._put(text, True)

    # -- output --

    def _call(self, build, args, kwargs):
        try:
            ev = build(*args, **kwargs)
        except (TypeError, ValueError) as e:
            self._reject(str(e), type(e))
            return
        self._emit(ev)

    def _reject(self, msg, exc):
        if self._strict:
            raise exc(msg)
        with self._lock:
            self.rejected += 1
            first = not self._reported_call
            self._reported_call = True
        if first:
            self._say("%s; the call wrote nothing, later wrong calls are only counted" % msg)

    def _emit(self, ev):
        if self.common:
            for k, v in self.common.items():
                ev.setdefault(k, v)
        if self._pid:
            ev["pid"] = os.getpid()
        if self._timestamps:
            ev["t"] = time.time()
        try:
            line = _DUMPS(ev)
        except (TypeError, ValueError) as e:     # a bad `common` value
            self._reject("event cannot be written as JSON: %s" % e, type(e))
            return
        self._put(line, False)

    def _put(self, text, note):
        """Writes one line under the lock and counts it; a failure is counted,
        never raised (an audit failure never reaches the generator)."""
        with self._lock:
            if not self._on:
                return
            try:
                self._write(text, note)
                if note:
                    self.notes += 1
                else:
                    self.lines += 1
            except Exception as e:
                self._fail_write(e)

    def _write(self, line, note):
        """One line to the sink; raises on failure. Called with the lock held."""
        kind = self._kind
        if kind in ("loguru", "logging"):
            depth = _caller_depth()
        text = line if note else self._prefix + line
        if kind == "file":
            if note:
                self._stream_write(sys.stderr, line)
                return
            if self._fd < 0:
                raise OSError("not open")
            data = (line + "\n").encode("utf-8")
            while data:
                n = os.write(self._fd, data)
                data = data[n:]
        elif kind == "loguru":
            why = _loguru_drops(self._target)
            if why is None:
                self._target.opt(depth=depth).log("INFO", "{}", text)
            else:
                self._dropped(why)
                self._stream_write(sys.stderr, text)
        elif kind == "logging":
            why = _logging_drops(self._target, self._level)
            if why is None:
                self._target.log(self._level, "%s", text, stacklevel=depth + 1)
            else:
                self._dropped(why)
                self._stream_write(sys.stderr, text)
        else:
            self._stream_write(self._target if kind == "stream" else sys.stderr, text)

    @staticmethod
    def _stream_write(f, text):
        f.write(text + "\n")
        fl = getattr(f, "flush", None)
        if fl is not None:
            fl()

    def _dropped(self, why):
        if not self._reported_drop:
            self._reported_drop = True
            self._say("%s would drop the audit lines (%s): writing them to stderr instead"
                      % (self._what, why))

    def _fail_write(self, e):
        self.errors += 1
        if not self._reported_write:
            self._reported_write = True
            self._say("%s: audit write failed: %s; later failures are only counted"
                      % (self._what, e))

    @staticmethod
    def _say(msg):
        """A report of the emitter's own trouble: on stderr, never the sink (it may be
        the trouble), with braces replaced so the capture never reads it as an event."""
        try:
            sys.stderr.write("ttaudit_emit: %s\n" % msg.replace("{", "(").replace("}", ")"))
            sys.stderr.flush()
        except Exception:
            pass


# --- event builders: check every argument, return the event dict or raise ------

def _merge_event(step, host_pos, dev_pos, *, reset_batch=_NOT_GIVEN, mode_switched=_NOT_GIVEN,
                 host_tok=None, dev_tok=None, prefilled=None, buf_step=None,
                 gen=None, buf_gen=None, slot_gen=None, buf_slot_gen=None,
                 slot_req=None, buf_req=None, taken=None, arm=None,
                 dp=None, rank=None, taken_inferred=None, fallback=None):
    m = "merge"
    if reset_batch is _NOT_GIVEN or mode_switched is _NOT_GIVEN:
        raise TypeError("merge: reset_batch and mode_switched are required (say why the "
                        "merge ran; None leaves one out when the code does not know it)")
    ev = {"ev": "merge", "step": _nonneg(m + ": step", step)}
    hp = _int_list(m + ": host_pos", host_pos)
    h = len(hp)
    dpos = _int_list(m + ": dev_pos", dev_pos)
    ev["host_pos"] = hp
    ev["dev_pos"] = dpos
    if reset_batch is not None:
        ev["reset_batch"] = _as_bool(m + ": reset_batch", reset_batch)
    if mode_switched is not None:
        ev["mode_switched"] = _as_bool(m + ": mode_switched", mode_switched)
    if host_tok is not None:
        ev["host_tok"] = _int_list(m + ": host_tok", host_tok, h)
    if dev_tok is not None:
        ev["dev_tok"] = _int_list(m + ": dev_tok", dev_tok, len(dpos))
    if prefilled is not None:
        ev["prefilled"] = _slot_list(m + ": prefilled", prefilled, h)
    if buf_step is not None:
        ev["buf_step"] = _nonneg(m + ": buf_step", buf_step)
    if (gen is None) != (buf_gen is None):
        raise ValueError("%s: gen and buf_gen go together, one of them is missing" % m)
    if gen is not None:
        ev["gen"] = _as_int(m + ": gen", gen)
        ev["buf_gen"] = _as_int(m + ": buf_gen", buf_gen)
    if (slot_gen is None) != (buf_slot_gen is None):
        raise ValueError("%s: slot_gen and buf_slot_gen go together, one of them is missing" % m)
    if slot_gen is not None:
        ev["slot_gen"] = _int_list(m + ": slot_gen", slot_gen, h)
        ev["buf_slot_gen"] = _int_list(m + ": buf_slot_gen", buf_slot_gen, h)
    if (slot_req is None) != (buf_req is None):
        raise ValueError("%s: slot_req and buf_req go together, one of them is missing" % m)
    if slot_req is not None:
        ev["slot_req"] = _req_list(m + ": slot_req", slot_req, h)
        ev["buf_req"] = _req_list(m + ": buf_req", buf_req, h)
    if taken is not None:
        ev["taken"] = _bool_list(m + ": taken", taken, h)
    if arm is not None:
        ev["arm"] = _name(m + ": arm", arm)
    if dp is not None:
        ev["dp"] = _nonneg(m + ": dp", dp)
    if rank is not None:
        ev["rank"] = _nonneg(m + ": rank", rank)
    if taken_inferred is not None:
        ev["taken_inferred"] = _slot_list(m + ": taken_inferred", taken_inferred, h)
    if fallback is not None:
        ev["fallback"] = _name(m + ": fallback", fallback)
    return ev


def _config_event(*, slots=None, max_model_len=None, arm=None):
    ev = {"ev": "config"}
    if slots is not None:
        ev["slots"] = _positive("config: slots", slots)
    if max_model_len is not None:
        ev["max_model_len"] = _positive("config: max_model_len", max_model_len)
    if arm is not None:
        ev["arm"] = _name("config: arm", arm)
    return ev


def _gate_event(step, *, keep, supports_async_decode, force, reason, dp=None):
    ev = {"ev": "gate", "step": _nonneg("gate: step", step),
          "keep": _as_bool("gate: keep", keep)}
    if supports_async_decode is not None:
        ev["supports_async_decode"] = _as_bool("gate: supports_async_decode",
                                               supports_async_decode)
    ev["force"] = _as_bool("gate: force", force)
    ev["reason"] = _name("gate: reason", reason)
    if dp is not None:
        ev["dp"] = _nonneg("gate: dp", dp)
    return ev


def _trace_event(step, op, key, dp=None):
    if op not in ("replay", "restage"):
        raise ValueError("trace: op is %r, want 'replay' or 'restage'" % (op,))
    ev = {"ev": "trace", "step": _nonneg("trace: step", step), "op": op,
          "key": _name("trace: key", key)}
    if dp is not None:
        ev["dp"] = _nonneg("trace: dp", dp)
    return ev


def _decode_event(step, slots=None):
    ev = {"ev": "decode", "step": _nonneg("decode: step", step)}
    if slots is not None:
        ev["slots"] = _slot_list("decode: slots", slots)
    return ev


def _prefill_event(step, slots):
    return {"ev": "prefill", "step": _nonneg("prefill: step", step),
            "slots": _slot_list("prefill: slots", slots)}


def _width_event(step, from_width, to_width):
    return {"ev": "width_change", "step": _nonneg("width_change: step", step),
            "from": _positive("width_change: from_width", from_width),
            "to": _positive("width_change: to_width", to_width)}


def _request_event(phase, req, slot, step=None):
    if phase not in ("start", "finish"):
        raise ValueError("request: phase is %r, want 'start' or 'finish'" % (phase,))
    if not isinstance(req, str) or not req:
        raise TypeError("request: req is a %s, want a non-empty string" % _describe(req))
    ev = {"ev": "request", "phase": phase, "req": req,
          "slot": _nonneg("request: slot", slot)}
    if step is not None:
        ev["step"] = _nonneg("request: step", step)
    return ev


def _positive(where, v):
    v = _as_int(where, v)
    if v <= 0:
        raise ValueError("%s is %d, want > 0" % (where, v))
    return v


# --- generation stamps --------------------------------------------------------

class Stamp:
    """Generation stamps for the async-ahead buffer (the complete fix for
    stale merges): the buffer is stamped when the decode writes it and the
    stamp is checked at the merge, so a buffer from another batch or another
    request generation is refused however its positions look.

      gen          batch generation, bumped on every composition change
                   (a request starts or finishes, the width changes)
      slot_gen[s]  request generation of slot s, bumped when a request is
                   put into the slot (slot reuse)
      capture()    call where the decode refreshes the device buffer: it
                   records gen, slot_gen (and request ids, and the step)
                   as the buffer's stamp

    A guard takes slot s only when slot_current(s); fields() gives the same
    numbers to MergeAudit.merge, so the audit records exactly what the guard
    decided on. Before the first capture the buffer stamp is -1, which no
    generation equals: an uncaptured buffer is never taken.
    """

    def __init__(self, slots):
        slots = _positive("Stamp: slots", slots)
        self.gen = 0
        self.slot_gen = [0] * slots
        self.slot_req = [None] * slots
        self.buf_gen = -1
        self.buf_slot_gen = [-1] * slots
        self.buf_req = [None] * slots
        self.buf_step = None
        self._reqs = False

    def _slot(self, where, slot):
        s = _as_int(where, slot)
        if s < 0 or s >= len(self.slot_gen):
            raise ValueError("%s is %d, outside [0, %d)" % (where, s, len(self.slot_gen)))
        return s

    def start(self, slot, req=None):
        """A request is put into `slot` (prefill). `req`: its id, optional."""
        s = self._slot("Stamp.start: slot", slot)
        if req is not None:
            if not isinstance(req, str):
                raise TypeError("Stamp.start: req is a %s, want a string" % _describe(req))
            self._reqs = True
        self.slot_gen[s] += 1
        self.slot_req[s] = req
        self.gen += 1

    def finish(self, slot):
        """The request in `slot` finished; the slot is free."""
        s = self._slot("Stamp.finish: slot", slot)
        self.slot_req[s] = None
        self.gen += 1

    def changed(self):
        """Any other change of batch composition (width, slot remap)."""
        self.gen += 1

    def capture(self, step=None):
        """The decode at `step` wrote the device buffer: stamp it now."""
        if step is not None:
            step = _nonneg("Stamp.capture: step", step)
        self.buf_gen = self.gen
        self.buf_slot_gen = list(self.slot_gen)
        self.buf_req = list(self.slot_req)
        self.buf_step = step

    def current(self):
        """The buffer was captured with the batch as it is now."""
        return self.gen == self.buf_gen

    def slot_current(self, slot):
        """The buffer's entry for `slot` was written for the request there now."""
        return self.slot_gen[slot] == self.buf_slot_gen[slot]

    def allowed(self, n=None):
        """slot_current for slots [0, n) (all slots when n is None)."""
        n = len(self.slot_gen) if n is None else n
        return [self.slot_gen[s] == self.buf_slot_gen[s] for s in range(n)]

    def fields(self, n=None):
        """Keyword arguments for MergeAudit.merge, per-slot lists cut to the
        first `n` slots (the batch width H). slot_req/buf_req are included
        once any request id was given to start(); buf_step when capture()
        had a step."""
        n = len(self.slot_gen) if n is None else n
        if n > len(self.slot_gen):
            raise ValueError("Stamp.fields: n is %d, the stamp has %d slots"
                             % (n, len(self.slot_gen)))
        f = {"gen": self.gen, "buf_gen": self.buf_gen,
             "slot_gen": self.slot_gen[:n], "buf_slot_gen": self.buf_slot_gen[:n]}
        if self._reqs:
            f["slot_req"] = self.slot_req[:n]
            f["buf_req"] = self.buf_req[:n]
        if self.buf_step is not None:
            f["buf_step"] = self.buf_step
        return f
