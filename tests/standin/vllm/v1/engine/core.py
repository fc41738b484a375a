"""Stand-in for vllm/v1/engine/core.py (tests only): the engine-core entry
that vLLM starts in its own process (EngineCore_DP<n>, a multiprocessing
spawn child here), with the real signature. Its loop is ours: it runs the
scenario the server was given (STANDIN_SCENARIO semantics: requests with an
arrival tick, a prompt length and an output length), then serves requests
one at a time from its pipe.

The scheduler, as the TT plugin's: a step is a prefill of every waiting
request that has a free row, or else a decode of the whole batch; a request
that has all its tokens leaves the batch before the next step."""

import json
import os
import zlib

import ttnn
from vllm_tt_plugin.model_runner import Request, TTModelRunner


def request_id(external):
    """vLLM's engine id: the external id and 8 hex digits."""
    return "%s-%08x" % (external, zlib.crc32(external.encode()))


def prompt_tokens(seed, n):
    return [(seed * 131 + i * 7 + 1) % 50021 for i in range(n)]


class Engine:
    def __init__(self, runner, max_num_seqs):
        self.runner = runner
        self.max = max_num_seqs
        self.tick = 0
        self.waiting = []
        self.done = {}

    def step(self):
        ib = self.runner.input_batch
        free = self.max - ib.num_reqs
        if self.waiting and free > 0:
            rows = [self.runner.add_request(r) for r in self.waiting[:free]]
            self.waiting = self.waiting[free:]
            self.runner.prefill(rows)
        elif ib.num_reqs:
            self.runner.decode()
        self.tick += 1
        for rid in ib.req_ids:
            r = self.runner.requests[rid]
            if len(r.output) >= r.max_tokens:
                self.done[rid] = self.runner.finish(rid)

    def run(self, scenario):
        todo = sorted(scenario, key=lambda q: q["arrive"])
        while todo or self.waiting or self.runner.input_batch.num_reqs:
            while todo and todo[0]["arrive"] <= self.tick:
                q = todo.pop(0)
                self.waiting.append(Request(request_id(q["id"]),
                                            prompt_tokens(q.get("seed", 1), q["prompt_len"]),
                                            q["max_tokens"]))
            self.step()

    def complete(self, external, prompt, max_tokens):
        rid = request_id(external)
        self.waiting.append(Request(rid, prompt, max_tokens))
        while rid not in self.done:
            self.step()
        return self.done.pop(rid).output


class EngineCoreProc:
    @staticmethod
    def run_engine_core(*args, dp_rank: int = 0, local_dp_rank: int = 0, **kwargs):
        """Runs the engine core: `vllm_config` (a dict here: max_num_seqs,
        max_model_len, scenario) and `conn`, the pipe to the API server.
        STANDIN_DP=n splits the generator's batch into n data-parallel chunks."""
        # the model is loaded in the engine core, never in the API server
        from models.tt_transformers.tt.generator_vllm import Qwen36ForCausalLM
        cfg = kwargs["vllm_config"]
        conn = kwargs["conn"]
        mesh = ttnn.MeshDevice()
        model = Qwen36ForCausalLM.initialize_vllm_model(
            None, mesh, cfg["max_num_seqs"], cfg["max_model_len"],
            tt_data_parallel=int(os.environ.get("STANDIN_DP", "1")))
        engine = Engine(TTModelRunner(model, cfg["max_num_seqs"]), cfg["max_num_seqs"])
        outputs = {}
        if cfg.get("scenario"):
            with open(cfg["scenario"], encoding="utf-8") as f:
                engine.run(json.load(f))
            outputs = {rid: r.output for rid, r in engine.done.items()}
            engine.done.clear()
        conn.send(("ready", outputs))
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            _, external, prompt, max_tokens = msg
            conn.send(("done", engine.complete(external, prompt, max_tokens)))
        conn.close()
