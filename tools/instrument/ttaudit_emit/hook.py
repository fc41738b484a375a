"""ttaudit_emit.hook - run a callback when a module is imported, and wrap a
function in it by name. What wrapt's post-import hooks do, in the standard
library: a finder first on sys.meta_path asks the other finders for the spec
of a watched module and gives the import a loader that runs the real one,
then the callback. The module's __loader__ and __spec__.loader are set back
to the real loader before the module runs, so nothing in it (resources,
source lookups, reloads) ever sees ours.

Nothing here raises into an import: a callback that fails is handed to
`on_error` and the import goes on.
"""

import functools
import importlib.abc
import inspect
import sys
import threading

WRAPPED_ATTR = "__ttaudit_wrapped__"


class _Loader(importlib.abc.Loader):
    def __init__(self, real, finder, name):
        self._real = real
        self._finder = finder
        self._name = name

    def create_module(self, spec):
        create = getattr(self._real, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._real
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._real
        self._real.exec_module(module)
        self._finder.imported(self._name, module)

    def __getattr__(self, name):          # anything else the import system asks
        return getattr(self._real, name)


class ImportWatcher(importlib.abc.MetaPathFinder):
    """Calls callback(module) once for each watched module, when its import
    has run it (or at watch() time for one already imported)."""

    def __init__(self, callback, on_error):
        self._callback = callback
        self._on_error = on_error
        self._watch = set()
        self._done = set()
        self._busy = threading.local()
        self._lock = threading.Lock()

    def watch(self, names):
        with self._lock:
            self._watch.update(names)
        for n in list(names):
            m = sys.modules.get(n)
            if m is not None:
                self.imported(n, m)

    def install(self):
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def find_spec(self, fullname, path, target=None):
        if fullname not in self._watch or fullname in self._done:
            return None
        busy = getattr(self._busy, "names", None)
        if busy is None:
            busy = self._busy.names = set()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                fs = getattr(finder, "find_spec", None)
                if fs is None:
                    continue
                spec = fs(fullname, path, target)
                if spec is not None:
                    break
        except Exception as e:       # a finder that fails: let the import find it itself
            self._on_error("finding %s" % fullname, e)
            return None
        finally:
            busy.discard(fullname)
        if spec is None:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            self._on_error("hooking %s" % fullname,
                           TypeError("its loader %r cannot be hooked" % (spec.loader,)))
            return None
        spec.loader = _Loader(spec.loader, self, fullname)
        return spec

    def imported(self, name, module):
        with self._lock:
            if name in self._done:
                return
            self._done.add(name)
        try:
            self._callback(module)
        except Exception as e:
            self._on_error("instrumenting %s" % name, e)


def resolve(module, qualname):
    """(owner, attribute name, raw attribute) for `qualname` in `module`,
    looking through classes without running descriptors; raises LookupError
    saying which part is missing."""
    owner = module
    parts = qualname.split(".")
    for i, p in enumerate(parts):
        d = getattr(owner, "__dict__", {})
        if p in d:
            raw = d[p]
        elif isinstance(owner, type) and hasattr(owner, p):
            raw = inspect.getattr_static(owner, p)
        else:
            where = ".".join(parts[:i]) or module.__name__
            raise LookupError("%s has no %s" % (where, p))
        if i == len(parts) - 1:
            return owner, p, raw
        owner = raw
    raise LookupError("empty name")


def function_of(raw):
    """(the plain function, kind) of a raw attribute: kind is "function",
    "staticmethod", "classmethod" or "callable"; None when it is not callable."""
    if isinstance(raw, staticmethod):
        return raw.__func__, "staticmethod"
    if isinstance(raw, classmethod):
        return raw.__func__, "classmethod"
    if inspect.isfunction(raw):
        return raw, "function"
    if callable(raw):
        return raw, "callable"
    return None, None


class ArgGetter:
    """Reads one argument of a call by name: from its position when it was
    passed positionally, else from the keywords (the first of `names`
    present), else the default."""

    __slots__ = ("index", "names", "default")

    def __init__(self, index, names, default):
        self.index = index
        self.names = tuple(names) if isinstance(names, (list, tuple)) else (names,)
        self.default = default

    @property
    def name(self):
        return self.names[0] if self.names else ""

    def __call__(self, args, kwargs):
        i = self.index
        if i is not None and i < len(args):
            return args[i]
        for n in self.names:
            if n in kwargs:
                return kwargs[n]
        return self.default


def getters(func, mapping):
    """{value: ArgGetter} for mapping {value: parameter name, list of names
    tried in order, or None}, and the list of values whose parameter
    `func`'s signature lacks. A None name maps to a getter that always gives
    None."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None
    out, missing = {}, []
    if sig is None:
        for v, name in mapping.items():
            out[v] = ArgGetter(None, name or "", None)
        return out, missing
    params = list(sig.parameters.values())
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    pos = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for v, name in mapping.items():
        if name is None:
            out[v] = ArgGetter(None, "", None)
            continue
        names = list(name) if isinstance(name, (list, tuple)) else [name]
        found = next((n for n in names if n in sig.parameters), None)
        if found is None:
            out[v] = ArgGetter(None, names, None)
            if not var_kw:
                missing.append(v)
            continue
        p = sig.parameters[found]
        default = None if p.default is p.empty else p.default
        out[v] = ArgGetter(pos.index(found) if found in pos else None, [found], default)
    return out, missing


def install_wrapper(owner, attr, raw, make):
    """Puts make(function) in place of owner.attr, keeping its kind
    (staticmethod, classmethod); returns the wrapper, or None when owner.attr
    is already a wrapper of ours."""
    func, kind = function_of(raw)
    if func is None:
        raise TypeError("%s is a %s, not a function" % (attr, type(raw).__name__))
    if getattr(func, WRAPPED_ATTR, None) is not None:
        return None
    w = make(func)
    try:
        functools.update_wrapper(w, func)
    except (AttributeError, TypeError):
        pass
    setattr(w, WRAPPED_ATTR, func)
    if kind == "staticmethod":
        setattr(owner, attr, staticmethod(w))
    elif kind == "classmethod":
        setattr(owner, attr, classmethod(w))
    else:
        setattr(owner, attr, w)
    return w
