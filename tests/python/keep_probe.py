"""Drives the stand-in generator (or, with STANDIN_GENERATOR, any
models/tt_transformers/tt/generator.py) the way tt-metal's own keep tests
drive the shared Generator, for tests/python/test_kit.py, which runs this
under the kit and reads the audit. Nothing here imports the kit.

  unit/<caps>      tt-metal models/tt_transformers/tests/
                   test_async_ahead_token_keep_unit.py (as stored, 3a3171fb):
                   a Generator reduced to the state the keep reads, device
                   buffers staged with tokens [101..104] at positions
                   [10..13], host tokens [1..4] at [10, 10, 12, 50], slot 2
                   prefilled, _decode_forward_trace_text mocked to record what
                   the keep decided; decode_forward(..., sampling_params=None,
                   defer_device_sampling=True, reset_batch=True); caps
                   declared True, declared False, undeclared; and with the
                   slot remap [1, 0, 2, 3]
  decode/<caps>    test_async_ahead_token_keep_decode.py (50868c00):
                   decode_forward unmodified over the stand-in model, a
                   priming decode then a second one at the same positions
  prefill          Generator.prefill_forward as tt-metal calls it (tokens
                   positional), and prefill_forward_text(tokens, ...)
  patched          a copy of decode_forward whose keep feeds the host tokens
                   whatever use_dev says (the kit must record what was fed)
  tracer           the unit case under another trace function

usage: keep_probe.py CASE...   prints {case: what the decode ran with} as JSON
"""

import inspect
import json
import os
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "standin"))
import paths  # noqa: E402

for _root in reversed(paths.roots()):
    if _root not in sys.path:
        sys.path.insert(0, _root)

import torch  # noqa: E402

import ttnn  # noqa: E402
from models.tt_transformers.tt.generator import Generator  # noqa: E402

HOST_TOKENS = [1, 2, 3, 4]
HOST_POSITIONS = [10, 10, 12, 50]
DEVICE_TOKENS = [101, 102, 103, 104]
DEVICE_POSITIONS = [10, 11, 12, 13]
PREFILLED_SLOTS = {2}
CAPS = {"true": {"supports_async_decode": True, "supports_sample_on_device": True},
        "false": {"supports_async_decode": False, "supports_sample_on_device": True},
        "undeclared": None}


class _SwitchOnlyModel:
    def switch_mode(self, mode):
        pass


def _probe_class(base):
    class KeepProbe(base):
        """As upstream's _KeepProbe: the state the keep reads, the decode mocked."""

        def __init__(self, capabilities):
            mesh = ttnn.MeshDevice()
            self.mesh_device = mesh
            self.model = [_SwitchOnlyModel()]
            self.model_args = [None]
            self.data_parallel = 1
            self.mode = None
            self.decoded_with = None
            if capabilities is not None:
                self.model_capabilities = capabilities
            self.trace_inputs_decode = {True: [[
                ttnn.from_torch(torch.tensor([DEVICE_TOKENS], dtype=torch.int32), device=mesh,
                                dtype=ttnn.uint32),
                ttnn.from_torch(torch.tensor([DEVICE_POSITIONS], dtype=torch.int32), device=mesh,
                                dtype=ttnn.int32),
                None, None]]}
            self.trace_ids_decode = {True: {0: 0}}

        def _decode_forward_trace_text(self, tokens, current_pos, **kwargs):
            self.decoded_with = ([int(t) for t in tokens[0].reshape(-1)],
                                 [int(p) for p in current_pos[0].reshape(-1)])
            return []
    return KeepProbe


def unit(caps, slot_remap=None, base=Generator):
    probe = _probe_class(base)(CAPS[caps])
    probe._slots_prefilled_since_decode = set(PREFILLED_SLOTS)
    probe.decode_forward(
        torch.tensor(HOST_TOKENS, dtype=torch.int32).reshape(len(HOST_TOKENS), 1),
        torch.tensor(HOST_POSITIONS, dtype=torch.int32),
        page_table=None, kv_cache=None, enable_trace=True, read_from_device=True,
        sampling_params=None, defer_device_sampling=True, reset_batch=True,
        slot_remap=slot_remap)
    return probe.decoded_with


def decode(caps):
    from models.tt_transformers.tt.model import ModelArgs, Transformer
    mesh = ttnn.MeshDevice()
    args = ModelArgs(mesh, 4, 4096)
    gen = Generator([Transformer(args, mesh)], [args], mesh)
    if CAPS[caps] is not None:
        gen.model_capabilities = CAPS[caps]
    ran = []
    for toks in ([101, 102, 103, 104], [11, 12, 13, 14]):
        gen.decode_forward(torch.tensor(toks, dtype=torch.int32).reshape(4, 1),
                           torch.tensor([10] * 4, dtype=torch.int32), page_table=None,
                           kv_cache=None, enable_trace=True, read_from_device=True,
                           sampling_params=None, defer_device_sampling=True, reset_batch=True)
        inputs = gen.trace_inputs_decode[True][0]
        ran.append(ttnn.to_torch(inputs[0]).reshape(-1)[:4].tolist())
    return ran


def prefill():
    from models.tt_transformers.tt.generator_vllm import LlamaForCausalLM
    gen = LlamaForCausalLM.initialize_vllm_model(None, ttnn.MeshDevice(), 4, 4096)
    tokens = torch.tensor([[5, 6, 7, 0], [8, 9, 10, 11]], dtype=torch.long)
    out1 = Generator.prefill_forward(gen, None, None, tokens, None, None, [3, 4])
    out2 = gen.prefill_forward_text(tokens[1:], prompt_lens=[4], empty_slots=[3])
    return [out1[0].argmax(-1).reshape(-1).tolist(), out2.argmax(-1).reshape(-1).tolist()]


def patched():
    """Generator.decode_forward's own source with the keep's torch.where
    replaced by the host tokens and positions: a patch that computes use_dev
    and ignores it."""
    src = textwrap.dedent(inspect.getsource(Generator.decode_forward))
    for old, new in (("torch.where(use_dev, dev_toks.view(-1), tok_chunk.view(-1))",
                      "tok_chunk.view(-1)"),
                     ("torch.where(use_dev, dev_pos, host_pos)", "host_pos")):
        if old not in src:
            raise SystemExit("patched: %r is not in decode_forward" % old)
        src = src.replace(old, new)
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "probe_patched.py"), "w") as f:
        # the generator module's names (torch, ttnn, Mode, SamplingParams, ...)
        f.write("from models.tt_transformers.tt import generator as _g\n"
                "globals().update({k: v for k, v in vars(_g).items() if not k.startswith('__')})"
                "\n\n\nclass PatchedGenerator(Generator):\n" + textwrap.indent(src, "    "))
    sys.path.insert(0, d)
    import probe_patched
    return unit("true", base=probe_patched.PatchedGenerator)


def tracer():
    seen = []

    def tr(frame, event, arg):
        seen.append(event)
        return None
    sys.settrace(tr)
    try:
        return unit("true")
    finally:
        sys.settrace(None)


def run(case):
    kind, _, arg = case.partition("/")
    if kind == "unit":
        return unit(arg.split("+")[0], [1, 0, 2, 3] if arg.endswith("+remap") else None)
    if kind == "decode":
        return decode(arg)
    return {"prefill": prefill, "patched": patched, "tracer": tracer}[kind]()


def main(argv):
    out = {}
    for case in argv[1:]:
        out[case] = run(case)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
