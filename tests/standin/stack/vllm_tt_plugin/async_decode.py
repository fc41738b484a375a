"""Stand-in for vllm_tt_plugin/async_decode.py at tenstorrent/vllm dev
b4dd0fa695bfe85a1f83068bb30dae4220e8334a (tests only):
TTAsyncDecodeController.submit_decode(self, model_input, *,
read_from_device, async_read=False), through which every decode reaches the
model. As upstream it builds tokens, page_table, kv_cache and start_pos,
adds sampling_params, reset_batch and (when present) slot_remap only when
the step samples on device, and calls runner.model.decode_forward(**kwargs,
enable_trace=runner.trace_mode in ["all", "decode_only"],
read_from_device=...). The overlap machinery (pending steps, the steady
fast path) is left out: the stand-in runs every step synchronously."""

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class TTDecodeSubmission:
    tt_out: Any
    batch_size_per_dp: list


class TTAsyncDecodeController:
    def __init__(self, runner):
        self.runner = runner

    def submit_decode(self, model_input, *, read_from_device, async_read=False):
        runner = self.runner
        batch_size_per_dp = model_input.unpadded_batch_size
        if not isinstance(batch_size_per_dp, list):
            batch_size_per_dp = [batch_size_per_dp]
        if not any(bs > 0 for bs in batch_size_per_dp):
            return TTDecodeSubmission(None, batch_size_per_dp)
        kwargs = {
            "tokens": model_input.input_tokens,
            "page_table": model_input.block_tables,
            "kv_cache": runner.kv_caches,
            "start_pos": model_input.input_positions,
        }
        if model_input.perform_device_sampling:
            sampling_params = model_input.tt_sampling_params
            kwargs["sampling_params"] = type(sampling_params)(
                **{f.name: getattr(sampling_params, f.name) for f in fields(sampling_params)})
            kwargs["reset_batch"] = model_input.reset_batch
            if model_input.slot_remap is not None:
                kwargs["slot_remap"] = model_input.slot_remap
        enable_trace = runner.trace_mode in ["all", "decode_only"]
        tt_out = runner.model.decode_forward(**kwargs, enable_trace=enable_trace,
                                             read_from_device=read_from_device)
        return TTDecodeSubmission(tt_out, batch_size_per_dp)
