"""The stand-in engine core run in this process, without a server (tests
only): runs SCENARIO, then one completion of PROMPT (max_tokens N) if given,
and prints {"scenario": {request id: tokens}, "completion": tokens} as JSON
on its last line.

usage: standin_engine.py SCENARIO [PROMPT N]

The data-parallel rank is the MPI rank when run under tt-run
(OMPI_COMM_WORLD_RANK, PMI_RANK), as the TT plugin's launcher makes it."""

import json
import os
import sys
import zlib

import paths  # noqa: E402  (beside this file: sys.path[0])

for _root in reversed(paths.roots()):
    if _root not in sys.path:
        sys.path.insert(0, _root)


def main(argv):
    from vllm.v1.engine.core import EngineCoreProc

    class Conn:
        def __init__(self, msgs):
            self.msgs = list(msgs) + [("stop",)]
            self.out = []

        def send(self, m):
            self.out.append(m)

        def recv(self):
            return self.msgs.pop(0)

        def close(self):
            pass

    msgs = []
    if len(argv) > 3:
        prompt = [zlib.crc32(w.encode()) % 50021 for w in argv[2].split()] or [1]
        msgs.append(("complete", "kit-1", prompt, int(argv[3])))
    c = Conn(msgs)
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
    EngineCoreProc.run_engine_core(vllm_config={"max_num_seqs": 4, "max_model_len": 4096,
                                                "scenario": os.path.abspath(argv[1])},
                                   conn=c, dp_rank=rank)
    print(json.dumps({"scenario": c.out[0][1],
                      "completion": c.out[1][1] if len(c.out) > 1 else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
