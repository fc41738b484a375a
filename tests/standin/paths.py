"""Where the stand-in's modules are (tests only): the stack around the
generator (stack/) and one tree per generator revision
(generator-<commit>/), all namespace packages under `models`, so a
revision's models/tt_transformers/tt/generator.py joins the stack's
models.tt_transformers.tt package. STANDIN_GENERATOR names the revision
(50868c00 by default, e749a1e5) or an absolute directory holding a
models/tt_transformers/tt/generator.py (the real file, for a run by hand)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
STACK = os.path.join(HERE, "stack")
REVISIONS = ("50868c00", "e749a1e5")


def generator_root(env=None):
    rev = (os.environ if env is None else env).get("STANDIN_GENERATOR", "50868c00")
    if os.path.isabs(rev):
        return rev
    if rev not in REVISIONS:
        raise SystemExit("STANDIN_GENERATOR=%r: want one of %s or a directory"
                         % (rev, ", ".join(REVISIONS)))
    return os.path.join(HERE, "generator-" + rev)


def roots(env=None):
    """The sys.path entries, first first."""
    return [generator_root(env), STACK]


def pythonpath(env=None, rest=""):
    return os.pathsep.join(roots(env) + ([rest] if rest else []))
