"""ttaudit_emit.inline - the keep as the decode function itself runs it:
found in its source by its statements, observed in its frame.

tt-metal's shared Generator keeps the device's async-ahead tokens inline in
decode_forward (no helper to wrap), so the kit reads what the real code did
from the running frame instead of recomputing it:

  plan()      parses the function's source (inspect, ast) and finds the keep
              by its statement: the assignment of the decision name
              (`use_dev`) from a comparison of the device and host position
              names; the `for` over the data-parallel chunks around it; the
              `if` whose body holds them (its test is the gate); the
              statements after the loop and after the `if`. Line numbers come
              from the source the code object was compiled from and are
              checked against the code's own line table. A function that
              calls a keep helper instead (Gemma4) gets a plan with the gate
              only.
  Observer    arms a trace function for one call of that function (only on
              the steps the gate can open: reset_batch or a mode switch),
              snapshots the keep's locals at each line of the loop body,
              closes each chunk at the next pass of the `for` line, reads the
              lists fed on to the trace after the loop, and stops tracing at
              the statement after the `if`. What it saw goes to a callback:
              per chunk the host and device inputs, the decision tensor after
              the prefilled mask, the values fed on, the prefilled set, the
              trace-input list the chunk read; or, when the body never ran,
              the gate's own values.

Nothing here raises into the traced function: a failing snapshot is handed
to `on_error` and observing stops; the function runs on untouched. Another
trace function already set (a debugger, coverage) is left alone and the call
is not observed (the caller counts it).
"""

import ast
import inspect
import sys
import textwrap

# The keep's local names in tt-metal's Generator.decode_forward
# (models/tt_transformers/tt/generator.py at 50868c00); the name table
# (ttaudit_emit.names, "inline") can rename each.
DEFAULT_NAMES = {
    "decision": "use_dev",
    "dev_pos": "dev_pos",
    "host_pos": "host_pos",
    "dev_tok": "dev_toks",
    "host_tok": "tok_chunk",
    "chunk": "i",
    "fed_tok": "new_tokens",
    "fed_pos": "new_start_pos",
    "prefilled": "prefilled",
    "trace_in": "trace_in",
}


class Plan:
    """Where a decode function's keep is. kind "inline" or "helper"."""

    __slots__ = ("kind", "code", "file", "gate_line", "decision_line", "loop_line",
                 "body_lines", "after_loop_line", "after_if_line", "if_lines", "arm_names",
                 "cap_name", "gate_terms", "names", "helper")


class PlanError(Exception):
    pass


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_decision(stmt, names):
    """`names['decision'] = <expr comparing dev_pos with host_pos>`."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    t = stmt.targets[0]
    if not isinstance(t, ast.Name) or t.id != names["decision"]:
        return False
    for c in ast.walk(stmt.value):
        if isinstance(c, ast.Compare) and {names["dev_pos"], names["host_pos"]} <= _names_in(c):
            return True
    return False


def _parents(tree):
    out = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            seq = getattr(node, field, None)
            if isinstance(seq, list):
                for k, child in enumerate(seq):
                    out[child] = (node, seq, k)
    return out


def _next_line(parents, node):
    p = parents.get(node)
    if p is None:
        return None
    _, seq, k = p
    return seq[k + 1].lineno if k + 1 < len(seq) else None


def _span(node):
    return set(range(node.lineno, getattr(node, "end_lineno", node.lineno) + 1))


def _gate(if_node, fn, capability):
    """The gate's terms (the `and` of the if's test), the names a step must
    have true for the gate to open (reset_batch / mode_switched), and the
    local holding the capability (assigned from a call naming it)."""
    test = if_node.test
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    arm = []
    for t in terms:
        if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.Or) and \
                all(isinstance(v, ast.Name) for v in t.values):
            ns = [v.id for v in t.values]
            if "reset_batch" in ns:
                arm = ns
    cap = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.lineno < if_node.lineno:
            if any(isinstance(c, ast.Constant) and c.value == capability
                   for c in ast.walk(node.value)):
                cap = node.targets[0].id
    return terms, arm, cap


def _code_lines(code):
    lines = set()
    for _, _, ln in code.co_lines() if hasattr(code, "co_lines") else ():
        if ln is not None:
            lines.add(ln)
    if not lines:
        import dis
        lines = {ln for _, ln in dis.findlinestarts(code)}
    return lines


def plan(func, names=None, helpers=(), capability="supports_async_decode"):
    """The Plan for `func` (a function), None when it has no keep, PlanError
    when its source cannot be read or does not match its code."""
    names = dict(DEFAULT_NAMES, **(names or {}))
    func = inspect.unwrap(func)
    code = func.__code__
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as e:
        raise PlanError("its source cannot be read (%s)" % e) from None
    src = textwrap.dedent("".join(lines))
    mismatch = "its source (%s) does not match the loaded code" % code.co_filename
    try:
        tree = ast.parse(src)
    except SyntaxError:
        raise PlanError(mismatch + " (no function parses at line %d)" % first) from None
    fn = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef,
                                                                  ast.AsyncFunctionDef)) else None
    if fn is None or fn.name != code.co_name:
        raise PlanError(mismatch + " (no def %s at line %d)" % (code.co_name, first))
    off = first - 1          # ast line n is file line n + off
    parents = _parents(fn)
    kind, anchor = None, None
    for node in ast.walk(fn):
        if isinstance(node, ast.stmt) and _is_decision(node, names):
            kind, anchor = "inline", node
            break
    helper = None
    if anchor is None and helpers:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                f = node.func
                nm = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if nm in helpers:
                    kind, helper = "helper", nm
                    anchor = node
                    break
        if anchor is not None:      # the statement holding the call
            for node in ast.walk(fn):
                if isinstance(node, ast.stmt) and node in parents and anchor in ast.walk(node) \
                        and not isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                    anchor = node
                    break
    if anchor is None:
        return None
    # the enclosing for (the chunks) and if (the gate)
    loop = gate = None
    node = anchor
    while node in parents:
        parent = parents[node][0]
        if loop is None and isinstance(parent, ast.For):
            loop = parent
        if isinstance(parent, ast.If) and gate is None and (loop is not None or kind == "helper"):
            gate = parent
        node = parent
    if gate is None or (kind == "inline" and loop is None):
        raise PlanError("the %s is not inside an if (and a for over the chunks)"
                        % ("comparison" if kind == "inline" else "helper call"))
    p = Plan()
    p.kind = kind
    p.code = code
    p.file = code.co_filename
    p.names = names
    p.helper = helper
    p.gate_line = gate.lineno + off
    p.decision_line = anchor.lineno + off
    p.if_lines = {ln + off for st in gate.body for ln in _span(st)}
    if loop is not None:
        p.loop_line = loop.lineno + off
        p.body_lines = {ln + off for st in loop.body for ln in _span(st)}
        nl = _next_line(parents, loop)
        p.after_loop_line = nl + off if nl is not None else None
    else:
        p.loop_line = p.after_loop_line = None
        p.body_lines = set()
    nl = _next_line(parents, gate)
    p.after_if_line = nl + off if nl is not None else None
    p.gate_terms, p.arm_names, p.cap_name = _gate(gate, fn, capability)
    have = _code_lines(code)
    again = _compiled_lines(fn, off, code)
    if again is not None and again != have:
        raise PlanError(mismatch + " (compiled again, its lines are %d..%d, the loaded code's "
                        "%d..%d)" % (min(again), max(again), min(have), max(have)))
    need = {p.gate_line, p.decision_line} | ({p.loop_line} if p.loop_line else set())
    if not need <= have:
        raise PlanError(mismatch + " (lines %s are not in it)"
                        % ", ".join(str(n) for n in sorted(need - have)))
    return p


def _compiled_lines(fn, off, code):
    """The line numbers of `fn`'s source compiled again at its place (inside
    a class, so that super() compiles as in a method), or None when it does
    not compile on its own; equal to the loaded code's when the source on
    disk is the one that was loaded."""
    import copy
    node = copy.deepcopy(fn)
    ast.increment_lineno(node, off)
    cls = ast.ClassDef(name="_C", bases=[], keywords=[], body=[node], decorator_list=[])
    ast.copy_location(cls, node)
    tree = ast.fix_missing_locations(ast.Module(body=[cls], type_ignores=[]))
    try:
        mod = compile(tree, code.co_filename, "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    for c in mod.co_consts:
        if hasattr(c, "co_consts"):
            for f in c.co_consts:
                if hasattr(f, "co_name") and f.co_name == code.co_name:
                    return _code_lines(f)
    return None


def where(p):
    """`generator.py:1915` for the plan's decision statement."""
    import os
    return "%s:%d" % (os.path.basename(p.file), p.decision_line)


class Chunk:
    """What one pass of the keep's loop body showed."""

    __slots__ = ("index", "host_tok", "host_pos", "dev_tok", "dev_pos", "decision", "prefilled",
                 "prefilled_known", "trace_in", "decided", "fed_tok", "fed_pos")


def _flat(v):
    if v is None:
        return None
    if hasattr(v, "reshape") and hasattr(v, "tolist"):
        return v.reshape(-1).tolist()
    if hasattr(v, "tolist"):
        v = v.tolist()
    return list(v) if isinstance(v, (list, tuple)) else [v]


class Observer:
    """Observes one call of a planned function. start() before the call,
    stop() after it (always). on_done(observer) is called once, from inside
    the traced call, with .chunks (Chunk per pass of the loop, inline plans)
    and .gate (the frame's locals, when the if body never ran); on_error(exc)
    when reading the frame fails.

    Line events cost one set lookup each; the frame's locals are read only
    where a pass of the loop ends (the `for` line again, or the statement
    after the loop), when they still hold that pass's values."""

    def __init__(self, plan_, on_done, on_error):
        self.plan = plan_
        self.on_done = on_done
        self.on_error = on_error
        self.frame = None
        self.active = False
        self.done = False
        self.entered = False        # a line of the if body ran
        self.chunks = []
        self.open = False           # a pass of the loop body is under way
        self.decided = False        # ... and reached the decision statement
        self.gate = None

    def start(self):
        if sys.gettrace() is not None:
            return False
        self.active = True
        sys.settrace(self._global)
        return True

    def stop(self):
        self._quit()
        if self.frame is not None:
            try:
                self.frame.f_trace = None
            except Exception:
                pass
            self.frame = None

    def _global(self, frame, event, arg):
        if event == "call" and self.frame is None and frame.f_code is self.plan.code:
            self.frame = frame
            return self._local
        return None

    def _local(self, frame, event, arg):
        if self.done:
            return None
        try:
            if event == "line":
                self._line(frame, frame.f_lineno)
            elif event == "return":
                self._finish(frame)
        except Exception as e:
            self.done = True
            self._quit()
            self.on_error(e)
            return None
        if self.done:
            self._quit()
            return None
        return self._local

    def _quit(self):
        if self.active:
            self.active = False
            sys.settrace(None)

    def _line(self, frame, ln):
        p = self.plan
        if ln in p.if_lines:
            self.entered = True
        if p.kind == "inline":
            if ln == p.loop_line:
                self._close(frame)
                return
            if ln in p.body_lines:
                self.open = True
                if ln == p.decision_line:
                    self.decided = True
                return
            if ln == p.after_loop_line:
                self._close(frame)
                self._fed(frame)
                return
        if ln == p.after_if_line:
            self._finish(frame)

    def _close(self, frame):
        """The pass just ended: the frame's locals are still that pass's."""
        if not self.open:
            return
        n = self.plan.names
        loc = frame.f_locals
        c = Chunk()
        c.index = loc.get(n["chunk"])
        c.host_tok = _flat(loc.get(n["host_tok"]))
        c.host_pos = _flat(loc.get(n["host_pos"]))
        c.dev_tok = _flat(loc.get(n["dev_tok"]))
        c.dev_pos = _flat(loc.get(n["dev_pos"]))
        c.trace_in = loc.get(n["trace_in"])
        c.decided = self.decided
        c.decision = None
        c.prefilled = None
        c.prefilled_known = False
        if self.decided:
            c.decision = [bool(b) for b in _flat(loc.get(n["decision"]))]
            if n["prefilled"] in loc:
                c.prefilled_known = True
                pre = loc[n["prefilled"]]
                c.prefilled = None if pre is None else {int(s) for s in pre}
        c.fed_tok = c.fed_pos = None
        self.chunks.append(c)
        self.open = self.decided = False

    def _fed(self, frame):
        n = self.plan.names
        loc = frame.f_locals
        toks, poss = loc.get(n["fed_tok"]), loc.get(n["fed_pos"])
        for k, c in enumerate(self.chunks):
            if isinstance(toks, list) and k < len(toks):
                c.fed_tok = _flat(toks[k])
            if isinstance(poss, list) and k < len(poss):
                c.fed_pos = _flat(poss[k])

    def _finish(self, frame):
        if self.done:
            return
        self._close(frame)
        if not self.entered:
            self.gate = dict(frame.f_locals)
        self.done = True
        self.on_done(self)


def gate_values(p, loc, trace_inputs_attr="trace_inputs_decode"):
    """The gate's terms as the frame's values, for a step whose keep did not
    run: {"capability": value or missing, "others": True/False/None}.
    Only names and `self.<trace inputs>[key]` are read (a mapping lookup
    with .get, which a defaultdict does not fill); anything else is
    unknown (None)."""
    cap_missing = _MISSING
    cap = loc.get(p.cap_name, cap_missing) if p.cap_name else cap_missing
    others = True
    for t in p.gate_terms:
        v = _term(t, loc, trace_inputs_attr)
        if isinstance(t, ast.Name) and t.id == p.cap_name:
            continue
        if v is None:
            others = None if others is not False else False
        elif not v:
            others = False
    return {"capability": None if cap is cap_missing else cap,
            "capability_known": cap is not cap_missing, "others": others}


_MISSING = object()


def _term(t, loc, attr):
    """True/False for a term the frame can answer, None for one it cannot."""
    missing = _MISSING
    if isinstance(t, ast.Name):
        v = loc.get(t.id, missing)
        return None if v is missing else bool(v)
    if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.Or):
        vs = [_term(x, loc, attr) for x in t.values]
        if any(v is True for v in vs):
            return True
        return None if any(v is None for v in vs) else False
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and \
            isinstance(t.value.value, ast.Name) and t.value.attr == attr:
        obj = loc.get(t.value.value.id, missing)
        key_node = t.slice.value if hasattr(ast, "Index") and isinstance(t.slice, ast.Index) \
            else t.slice
        key = _value(key_node, loc)
        if obj is missing or key is missing:
            return None
        table = getattr(obj, attr, None)
        try:
            return bool(table.get(key)) if hasattr(table, "get") else None
        except Exception:
            return None
    return None


def _value(node, loc):
    missing = _MISSING
    if isinstance(node, ast.Name):
        return loc.get(node.id, missing)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        vals = [_value(e, loc) for e in node.elts]
        return missing if any(v is missing for v in vals) else tuple(vals)
    return missing
