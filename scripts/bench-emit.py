#!/usr/bin/env python3
"""What the instrumentation costs, per call (run by `make bench`).

The emitter (ttaudit_emit.MergeAudit.merge): off (TTAUDIT_EMIT unset) the
call must return before touching its arguments; the claim is under a
microsecond, and this exits 1 when the best of several timings is not. On:
validating and writing one 8-slot merge event with stamp fields to a file.

The kit (ttaudit_emit.kit): with TTAUDIT_EMIT unset nothing is wrapped, so
the generator runs its own functions (0 by construction). With it on, over
the stand-in of tt-metal's generator (tests/standin, 8 slots, real torch
tensors on the stand-in device; STANDIN_GENERATOR=DIR puts another
DIR/models/tt_transformers/tt/generator.py, tt-metal's own for instance, in
the stand-in's place), against the same code unwrapped, in one run: a
steady decode step (the wrappers, one trace event) and a reset step (the
inline keep observed in its frame, a merge and a trace event), written to a
file.

usage: scripts/bench-emit.py [--calls N]
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "instrument"))
from ttaudit_emit import MergeAudit, Stamp, kit, names  # noqa: E402

LIMIT_US = 1.0

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT_RUN = os.path.join(ROOT, "tools", "instrument", "ttaudit_emit", "run.py")

# One process per mode: the stand-in of tt-metal's generator at 50868c00
# (tests/standin), 8 slots, real torch tensors through the stand-in device;
# a priming decode captures the trace, then steady decode steps (no keep)
# and reset steps (the keep runs and, with the kit, is observed) are timed.
STEPS = textwrap.dedent('''
    import json, os, sys, time
    sys.path.insert(0, os.path.join(%r, "tests", "standin"))
    import paths
    sys.path[:0] = paths.roots()
    from loguru import logger
    logger.remove()
    import torch, ttnn
    from models.tt_transformers.tt.generator import Generator
    from models.tt_transformers.tt.model import ModelArgs, Transformer
    from models.common.sampling import SamplingParams
    mesh = ttnn.MeshDevice()
    args = ModelArgs(mesh, 8, 4096)
    gen = Generator([Transformer(args, mesh)], [args], mesh)
    gen.model_capabilities = {"supports_async_decode": True}
    sp = SamplingParams(temperature=[0.0] * 8, top_k=[1] * 8, top_p=[1.0] * 8)
    tok = torch.tensor([7] * 8, dtype=torch.int32).reshape(8, 1)
    pos = torch.tensor([22, 25, 27, 25, 22, 25, 27, 27], dtype=torch.int32)
    def step(reset):
        gen.decode_forward(tok, pos, sampling_params=sp, reset_batch=reset)
    step(True)
    n = int(sys.argv[1])
    out = {}
    for name, reset in (("steady", False), ("reset", True)):
        best = None
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                step(reset)
            dt = (time.perf_counter() - t0) / n * 1e6
            best = dt if best is None or dt < best else best
        out[name] = best
    out["generator"] = sys.modules[Generator.__module__].__file__
    print(json.dumps(out))
''') % ROOT


def per_call_us(fn, calls):
    best = min(timeit.repeat(fn, number=calls, repeat=7))
    return best / calls * 1e6


def emitter(calls):
    host = [22, 25, 27, 25, 22, 25, 27, 27]
    dev = [29, -1, -1, -1, -1, -1, -1, 28]
    taken = [False] * 7 + [True]
    st = Stamp(8)
    for s in range(8):
        st.start(s, "cmpl-%02x" % s)
    st.capture(40)
    fields = st.fields(8)

    os.environ.pop("TTAUDIT_EMIT", None)
    off = MergeAudit(os.path.join(tempfile.gettempdir(), "bench-emit-off-never-written.jsonl"))

    def call_off():
        off.merge(41, host, dev, reset_batch=True, mode_switched=False, prefilled={3},
                  taken=taken, arm="batch", **fields)

    def call_off_bare():
        off.merge(41, host, dev, reset_batch=True, mode_switched=False)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.jsonl")
        on = MergeAudit(path, enable=True)

        def call_on():
            on.merge(41, host, dev, reset_batch=True, mode_switched=False, prefilled={3},
                     taken=taken, arm="batch", **fields)
        t_off = per_call_us(call_off, calls)
        t_off_bare = per_call_us(call_off_bare, calls)
        t_on = per_call_us(call_on, max(1, calls // 50))
        on.close()
        size = os.path.getsize(path)
        n = on.lines
    print("emit merge, TTAUDIT_EMIT off, 3 positional + 10 keyword args: %.3f us/call" % t_off)
    print("emit merge, TTAUDIT_EMIT off, positions only:                  %.3f us/call" % t_off_bare)
    print("emit merge, TTAUDIT_EMIT=1 to a file, 8 slots with stamps:    %.2f us/call"
          " (%d bytes/line)" % (t_on, size // max(n, 1)))
    return max(t_off, t_off_bare)


def wrappers(calls):
    """The kit over the stand-in generator, on and off, in one run."""
    n = max(50, calls // 1000)
    res = {}
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items()
               if k == "STANDIN_GENERATOR"
               or not k.startswith(("TTAUDIT_", "STANDIN_")) and k != "PYTHONPATH"}
        for mode in ("off", "on"):
            cmd = [sys.executable, "-c", STEPS, str(n)]
            e = dict(env)
            if mode == "on":
                cmd = [sys.executable, KIT_RUN, "--"] + cmd
                e["TTAUDIT_EMIT_SINK"] = "file:" + os.path.join(d, "kit.jsonl")
            p = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
            if p.returncode != 0:
                print("kit bench (%s) failed: %s" % (mode, p.stderr[-500:]))
                return
            res[mode] = json.loads(p.stdout.splitlines()[-1])
        merges = sum(1 for ln in open(os.path.join(d, "kit.jsonl")) if '"merge"' in ln)
    # the file both runs imported, so a STANDIN_GENERATOR that did not take is seen
    gens = {res[m]["generator"] for m in res}
    which = ("the stand-in generator" if not os.environ.get("STANDIN_GENERATOR")
             else "the generator in " + ", ".join(sorted(gens)))
    for name, what in (("steady", "a steady decode step (a trace event)"),
                       ("reset", "a reset step (the keep observed, a merge)")):
        off, on = res["off"][name], res["on"][name]
        print("kit over %s (8 slots, torch), %-43s %7.1f us vs %.1f "
              "unwrapped (+%.1f us, %.2fx)" % (which, what + ":", on, off, on - off, on / off))
    print("kit, TTAUDIT_EMIT unset: nothing is wrapped, the generator's own calls: +0 us "
          "(%d merges written above)" % merges)


def main(argv):
    calls = 200000
    if len(argv) == 3 and argv[1] == "--calls" and argv[2].isdigit() and int(argv[2]) > 0:
        calls = int(argv[2])
    elif len(argv) != 1:
        sys.stderr.write("usage: bench-emit.py [--calls N]\n")
        return 2
    worst = emitter(calls)
    wrappers(calls)
    if worst >= LIMIT_US:
        print("emit merge off: %.3f us/call is not under %.1f us" % (worst, LIMIT_US))
        return 1
    print("emit merge off: under %.1f us/call: ok" % LIMIT_US)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
