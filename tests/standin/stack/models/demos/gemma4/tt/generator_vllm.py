"""Stand-in for Gemma4's vLLM adapter (tests only). Upstream's Gemma4
generator says the capability comes from tt-inference-server's llm.yaml
through GEMMA4_SUPPORTS_ASYNC_DECODE, "resolved once in Gemma4ForCausalLM";
the stand-in reads STANDIN_CAPS ("true", else false) the same once, and
builds the stand-in Transformer like the tt_transformers adapter."""

import os

from models.demos.gemma4.tt.generator import Gemma4Generator
from models.tt_transformers.tt.generator_vllm import LlamaForCausalLM


class Gemma4ForCausalLM(Gemma4Generator):
    model_capabilities = {"supports_prefix_caching": False,
                          "supports_async_decode": os.environ.get("STANDIN_CAPS") == "true"}

    initialize_vllm_model = classmethod(LlamaForCausalLM.initialize_vllm_model.__func__)

    def prefill_forward(self, *args, **kwargs):
        return super().prefill_forward_text(*args, **kwargs)
