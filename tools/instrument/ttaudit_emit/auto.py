"""ttaudit_emit.auto - what the sitecustomize calls: start the kit in this
process when TTAUDIT_EMIT=1, and never let anything stop the interpreter."""

import os


def install_from_env():
    """Starts the kit (ttaudit_emit.kit.install) when TTAUDIT_EMIT is "1";
    returns the Kit or None. Any failure is reported on stderr and swallowed."""
    if os.environ.get("TTAUDIT_EMIT") != "1":
        return None
    try:
        from . import kit
        return kit.install()
    except Exception as e:          # the server must start whatever happens here
        try:
            import sys
            sys.stderr.write("ttaudit_emit: instrumentation not started: %s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass
        return None
