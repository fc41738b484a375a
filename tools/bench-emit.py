#!/usr/bin/env python3
"""What the instrumentation costs, per call (run by `make bench`).

The emitter (ttaudit_emit.MergeAudit.merge): off (TTAUDIT_EMIT unset) the
call must return before touching its arguments; the claim is under a
microsecond, and this exits 1 when the best of several timings is not. On:
validating and writing one 8-slot merge event with stamp fields to a file.

The kit (ttaudit_emit.kit): with TTAUDIT_EMIT unset nothing is wrapped, so
the generator runs its own functions (0 by construction). With it on, the
wrappers' cost on a generator of the real shape (decode_forward calling
_decode_forward_trace_text and, on reset steps, the keep's helper, 8 slots,
lists for tensors), against the same module unwrapped, in one run:
a steady decode step (a trace event) and a reset step (a merge and a trace
event), written to a file.

usage: tools/bench-emit.py [--calls N]
"""
import os
import sys
import tempfile
import textwrap
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "instrument"))
from ttaudit_emit import MergeAudit, Stamp, kit, names  # noqa: E402

LIMIT_US = 1.0

GENERATOR = textwrap.dedent('''
    def merge_async_ahead_decode_tokens(host_toks, host_pos, dev_toks_full, dev_pos_full,
                                        slot_remap_local=None, prefilled_local=None):
        h = len(host_pos)
        dt, dp = dev_toks_full[:h], dev_pos_full[:h]
        use = [dp[s] == host_pos[s] or dp[s] == host_pos[s] + 1 for s in range(h)]
        for s in prefilled_local or ():
            use[s] = False
        return ([dt[s] if use[s] else host_toks[s] for s in range(h)],
                [dp[s] if use[s] else host_pos[s] for s in range(h)], "merged")


    class Generator:
        def __init__(self):
            self.mode = "DECODE"
            self.data_parallel = 1
            self.model_capabilities = {"supports_async_decode": True}
            self._slots_prefilled_since_decode = set()
            self.dev_tok = [5] * 8
            self.dev_pos = [29, -1, -1, -1, -1, -1, -1, 28]
            self.trace_inputs_decode = {(True, 8): [[self.dev_tok, self.dev_pos]]}

        def decode_forward(self, tokens, start_pos, page_table=None, kv_cache=None,
                           enable_trace=True, read_from_device=True, sampling_params=None,
                           reset_batch=False, slot_remap=None, defer_device_sampling=False):
            if reset_batch:
                tokens, start_pos, _ = merge_async_ahead_decode_tokens(
                    tokens, start_pos, self.dev_tok, self.dev_pos,
                    prefilled_local=self._slots_prefilled_since_decode or None)
            self._slots_prefilled_since_decode = set()
            return self._decode_forward_trace_text([tokens], [start_pos],
                                                   on_device_sampling=sampling_params is not None,
                                                   reset_batch=reset_batch)

        def _decode_forward_trace_text(self, tokens, current_pos, page_table=None,
                                       kv_cache=None, on_device_sampling=False,
                                       reset_batch=False):
            return tokens[0]
''')


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
    with tempfile.TemporaryDirectory() as d:
        for pkg in ("benchgen", "benchplain"):
            os.makedirs(os.path.join(d, pkg))
            for f, text in (("__init__.py", ""), ("generator.py", GENERATOR)):
                with open(os.path.join(d, pkg, f), "w") as fh:
                    fh.write(text)
        sys.path.insert(0, d)
        mod = "benchgen.generator"
        table = names.build({
            "targets": {"decode": {"module": mod, "name": "Generator.decode_forward"},
                        "trace": {"module": mod, "name": "Generator._decode_forward_trace_text"},
                        "keep": {"module": mod, "name": "merge_async_ahead_decode_tokens"},
                        "prefill": [], "batch": [], "prefill_batch": [], "engine": []},
            "trigger": [mod]})
        audit = os.path.join(d, "kit.jsonl")
        k = kit.Kit(table, {"TTAUDIT_EMIT_SINK": "file:" + audit})
        import io
        saved, sys.stderr = sys.stderr, io.StringIO()     # the banners of a file sink
        try:
            k.start()
            import benchgen.generator as wrapped
        finally:
            sys.stderr = saved
        import benchplain.generator as plain
        assert hasattr(wrapped.Generator.decode_forward, "__ttaudit_wrapped__")
        tok = [7] * 8
        pos = [22, 25, 27, 25, 22, 25, 27, 27]
        sp = object()
        gp, gw = plain.Generator(), wrapped.Generator()
        res = {}
        for name, reset in (("steady", False), ("reset", True)):
            res[name] = (
                per_call_us(lambda: gp.decode_forward(tok, pos, sampling_params=sp,
                                                      reset_batch=reset), calls // 10),
                per_call_us(lambda: gw.decode_forward(tok, pos, sampling_params=sp,
                                                      reset_batch=reset), calls // 100))
        sys.meta_path.remove(k.watcher)
        sys.path.remove(d)
        merges = k.counts["merge"]
    for name, what in (("steady", "a decode step, one trace event"),
                       ("reset", "a reset step, one merge and one trace event")):
        p, w = res[name]
        print("kit, TTAUDIT_EMIT=1 to a file, %-43s %6.2f us/call vs %.2f unwrapped "
              "(+%.2f us)" % (what + ":", w, p, w - p))
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
