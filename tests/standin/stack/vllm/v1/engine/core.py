"""Stand-in for vllm/v1/engine/core.py (tests only): the engine-core entry
EngineCoreProc.run_engine_core(*args, dp_rank=0, local_dp_rank=0, **kwargs)
with the signature it has on tenstorrent/vllm branches main and dev
(b4dd0fa695bfe85a1f83068bb30dae4220e8334a). vLLM starts it in its own
process, named by vllm/v1/engine/utils.py: `EngineCore_DP{n}` with data
parallelism and `EngineCore` without on main, always `EngineCore_DP{n}` on
dev (the stand-in server picks with STANDIN_VLLM).

The loop is ours, with the TT plugin's scheduling policy
(vllm_tt_plugin/scheduler.py: TTScheduler never mixes prefill and decode;
it prefers a prefill whenever requests wait and rows are free, else decodes
every running request): requests arrive at ticks, a request leaves when it
has max_tokens tokens, and vLLM's engine id is "<external id>-<8 hex>"
(vLLM PR #27987)."""

import json
import os
import zlib

import ttnn
from vllm_tt_plugin.model_runner import CachedRequestState, SchedulerOutput, TTModelRunner


def request_id(external):
    return "%s-%08x" % (external, zlib.crc32(external.encode()))


def prompt_tokens(seed, n):
    return [(seed * 131 + i * 7 + 1) % 50021 for i in range(n)]


def load_model(max_num_seqs, max_model_len):
    """The model adapter in this process (STANDIN_MODEL: llama (default), gemma4)."""
    dp = int(os.environ.get("STANDIN_DP", "1"))
    if os.environ.get("STANDIN_MODEL") == "gemma4":
        from models.demos.gemma4.tt.generator_vllm import Gemma4ForCausalLM as cls
    else:
        from models.tt_transformers.tt.generator_vllm import LlamaForCausalLM as cls
    return cls.initialize_vllm_model(None, ttnn.MeshDevice(), max_num_seqs, max_model_len,
                                     tt_data_parallel=dp)


class Engine:
    def __init__(self, max_num_seqs, max_model_len):
        self.runner = TTModelRunner(load_model(max_num_seqs, max_model_len), max_num_seqs,
                                    max_model_len)
        self.max = max_num_seqs
        self.tick = 0
        self.waiting = []
        self.running = []
        self.finished = set()
        self.max_tokens = {}
        self.done = {}

    def add(self, req_id, prompt, max_tokens):
        self.waiting.append(CachedRequestState(req_id, list(prompt)))
        self.max_tokens[req_id] = max_tokens

    def step(self):
        free = self.max - len(self.running)
        if self.waiting and free > 0:
            new, self.waiting = self.waiting[:free], self.waiting[free:]
            so = SchedulerOutput(new, [], self.finished)
            self.running += [s.req_id for s in new]
        elif self.running:
            so = SchedulerOutput([], list(self.running), self.finished)
        else:
            self.tick += 1
            return
        self.finished = set()
        got = self.runner.execute_model(so)
        self.tick += 1
        for req_id in got:
            state = self.runner.requests[req_id]
            if len(state.output_token_ids) >= self.max_tokens[req_id]:
                self.running.remove(req_id)
                self.finished.add(req_id)
                self.done[req_id] = list(state.output_token_ids)

    def idle(self):
        return not self.waiting and not self.running

    def run(self, scenario):
        todo = sorted(scenario, key=lambda q: q["arrive"])
        while todo or not self.idle():
            while todo and todo[0]["arrive"] <= self.tick:
                q = todo.pop(0)
                self.add(request_id(q["id"]), prompt_tokens(q.get("seed", 1), q["prompt_len"]),
                         q["max_tokens"])
            self.step()

    def complete(self, external, prompt, max_tokens):
        rid = request_id(external)
        self.add(rid, prompt, max_tokens)
        while rid not in self.done:
            self.step()
        return self.done.pop(rid)


class EngineCoreProc:
    @staticmethod
    def run_engine_core(*args, dp_rank: int = 0, local_dp_rank: int = 0, **kwargs):
        """`vllm_config` (here a dict: max_num_seqs, max_model_len, scenario)
        and `conn`, the pipe to the API server."""
        cfg = kwargs["vllm_config"]
        conn = kwargs["conn"]
        engine = Engine(cfg["max_num_seqs"], cfg["max_model_len"])
        outputs = {}
        if cfg.get("scenario"):
            with open(cfg["scenario"], encoding="utf-8") as f:
                engine.run(json.load(f))
            outputs = dict(engine.done)
            engine.done.clear()
        conn.send(("ready", outputs))
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            _, external, prompt, max_tokens = msg
            conn.send(("done", engine.complete(external, prompt, max_tokens)))
        conn.close()
