"""Stand-in for tenstorrent/tt-metal models/common/warmup.py (tests only):
WarmupForwardMixin, which models/tt_transformers/tt/generator.py derives
from at 50868c00281366b286bdf5ccb7b50c4b7b56cef1 and calls for
`_create_sampling_params(can_sample_on_device=..., batch_size=...,
greedy_only=...)` during prefill warmup. The upstream module was not in
the index; this one is written from that call: one greedy on-device
parameter set when the model samples on device, else host sampling."""

from models.common.sampling import SamplingParams


class WarmupForwardMixin:
    def _create_sampling_params(self, can_sample_on_device, batch_size, greedy_only=False,
                                **kwargs):
        if not can_sample_on_device:
            return [None]
        return [SamplingParams(temperature=[0.0] * batch_size, top_k=[1] * batch_size,
                               top_p=[1.0] * batch_size)]
