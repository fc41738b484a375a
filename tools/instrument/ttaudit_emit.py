"""ttaudit_emit - write merge audits that `ttaudit replay` can count.

A single file, standard library only, Python 3.9 or later. Copy it next to the
generator (or put tools/instrument on sys.path) and call it from the async-ahead
merge block. docs/instrumenting.md shows where the calls go and why each field
is there; the format is the project's merge audit contract (one JSON object per
line, keys as the contract names them).

Switched on by the environment variable TTAUDIT_EMIT=1, read when a MergeAudit
is constructed. Any other value, or none, leaves it off: every method then
returns before it looks at its arguments, so the calls can stay in production
code (a disabled call costs a fraction of a microsecond, `make bench` prints it).

    from ttaudit_emit import MergeAudit, Stamp

    audit = MergeAudit(logger)                  # or a path, or a stream
    audit.config(slots=8, max_model_len=131072, arm="batch")
    audit.merge(step, host_pos, dev_pos, reset_batch=True, mode_switched=False,
                prefilled=self._slots_prefilled_since_decode, buf_step=self._buf_step,
                taken=use_dev, arm="batch", **stamp.fields(len(host_pos)))

Where the lines go:
  - a path (str or os.PathLike): a plain JSONL audit, opened for append, each
    line written with one write(2) as soon as it is made. No prefix.
  - a logging.Logger or LoggerAdapter: one record per line at `level` (INFO),
    message "MERGE_AUDIT {...}"; the capture shim finds the object after any
    log prefix the handler adds.
  - a stream (anything with .write): "MERGE_AUDIT {...}\\n", flushed.
  - None: sys.stderr as it is at the time of each write, with the prefix.

Errors. A wrong call (a float or bool position, per-slot lists whose length
differs from host_pos, a slot index outside the batch, a value outside int64)
raises TypeError or ValueError at the call site and writes nothing: the
emitter never writes a line the analyzer would count as malformed. A failure
to write (disk full, closed stream) never reaches the generator: it is counted
in `MergeAudit.errors`, reported once on stderr, and the audit carries on.

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

__all__ = ["MergeAudit", "Stamp", "ENV_VAR", "enabled"]

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


# --- the emitter --------------------------------------------------------------

class MergeAudit:
    """Writes merge audit events, one JSON object per line.

    `path_or_stream`: a file path (plain JSONL, no prefix), a logging.Logger or
    LoggerAdapter, a stream with .write, or None for sys.stderr. `prefix` is put
    before the object on loggers and streams ("MERGE_AUDIT " unless given); a
    file path takes no prefix, since a plain audit is bare JSON lines. `level`
    is the logging level for a logger. `timestamps` adds "t" (wall seconds) to
    every event. `enable` overrides TTAUDIT_EMIT (None: read the variable).

    Counters: `lines` written, `errors` (lines lost to write failures).
    Thread-safe. The owner calls close() (or uses `with`) for a file path.
    """

    def __init__(self, path_or_stream=None, prefix=_NOT_GIVEN, level=logging.INFO,
                 timestamps=False, enable=None):
        self._on = enabled() if enable is None else bool(enable)
        self.lines = 0
        self.errors = 0
        self._fd = -1
        self._logger = None
        self._stream = None
        self._what = "stderr"
        self._kind = "stderr"
        self._lock = threading.Lock()
        self._timestamps = bool(timestamps)
        self._level = level
        self._reported = False

        is_path = isinstance(path_or_stream, (str, bytes, os.PathLike))
        if prefix is _NOT_GIVEN:
            prefix = "" if is_path else DEFAULT_PREFIX
        if not isinstance(prefix, str) or "{" in prefix or "\n" in prefix or "\r" in prefix:
            raise ValueError("MergeAudit: prefix %r must be a string without '{' or a newline"
                             % (prefix,))
        if is_path and prefix:
            raise ValueError("MergeAudit: a file audit is plain JSONL, prefix must be empty")
        self._prefix = prefix

        if path_or_stream is None:
            pass
        elif is_path:
            self._what = os.fsdecode(path_or_stream)
            self._kind = "file"
        elif isinstance(path_or_stream, (logging.Logger, logging.LoggerAdapter)):
            self._logger = path_or_stream
            self._what = "logger %s" % getattr(path_or_stream, "name", "?")
            self._kind = "logger"
        elif hasattr(path_or_stream, "write"):
            self._stream = path_or_stream
            self._what = str(getattr(path_or_stream, "name", "stream"))
            self._kind = "stream"
        else:
            raise TypeError("MergeAudit: %s is not a path, logger or stream"
                            % _describe(path_or_stream))
        if not self._on:
            return          # off: no file is created
        if is_path:
            try:
                self._fd = os.open(path_or_stream,
                                   os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as e:
                self._fail(e)

    @property
    def on(self):
        """True when this audit writes."""
        return self._on

    def close(self):
        """Closes a file audit; says on stderr how many lines were lost, if any."""
        with self._lock:
            if self._fd >= 0:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = -1
            if self.errors:
                self._say("%s: %d audit line(s) lost to write errors" % (self._what, self.errors))
            self._on = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- events --

    def merge(self, step, host_pos, dev_pos, *, reset_batch, mode_switched,
              host_tok=None, dev_tok=None, prefilled=None, buf_step=None,
              gen=None, buf_gen=None, slot_gen=None, buf_slot_gen=None,
              slot_req=None, buf_req=None, taken=None, arm=None):
        """One evaluation of the merge block: what it compared and why it ran.

        host_pos[H] and dev_pos[D] as compared (-1 = inactive; D may differ
        from H: the analyzer treats D < H as the shape fallback). Per-slot
        lists (slot_gen, buf_slot_gen, slot_req, buf_req, taken) have H
        entries, host_tok H and dev_tok D. `prefilled` is a set or list of
        slots; None omits it (the slot-reuse rule is then not evaluable),
        an empty set records "none". Omitted fields are simply absent.
        """
        if not self._on:
            return
        m = "merge"
        ev = {"ev": "merge", "step": _nonneg(m + ": step", step)}
        hp = _int_list(m + ": host_pos", host_pos)
        h = len(hp)
        dp = _int_list(m + ": dev_pos", dev_pos)
        ev["host_pos"] = hp
        ev["dev_pos"] = dp
        ev["reset_batch"] = _as_bool(m + ": reset_batch", reset_batch)
        ev["mode_switched"] = _as_bool(m + ": mode_switched", mode_switched)
        if host_tok is not None:
            ev["host_tok"] = _int_list(m + ": host_tok", host_tok, h)
        if dev_tok is not None:
            ev["dev_tok"] = _int_list(m + ": dev_tok", dev_tok, len(dp))
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
        self._emit(ev)

    def config(self, *, slots=None, max_model_len=None, arm=None):
        """The batch width, the model's max_model_len (the analyzer's garbage
        bound) and the guard the code applies; write it first."""
        if not self._on:
            return
        ev = {"ev": "config"}
        if slots is not None:
            ev["slots"] = _positive("config: slots", slots)
        if max_model_len is not None:
            ev["max_model_len"] = _positive("config: max_model_len", max_model_len)
        if arm is not None:
            ev["arm"] = _name("config: arm", arm)
        self._emit(ev)

    def decode(self, step, slots=None):
        """A decode forward at `step`, over the active `slots` if given; with
        the trace decode this is the step whose buffer a later merge reads."""
        if not self._on:
            return
        ev = {"ev": "decode", "step": _nonneg("decode: step", step)}
        if slots is not None:
            ev["slots"] = _slot_list("decode: slots", slots)
        self._emit(ev)

    def prefill(self, step, slots):
        """A prefill forward at `step` into `slots` (what the slot-reuse mask records)."""
        if not self._on:
            return
        self._emit({"ev": "prefill", "step": _nonneg("prefill: step", step),
                    "slots": _slot_list("prefill: slots", slots)})

    def width_change(self, step, from_width, to_width):
        """The decode bucket width changed between two decodes."""
        if not self._on:
            return
        self._emit({"ev": "width_change", "step": _nonneg("width_change: step", step),
                    "from": _positive("width_change: from_width", from_width),
                    "to": _positive("width_change: to_width", to_width)})

    def request(self, phase, req, slot, step=None):
        """A request starts in or finishes from a slot. `req` is the id the
        HTTP response carries (cmpl-..., chatcmpl-...) so benchmark records
        join audit events."""
        if not self._on:
            return
        if phase not in ("start", "finish"):
            raise ValueError("request: phase is %r, want 'start' or 'finish'" % (phase,))
        if not isinstance(req, str) or not req:
            raise TypeError("request: req is a %s, want a non-empty string" % _describe(req))
        ev = {"ev": "request", "phase": phase, "req": req,
              "slot": _nonneg("request: slot", slot)}
        if step is not None:
            ev["step"] = _nonneg("request: step", step)
        self._emit(ev)

    # -- output --

    def _emit(self, ev):
        if self._timestamps:
            ev["t"] = time.time()
        line = _DUMPS(ev)
        with self._lock:
            if not self._on:
                return
            try:
                if self._kind == "file":
                    if self._fd < 0:
                        raise OSError("not open")
                    data = (line + "\n").encode("ascii")
                    while data:
                        n = os.write(self._fd, data)
                        data = data[n:]
                elif self._logger is not None:
                    if not self._logger.isEnabledFor(self._level):
                        raise OSError("logger level drops level %s records"
                                      % logging.getLevelName(self._level))
                    self._logger.log(self._level, "%s%s", self._prefix, line)
                else:
                    f = self._stream if self._stream is not None else sys.stderr
                    f.write(self._prefix + line + "\n")
                    fl = getattr(f, "flush", None)
                    if fl is not None:
                        fl()
                self.lines += 1
            except Exception as e:     # an audit failure never reaches the generator
                self._fail(e)

    def _fail(self, e):
        self.errors += 1
        if not self._reported:
            self._reported = True
            self._say("%s: audit write failed: %s; later failures are only counted"
                      % (self._what, e))

    @staticmethod
    def _say(msg):
        try:
            sys.stderr.write("ttaudit_emit: %s\n" % msg.replace("{", "(").replace("}", ")"))
            sys.stderr.flush()
        except Exception:
            pass


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
