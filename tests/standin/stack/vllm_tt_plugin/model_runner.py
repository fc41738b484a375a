"""Stand-in for vllm_tt_plugin/model_runner.py at tenstorrent/vllm dev
b4dd0fa695bfe85a1f83068bb30dae4220e8334a (tests only): TTModelRunner's
step, as upstream does it, with what reaches the generator unchanged.

  - _update_states: finished requests leave the persistent batch; so do the
    running requests this step does not schedule ("removed ... but keep
    their cached states"); new and re-scheduled requests fill the smallest
    empty rows first, else append; holes left are condensed; any of these
    marks the decode layout changed (sticky until the next decode);
  - _prepare_model_inputs: a prefill gives every row's tokens, positions =
    num_computed_tokens, prompt_lens = num_tokens, reset_batch False; a
    decode gives the last token of each row at position num_tokens - 1,
    padded to max_num_reqs with token 0 and position -1, reset_batch = the
    layout-changed flag (then cleared), and the slot remap popped from the
    batch;
  - submit_prefill(model_input, batch_size_per_dp) calls
    self.model.prefill_forward(tokens=..., page_table=..., kv_cache=...,
    enable_trace=self.trace_mode in ["all"], prompt_lens=...,
    start_pos=..., sampling_params=...), adding empty_slots only with more
    than one data-parallel rank.

Ours: the scheduler's output is reduced to the new requests, the running
requests scheduled and the finished ones; blocks are handed out here (32
tokens each) instead of by vLLM's KV manager; every step is synchronous.
The account the tests compare against (standin_truth) is written here."""

from dataclasses import dataclass, field

import torch

import ttnn
from standin_truth import TRUTH
from vllm_tt_plugin.async_decode import TTAsyncDecodeController
from vllm_tt_plugin.input_batch import InputBatch

BLOCK_SIZE = 32


@dataclass(frozen=True)
class TTSamplingParams:
    temperature: list
    top_k: list
    top_p: list
    presence_penalty: list
    frequency_penalty: list
    repetition_penalty: list
    seed: list
    num_logprobs: list
    enable_log_probs: list


@dataclass
class TTModelInput:
    input_tokens: torch.Tensor
    input_positions: torch.Tensor
    prompt_lens: object
    block_tables: torch.Tensor
    unpadded_batch_size: int
    tt_sampling_params: TTSamplingParams
    perform_device_sampling: bool
    reset_batch: bool = False
    slot_remap: torch.Tensor = None
    block_tables_per_layer: object = None
    multi_modal_kwargs: dict = field(default_factory=dict)
    prompt_tokens: object = None
    output_tokens: object = None


@dataclass
class CachedRequestState:
    req_id: str
    prompt_token_ids: list
    output_token_ids: list = field(default_factory=list)
    num_computed_tokens: int = 0
    block_ids: list = field(default_factory=list)

    @property
    def num_tokens(self):
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    def token_ids(self):
        return self.prompt_token_ids + self.output_token_ids


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list          # CachedRequestState of requests new to the runner
    scheduled_running: list           # ids of running requests scheduled this step
    finished_req_ids: set


class TTModelRunner:
    def __init__(self, model, max_num_seqs, max_model_len):
        self.model = model
        self.max_num_seqs = max_num_seqs
        self.max_blocks = (max_model_len + BLOCK_SIZE - 1) // BLOCK_SIZE
        self.input_batch = InputBatch(max_num_seqs)
        self.requests = {}
        # paged KV caches in the shape the generator reads them (per model
        # instance, per layer [K, V], K [blocks, heads, block_size, head_dim]:
        # get_block_size reads dim 2); the stand-in model stores nothing in them
        blocks = max_num_seqs * self.max_blocks
        self.kv_caches = [[[ttnn.Tensor(torch.zeros(blocks, 1, BLOCK_SIZE, 1)),
                            ttnn.Tensor(torch.zeros(blocks, 1, BLOCK_SIZE, 1))]]
                          for _ in range(getattr(model, "data_parallel", 1))]
        self.trace_mode = "decode_only"
        self.async_decode = TTAsyncDecodeController(self)
        self._decode_layout_changed_since_last_decode = False
        self._free_blocks = list(range(max_num_seqs * self.max_blocks))
        self.step = -1

    # -- the persistent batch --

    def _update_states(self, so):
        changed = False
        removed = []
        for req_id in so.finished_req_ids:
            state = self.requests.pop(req_id, None)
            if state is not None:
                self._free_blocks.extend(state.block_ids)
            index = self.input_batch.remove_request(req_id)
            if index is not None:
                removed.append(index)
                changed = True
        scheduled = {r.req_id for r in so.scheduled_new_reqs} | set(so.scheduled_running)
        for req_id in list(self.input_batch.req_id_to_index):
            if req_id not in scheduled:
                removed.append(self.input_batch.remove_request(req_id))
                changed = True
        to_add = []
        for state in so.scheduled_new_reqs:
            self.requests[state.req_id] = state
            to_add.append(state.req_id)
        for req_id in so.scheduled_running:
            if req_id not in self.input_batch.req_id_to_index:
                to_add.append(req_id)
        removed = sorted(removed, reverse=True)
        for req_id in to_add:
            index = removed.pop() if removed else None
            self.input_batch.add_request(self.requests[req_id], index)
            changed = True
        if removed:
            self.input_batch.condense(removed)
            changed = True
        if changed:
            self._decode_layout_changed_since_last_decode = True

    def _grow_blocks(self, state, num_tokens):
        while len(state.block_ids) * BLOCK_SIZE < num_tokens:
            state.block_ids.append(self._free_blocks.pop(0))

    def _block_tables(self, rows, width):
        table = torch.zeros(width, self.max_blocks, dtype=torch.int32)
        for r, req_id in enumerate(rows):
            if req_id is not None:
                ids = self.requests[req_id].block_ids
                table[r, :len(ids)] = torch.tensor(ids, dtype=torch.int32)
        return table

    def _sampling_params(self, n):
        return TTSamplingParams(temperature=[0.0] * n, top_k=[1] * n, top_p=[1.0] * n,
                                presence_penalty=[0.0] * n, frequency_penalty=[0.0] * n,
                                repetition_penalty=[1.0] * n, seed=[None] * n,
                                num_logprobs=[-2] * n, enable_log_probs=[False] * n)

    def _prepare_model_inputs(self, is_prompt):
        rows = self.input_batch.req_ids
        num_reqs = len(rows)
        states = [self.requests[r] for r in rows]
        if is_prompt:
            prompt_lens = [s.num_tokens for s in states]
            tokens = torch.zeros(num_reqs, max(prompt_lens), dtype=torch.int32)
            for r, s in enumerate(states):
                tokens[r, :s.num_tokens] = torch.tensor(s.token_ids(), dtype=torch.int32)
                self._grow_blocks(s, s.num_tokens + 1)
            positions = torch.tensor([s.num_computed_tokens for s in states], dtype=torch.int32)
            return TTModelInput(tokens, positions, prompt_lens, self._block_tables(rows, num_reqs),
                                num_reqs, self._sampling_params(num_reqs), True, False,
                                self.input_batch.pop_slot_remap())
        width = self.input_batch.max_num_reqs
        for s in states:
            self._grow_blocks(s, s.num_tokens + 1)
        positions = torch.tensor([s.num_tokens - 1 for s in states] + [-1] * (width - num_reqs),
                                 dtype=torch.int32)
        tokens = torch.tensor([s.token_ids()[-1] for s in states] + [0] * (width - num_reqs),
                              dtype=torch.int32).view(-1, 1)
        reset_batch = self._decode_layout_changed_since_last_decode
        self._decode_layout_changed_since_last_decode = False
        return TTModelInput(tokens, positions, None, self._block_tables(rows, width), num_reqs,
                            self._sampling_params(width), True, reset_batch,
                            self.input_batch.pop_slot_remap())

    # -- a step --

    def submit_prefill(self, model_input, batch_size_per_dp):
        kwargs = {
            "tokens": model_input.input_tokens,
            "page_table": model_input.block_tables,
            "kv_cache": self.kv_caches,
            "enable_trace": self.trace_mode in ["all"],
            "prompt_lens": model_input.prompt_lens,
            "start_pos": model_input.input_positions,
        }
        if model_input.perform_device_sampling:
            kwargs["sampling_params"] = model_input.tt_sampling_params
        if len(batch_size_per_dp) > 1:
            stride = int(self.max_num_seqs)
            kwargs["empty_slots"] = [dp * stride + i for dp, sz in enumerate(batch_size_per_dp)
                                     for i in range(int(sz))]
        return self.model.prefill_forward(**kwargs)

    def execute_model(self, so):
        """One step; returns {request id: the token it got}."""
        self._update_states(so)
        is_prompt = bool(so.scheduled_new_reqs)
        mi = self._prepare_model_inputs(is_prompt)
        rows = self.input_batch.req_ids
        self.step += 1
        if is_prompt:
            TRUTH.prefill(self.step, rows)
            out = self.submit_prefill(mi, [mi.unpadded_batch_size])
            if isinstance(out, tuple):
                sampled = out[0].reshape(-1)
            else:
                sampled = out.reshape(len(rows), -1).argmax(-1)
            for s in (self.requests[r] for r in rows):
                s.num_computed_tokens = s.num_tokens
        else:
            TRUTH.decode(self.step, rows + [None] * (self.input_batch.max_num_reqs - len(rows)),
                         mi.input_tokens.reshape(-1).tolist(), mi.input_positions.tolist(),
                         mi.reset_batch, mi.slot_remap.tolist())
            sub = self.async_decode.submit_decode(mi, read_from_device=True)
            sampled = sub.tt_out[0].reshape(-1)
        got = {}
        for r, req_id in enumerate(rows):
            s = self.requests[req_id]
            s.output_token_ids.append(int(sampled[r]))
            if not is_prompt:
                s.num_computed_tokens = s.num_tokens - 1
            got[req_id] = int(sampled[r])
        return got
