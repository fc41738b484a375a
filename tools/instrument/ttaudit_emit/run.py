"""ttaudit_emit.run - run a command with the instrumentation on, in every
Python process it starts:

    python3 -m ttaudit_emit.run [--config FILE] [--sink SINK] -- CMD [ARGS...]
    python3 /path/to/ttaudit_emit/run.py ...            (the same, by path)
    python3 -m ttaudit_emit.run --names                 (print the name table)
    python3 -m ttaudit_emit.run --check [--config FILE] (check the table's config)

It puts the kit's sitecustomize (ttaudit_emit/boot) and the kit itself first
on PYTHONPATH, sets TTAUDIT_EMIT=1 (and TTAUDIT_EMIT_CONFIG,
TTAUDIT_EMIT_SINK when given) and execs CMD, which keeps the pid: under
`ttaudit capture -- python3 -m ttaudit_emit.run -- vllm serve ...` the
server is the process the capture started. Every Python process that
inherits the environment (vLLM's engine cores, fork or spawn, tt-run ranks
when the variables are passed through) starts the kit at interpreter
start-up. A Python started with -I or -E ignores PYTHONPATH and is not
instrumented.

SINK: auto (default: the generator module's own logger, loguru on the real
stack), stderr, loguru, logging:NAME, or a file path (plain JSONL).
Exit status: CMD's own; 2 for bad usage or a command that cannot be run.
"""

import os
import sys

USAGE = ("usage: python3 -m ttaudit_emit.run [--config FILE] [--sink SINK] -- CMD [ARGS...]\n"
         "       python3 -m ttaudit_emit.run --names | --check [--config FILE]\n")


def _paths():
    pkg = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(pkg, "boot"), os.path.dirname(pkg)


def environment(env, config=None, sink=None):
    """The environment CMD gets: a copy of env with the kit on PYTHONPATH and on."""
    boot, parent = _paths()
    out = dict(env)
    have = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]
    out["PYTHONPATH"] = os.pathsep.join([boot, parent] + [p for p in have
                                                           if p not in (boot, parent)])
    out["TTAUDIT_EMIT"] = "1"
    if config is not None:
        out["TTAUDIT_EMIT_CONFIG"] = os.path.abspath(config)
    if sink is not None:
        out["TTAUDIT_EMIT_SINK"] = sink
    return out


def main(argv):
    config = sink = None
    i = 1
    names_only = check = False
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a == "--names":
            names_only = True
        elif a == "--check":
            check = True
        elif a in ("--config", "--sink"):
            if i + 1 >= len(argv):
                sys.stderr.write("ttaudit_emit.run: %s needs a value\n%s" % (a, USAGE))
                return 2
            if a == "--config":
                config = argv[i + 1]
            else:
                sink = argv[i + 1]
            i += 1
        elif a.startswith("-"):
            sys.stderr.write("ttaudit_emit.run: unknown option %r\n%s" % (a, USAGE))
            return 2
        else:
            break
        i += 1
    if names_only or check:
        from ttaudit_emit import kit, names
        try:
            table = names.load(config) if config else names.build()
        except (names.ConfigError, OSError) as e:
            sys.stderr.write("ttaudit_emit.run: %s\n" % e)
            return 2
        if names_only:
            sys.stdout.write(kit.describe(table) + "\n")
        else:
            sys.stdout.write("%s: %d target(s), ok\n" % (config or "built-in table",
                                                         len(table["targets"])))
        return 0
    cmd = argv[i:]
    if not cmd:
        sys.stderr.write("ttaudit_emit.run: no command to run\n%s" % USAGE)
        return 2
    if config is not None:
        from ttaudit_emit import names
        try:
            names.load(config)
        except (names.ConfigError, OSError) as e:
            sys.stderr.write("ttaudit_emit.run: %s\n" % e)
            return 2
    env = environment(os.environ, config, sink)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        sys.stderr.write("ttaudit_emit.run: %r cannot be run: %s\n" % (cmd[0], e.strerror))
        return 2


if __name__ == "__main__":
    if __package__ in (None, ""):        # run by path: make the package importable
        sys.path.insert(0, _paths()[1])
    sys.exit(main(sys.argv))
