"""The kit's sitecustomize: on PYTHONPATH (ttaudit_emit.run puts it there),
Python's site module imports it at start-up in every process, spawned
multiprocessing children included, as OpenTelemetry's and ddtrace's
auto-instrumentation do. With TTAUDIT_EMIT=1 it starts the instrumentation
(ttaudit_emit.auto); otherwise it costs one environment lookup. Then it runs
the sitecustomize this one shadows, if there is one (Debian ships one)."""


def _ttaudit_start():
    import os
    import sys

    def _ttaudit_say(what, e):
        try:
            sys.stderr.write("ttaudit_emit: %s: %s: %s\n" % (what, type(e).__name__, e))
        except Exception:
            pass
    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("TTAUDIT_EMIT") == "1":
        pkg_parent = os.path.dirname(os.path.dirname(here))
        if pkg_parent not in sys.path:
            sys.path.append(pkg_parent)
        try:
            from ttaudit_emit import auto
            auto.install_from_env()
        except Exception as e:
            _ttaudit_say("instrumentation not started", e)
    # the next sitecustomize on the path, as if this one were not there
    try:
        import importlib
        me = sys.modules.get(__name__)
        saved = list(sys.path)
        sys.path[:] = [p for p in sys.path
                       if os.path.abspath(p or os.curdir) != here]
        try:
            del sys.modules[__name__]
            importlib.import_module("sitecustomize")
        except ImportError:
            pass
        finally:
            sys.path[:] = saved
            if me is not None:
                sys.modules[__name__] = me
    except Exception as e:
        _ttaudit_say("the shadowed sitecustomize failed", e)


_ttaudit_start()
del _ttaudit_start
