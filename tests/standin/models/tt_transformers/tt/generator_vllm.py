"""Stand-in for models/tt_transformers/tt/generator_vllm.py (tests only):
the vLLM adapter class, a Generator subclass carrying the model's
capabilities, as Qwen3.6's adapter does upstream.

STANDIN_CAPS: "false" (the default, Qwen3.6 upstream: supports_async_decode
False), "true", or "undeclared" (no model_capabilities at all).
STANDIN_PREFILL: "generator" (the default: prefill_forward goes through
Generator.prefill_forward_text, which fills the slot-reuse mask) or "own"
(Qwen3.6's own prefill replaces the Generator's: the mask stays empty and
the step clock does not see prefills)."""

import os

from models.tt_transformers.tt.generator import Generator, first_token
from models.tt_transformers.tt.common import Mode, Vec

_CAPS = os.environ.get("STANDIN_CAPS", "false")


class Qwen36ForCausalLM(Generator):
    if _CAPS != "undeclared":
        model_capabilities = {
            "supports_prefix_caching": False,
            "supports_async_decode": _CAPS == "true",
            "supports_sample_on_device": True,
        }

    @classmethod
    def initialize_vllm_model(cls, hf_config, mesh_device, max_batch_size, max_seq_len,
                              n_layers=None, tt_data_parallel=1, optimizations=None):
        class _Args:
            pass
        args = []
        for _ in range(tt_data_parallel):
            a = _Args()
            a.max_batch_size = max_batch_size // tt_data_parallel
            a.max_seq_len = max_seq_len
            args.append(a)
        return cls([object()] * tt_data_parallel, args, mesh_device)

    def prefill_forward(self, *args, **kwargs):
        if os.environ.get("STANDIN_PREFILL", "generator") == "own":
            return self._own_prefill(*args, **kwargs)
        return super().prefill_forward_text(*args, **kwargs)

    def _own_prefill(self, tokens, page_table=None, kv_cache=None, prompt_lens=None,
                     empty_slots=None, **kwargs):
        self.mode = Mode.PREFILL
        slots = empty_slots if empty_slots is not None else range(len(tokens))
        return Vec([first_token(list(tokens[i])[:int(prompt_lens[i])])
                    for i in range(len(list(slots)))])
