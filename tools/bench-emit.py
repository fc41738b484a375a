#!/usr/bin/env python3
"""Per-call cost of tools/instrument/ttaudit_emit.py's MergeAudit.merge().

Off (TTAUDIT_EMIT unset): the call must return before touching its
arguments; the claim is under a microsecond, and this exits 1 when the best
of several timings is not. On: the cost of validating and writing one
8-slot merge event with stamp fields to a plain JSONL file, for reference.

usage: tools/bench-emit.py [--calls N]     (run by `make bench`)
"""
import os
import sys
import tempfile
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "instrument"))
from ttaudit_emit import MergeAudit, Stamp  # noqa: E402

LIMIT_US = 1.0


def per_call_us(fn, calls):
    best = min(timeit.repeat(fn, number=calls, repeat=7))
    return best / calls * 1e6


def main(argv):
    calls = 200000
    if len(argv) == 3 and argv[1] == "--calls" and argv[2].isdigit() and int(argv[2]) > 0:
        calls = int(argv[2])
    elif len(argv) != 1:
        sys.stderr.write("usage: bench-emit.py [--calls N]\n")
        return 2
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
    worst = max(t_off, t_off_bare)
    if worst >= LIMIT_US:
        print("emit merge off: %.3f us/call is not under %.1f us" % (worst, LIMIT_US))
        return 1
    print("emit merge off: under %.1f us/call: ok" % LIMIT_US)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
