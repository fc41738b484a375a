"""Stand-in for tenstorrent/tt-metal models/tt_transformers/tt/generator_vllm.py
(tests only), shaped as the stored revision 0015d62ba229715e1a2490489c17fce1ed317338
shapes its text adapters (LlamaForCausalLM, QwenForCausalLM,
MistralForCausalLM): a Generator subclass with a class-level
model_capabilities dict, `initialize_vllm_model(cls, hf_config, mesh_device,
max_batch_size, max_seq_len, n_layers=None, tt_data_parallel=1,
optimizations=...)` returning cls(model, model_args, mesh_device), and
`prefill_forward(self, *args, **kwargs)` handing everything to
Generator.prefill_forward_text. Upstream's LlamaForCausalLM declares
{"supports_prefix_caching": True} and nothing about async decode.

STANDIN_CAPS picks the adapter's capabilities: "undeclared" (the default:
upstream's dict), "true" or "false" (supports_async_decode declared so, as
a model adapter that declares it does). The model behind it is the
stand-in Transformer (models/tt_transformers/tt/model.py); STANDIN_DP=n
builds n data-parallel model instances."""

import os

import ttnn
from models.tt_transformers.tt.generator import Generator
from models.tt_transformers.tt.model import ModelArgs, Transformer

_CAPS = os.environ.get("STANDIN_CAPS", "undeclared")


class LlamaForCausalLM(Generator):
    model_capabilities = {"supports_prefix_caching": True}
    if _CAPS in ("true", "false"):
        model_capabilities = {"supports_prefix_caching": True,
                              "supports_async_decode": _CAPS == "true"}

    @classmethod
    def initialize_vllm_model(cls, hf_config, mesh_device, max_batch_size, max_seq_len,
                              n_layers=None, tt_data_parallel=1, optimizations="performance"):
        model_args, model = [], []
        for dp in range(tt_data_parallel):
            submesh = ttnn.MeshDevice() if tt_data_parallel > 1 else mesh_device
            args = ModelArgs(submesh, max_batch_size // tt_data_parallel, max_seq_len)
            model_args.append(args)
            model.append(Transformer(args, submesh, dp))
        return cls(model, model_args, mesh_device)

    def prefill_forward(self, *args, **kwargs):
        return super().prefill_forward_text(*args, **kwargs)
