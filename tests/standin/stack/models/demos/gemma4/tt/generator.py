"""Stand-in for tenstorrent/tt-metal models/demos/gemma4/tt/generator.py
(tests only), after the stored revision of 88,740 characters whose
decode_forward calls the 216c8690 helper (the index holds it without a
commit; its imports and shapes are the ones below):

  - ChunkedPrefillPageTableGuardMixin.decode_forward(self, tokens,
    start_pos, page_table=None, kv_cache=None, enable_trace=True,
    read_from_device=True, sampling_params=None, reset_batch=False,
    prompt_tokens=None, output_tokens=None, slot_remap=None,
    defer_device_sampling=False, **kwargs) does not call the shared
    Generator's: "same control flow", with the trace key
    (on_device_sampling, chunk batch); its keep runs on
    `async_decode_enabled and on_device_sampling and (reset_batch or
    mode_switched) and enable_trace and self.trace_inputs_decode[key]`,
    async_decode_enabled = bool(model_capabilities.get(
    "supports_async_decode", False)); per chunk it reads the full device
    buffers, rebases the chunk's slot_remap by i * host_b, takes the
    chunk's prefilled slots, calls merge_async_ahead_decode_tokens and logs
    `async_ahead_merge src=... host_b=... dev_len=...` when the source is
    not "merged" or the buffer is wider; then resets
    _slots_prefilled_since_decode and calls its own
    _decode_forward_trace_text(**decode_kwargs, reset_batch=reset_batch or
    mode_switched);
  - ChunkedPrefillPageTableGuardMixin._decode_forward_trace_text(self,
    tokens, current_pos, page_table=None, kv_cache=None,
    on_device_sampling=False, reset_batch=False, skip_precompile=False)
    keys traces by (on_device_sampling, batch) and restages on a reset, no
    on-device sampling, a sampling-mode change or a batch change;
  - Gemma4Generator(ChunkedPrefillPageTableGuardMixin, Generator) declares
    {"supports_prefix_caching": False, "supports_async_decode": False}.
"""

import torch
from loguru import logger

import ttnn
from models.demos.gemma4.tt.async_decode import merge_async_ahead_decode_tokens
from models.tt_transformers.tt.common import Mode, copy_host_to_device
from models.tt_transformers.tt.generator import Generator


class ChunkedPrefillPageTableGuardMixin:
    def decode_forward(
        self,
        tokens,
        start_pos,
        page_table=None,
        kv_cache=None,
        enable_trace=True,
        read_from_device=True,
        sampling_params=None,
        reset_batch=False,
        prompt_tokens=None,
        output_tokens=None,
        slot_remap=None,
        defer_device_sampling: bool = False,
        **kwargs,
    ):
        del kwargs
        mode_switched = False
        if self.mode != Mode.DECODE:
            self.mode = Mode.DECODE
            mode_switched = True
        for i in range(len(self.model)):
            self.model[i].switch_mode(Mode.DECODE)
        on_device_sampling = (sampling_params is not None) or defer_device_sampling
        tokens = torch.chunk(tokens, self.data_parallel, 0)
        start_pos = torch.chunk(start_pos, self.data_parallel, 0)
        page_table = torch.chunk(page_table, self.data_parallel, 0) if page_table is not None else None
        decode_trace_key = (on_device_sampling, int(tokens[0].shape[0]) if tokens else 1)

        async_decode_enabled = bool(getattr(self, "model_capabilities", {}).get("supports_async_decode", False))
        if (
            async_decode_enabled
            and on_device_sampling
            and (reset_batch or mode_switched)
            and enable_trace
            and self.trace_inputs_decode[decode_trace_key]
        ):
            new_tokens, new_start_pos = [], []
            for i, tok_chunk in enumerate(tokens):
                trace_in = self.trace_inputs_decode[decode_trace_key][i]
                host_pos = start_pos[i].reshape(-1).to(torch.int64)
                host_toks = tok_chunk.reshape(-1)
                host_b = int(host_toks.shape[0])
                dev_toks_full = ttnn.to_torch(ttnn.get_device_tensors(trace_in[0])[0]).reshape(-1).to(tok_chunk.dtype)
                dev_pos_full = ttnn.to_torch(ttnn.get_device_tensors(trace_in[1])[0]).reshape(-1).to(torch.int64)
                slot_remap_local = None
                if slot_remap is not None:
                    remap_t = torch.as_tensor(slot_remap[i * host_b : (i + 1) * host_b]).long()
                    slot_remap_local = remap_t - i * host_b
                prefilled = getattr(self, "_slots_prefilled_since_decode", None)
                prefilled_local = None
                if prefilled:
                    prefilled_local = {s - i * host_b for s in prefilled if i * host_b <= s < (i + 1) * host_b}
                merged, merged_pos, src = merge_async_ahead_decode_tokens(
                    host_toks,
                    host_pos,
                    dev_toks_full,
                    dev_pos_full,
                    slot_remap_local=slot_remap_local,
                    prefilled_local=prefilled_local,
                )
                if src != "merged" or int(dev_toks_full.shape[0]) != host_b:
                    logger.info("async_ahead_merge src={} host_b={} dev_len={}", src, host_b,
                                int(dev_toks_full.shape[0]))
                new_tokens.append(merged.view(tok_chunk.shape).to(tok_chunk.dtype))
                new_start_pos.append(merged_pos.view(start_pos[i].shape).to(start_pos[i].dtype))
            tokens = new_tokens
            start_pos = new_start_pos
        self._slots_prefilled_since_decode = set()

        decode_kwargs = {"current_pos": start_pos, "tokens": tokens, "page_table": page_table,
                         "kv_cache": kv_cache, "on_device_sampling": on_device_sampling}
        tt_decode_output = self._decode_forward_trace_text(**decode_kwargs,
                                                           reset_batch=reset_batch or mode_switched)
        if defer_device_sampling and on_device_sampling:
            return tt_decode_output
        if sampling_params is not None:
            tt_decode_output = self.sample_decode_on_device(
                tt_decode_output, sampling_params=sampling_params, start_pos=start_pos,
                reset_batch=reset_batch, slot_remap=slot_remap, enable_trace=enable_trace,
                trace_key=decode_trace_key)
        if read_from_device:
            return self.process_decode_output_host(self.read_decode_output(tt_decode_output),
                                                   is_tokens=sampling_params is not None)
        return tt_decode_output

    def sample_decode_on_device(self, tt_logits, sampling_params, start_pos=None, reset_batch=False,
                                slot_remap=None, enable_trace=False, trace_key=None, **kwargs):
        out = []
        for i in range(self.data_parallel):
            logits_i = tt_logits[i][0] if isinstance(tt_logits[i], tuple) else tt_logits[i]
            inputs = self.trace_inputs_decode[trace_key]
            tt_out_tok = inputs[i][0] if enable_trace and inputs else None
            out.append(self.model[i].sampling.sample(logits=logits_i, tt_out_tok=tt_out_tok))
        return out

    def _decode_forward_trace_text(
        self,
        tokens,
        current_pos,
        page_table=None,
        kv_cache=None,
        on_device_sampling=False,
        reset_batch=False,
        skip_precompile=False,
    ):
        batch = int(tokens[0].shape[0]) if tokens else 1
        decode_trace_key = (on_device_sampling, batch)
        if not self.trace_ids_decode[decode_trace_key]:
            trace_ids, tt_out_trace, *device_inputs = self._capture_decode_trace_text(
                tokens, current_pos, page_table=page_table, kv_cache=kv_cache,
                on_device_sampling=on_device_sampling, skip_precompile=skip_precompile)
            self.trace_ids_decode[decode_trace_key] = trace_ids
            self.trace_inputs_decode[decode_trace_key] = device_inputs
            self.trace_output_decode[decode_trace_key] = tt_out_trace
        prev_ods = getattr(self, "_prev_on_device_sampling", None)
        self._prev_on_device_sampling = on_device_sampling
        prev_batch = getattr(self, "_prev_decode_batch", None)
        self._prev_decode_batch = batch
        reset_inputs = (reset_batch or not on_device_sampling
                        or (prev_ods is not None and prev_ods != on_device_sampling)
                        or (prev_batch is not None and prev_batch != batch))
        for i in range(self.data_parallel):
            if reset_inputs or getattr(self.model[i], "_tt_vllm_always_refresh_decode_trace_inputs", False):
                user_page_table = page_table[i] if page_table is not None else None
                copy_host_to_device(
                    host_tensors=self.model[i].prepare_decode_inputs_host(tokens[i], current_pos[i], user_page_table),
                    device_tensors=self.trace_inputs_decode[decode_trace_key][i],
                )
        for i, trace_id in self.trace_ids_decode[decode_trace_key].items():
            ttnn.execute_trace(self.model_args[i].mesh_device, trace_id, cq_id=0, blocking=False)
        return self.trace_output_decode[decode_trace_key]


class Gemma4Generator(ChunkedPrefillPageTableGuardMixin, Generator):
    model_capabilities = {
        "supports_prefix_caching": False,
        "supports_async_decode": False,
    }
