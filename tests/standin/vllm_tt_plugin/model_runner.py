"""Stand-in for vllm_tt_plugin/model_runner.py: TTModelRunner builds the
model inputs as the real runner does (decode positions are num_tokens - 1,
the batch is padded with position -1, reset_batch says the layout changed
since the last decode, the slot remap of the condense goes along) and
submits prefills (submit_prefill) and decodes (through the controller).

The batch is padded to the nearest of STANDIN_BUCKETS (default "1,2,4"),
and the trace inputs are keyed by that width: buffers of one width outlive
the steps run at another, which is how they go stale."""

import os
from dataclasses import dataclass

from models.tt_transformers.tt.common import Vec
from vllm_tt_plugin.async_decode import TTAsyncDecodeController
from vllm_tt_plugin.input_batch import InputBatch


@dataclass(frozen=True)
class TTSamplingParams:
    temperature: float = 0.0
    top_k: int = 1
    top_p: float = 1.0


@dataclass
class TTModelInput:
    input_tokens: Vec
    input_positions: Vec
    prompt_lens: list
    unpadded_batch_size: int
    perform_device_sampling: bool
    tt_sampling_params: TTSamplingParams
    reset_batch: bool = False
    slot_remap: Vec = None


class Request:
    def __init__(self, req_id, prompt, max_tokens):
        self.req_id = req_id
        self.prompt = list(prompt)
        self.max_tokens = max_tokens
        self.output = []

    @property
    def num_tokens(self):
        return len(self.prompt) + len(self.output)

    def last_token(self):
        return self.output[-1] if self.output else self.prompt[-1]


class TTModelRunner:
    def __init__(self, model, max_num_seqs=4):
        self.model = model
        self.input_batch = InputBatch(max_num_seqs)
        self.requests = {}
        self.async_decode = TTAsyncDecodeController(self)
        self._decode_layout_changed_since_last_decode = True
        self.buckets = sorted(int(b) for b in os.environ.get("STANDIN_BUCKETS", "1,2,4").split(","))

    def _width(self, n):
        for b in self.buckets:
            if b >= n:
                return b
        return self.buckets[-1]

    def add_request(self, req):
        self.requests[req.req_id] = req
        return self.input_batch.add_request(req.req_id)

    def finish(self, req_id):
        self.input_batch.remove_request(req_id)
        self._decode_layout_changed_since_last_decode = True
        return self.requests.pop(req_id)

    def submit_prefill(self, model_input, batch_size_per_dp):
        kwargs = {
            "tokens": model_input.input_tokens,
            "page_table": None,
            "kv_cache": None,
            "enable_trace": True,
            "prompt_lens": model_input.prompt_lens,
            "start_pos": None,
            "empty_slots": model_input.empty_slots,
        }
        self.model._standin_rows = self.input_batch.req_ids
        return self.model.prefill_forward(**kwargs)

    def prefill(self, rows):
        """Prefill the requests in `rows`; returns their first tokens."""
        ids = self.input_batch.req_ids
        reqs = [self.requests[ids[r]] for r in rows]
        mi = TTModelInput(input_tokens=[r.prompt for r in reqs], input_positions=None,
                          prompt_lens=[len(r.prompt) for r in reqs],
                          unpadded_batch_size=len(reqs), perform_device_sampling=True,
                          tt_sampling_params=TTSamplingParams())
        mi.empty_slots = list(rows)
        out = self.submit_prefill(mi, [len(reqs)]).tolist()
        self._decode_layout_changed_since_last_decode = True
        for r, t in zip(reqs, out):
            r.output.append(int(t))
        return out

    def decode(self):
        """One decode step over the batch; returns {req_id: token}."""
        ids = self.input_batch.req_ids
        n = len(ids)
        width = self._width(n)
        reqs = [self.requests[i] for i in ids]
        toks = [r.last_token() for r in reqs] + [0] * (width - n)
        pos = [r.num_tokens - 1 for r in reqs] + [-1] * (width - n)
        reset = self._decode_layout_changed_since_last_decode
        self._decode_layout_changed_since_last_decode = False
        remap = self.input_batch.pop_slot_remap()
        mi = TTModelInput(input_tokens=Vec(toks), input_positions=Vec(pos), prompt_lens=None,
                          unpadded_batch_size=n, perform_device_sampling=True,
                          tt_sampling_params=TTSamplingParams(), reset_batch=reset,
                          slot_remap=Vec(remap.tolist()[:width]))
        out = self.async_decode.submit_decode(mi, read_from_device=True).tolist()
        got = {}
        for i, r in enumerate(reqs):
            r.output.append(int(out[i]))
            got[r.req_id] = int(out[i])
        return got
