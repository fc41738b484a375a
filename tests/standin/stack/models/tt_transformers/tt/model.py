"""Stand-in for the model side of the generator's contract (tests only):
what tenstorrent/tt-metal models/tt_transformers/tt/generator.py calls on
`self.model[i]` and `self.model_args[i]` at commit
50868c00281366b286bdf5ccb7b50c4b7b56cef1, in the shapes it calls them:

  decode   switch_mode(mode); prepare_decode_inputs_host(tokens, current_pos,
           page_table) -> (tokens, positions, rope indices, page table) with
           the page table at index 3 (DECODE_PAGE_TABLE_INPUT_IDX);
           prepare_inputs_decode(...) (the same on the device);
           ttnn_decode_forward(tokens, current_pos, rot_mat_idxs=None,
           page_table=None, kv_cache=None, on_device_logits=...);
           process_output_decode(tt_out, B, S=1, is_tokens=...);
           `sampling`, whose sample(logits, tt_out_tok=...) writes the
           sampled token into tt_out_tok, the decode trace's token input
           (Generator._decode_token_feedback_buffer)
  prefill  prepare_inputs_prefill(tokens, page_table=..., batch_size=...,
           user_id=...) and ttnn_prefill_forward(x, rot_mats_global=...,
           rot_mats_local=..., user_id=..., page_table=..., get_last_token=...,
           kv_cache=..., batch_size=...); process_output_prefill(logits,
           last_token_idx=...)

as upstream's own keep test drives it (models/tt_transformers/tests/
test_async_ahead_token_keep_decode.py at the same commit: a model whose
decode runs as ttnn ops, so they are captured into the decode trace and
replayed). Everything inside is ours: a deterministic "language model"
(standin_truth.next_token) computed with ttnn ops, a greedy sampler, and,
inside the captured decode, the position moved on with
`ttnn.plus_one(current_pos, skip_negative_entries=True)` as tt-metal models
do, so after every replay the trace inputs hold the sampled token and the
next position: the async-ahead buffer the keep reads.

Token and position inputs are padded to 32 entries (the tokens as the
upstream test pads them; the positions with -1, inactive)."""

import torch

import ttnn
from models.tt_transformers.tt.common import copy_host_to_device
from standin_truth import TRUTH, VOCAB

TILE = 32


class _SeedManager:
    """The seed bookkeeping sample_decode_on_device calls; greedy needs none."""
    max_batch_size = TILE

    def apply_slot_remap(self, remap):
        pass

    def deactivate_slots_except(self, slots):
        pass

    def reset_seed_from_slots(self, seeds, slots):
        pass

    def reset_seed_from_slots_if_needed(self, seeds, slots):
        return []

    def align_seed_counters_to_positions(self, seeds, slots, positions):
        pass

    def get_new_values(self, slots=None):
        pass


class _TTSampling:
    max_batch_size = TILE


class Sampling:
    """A greedy on-device sampler: the stand-in's logits are already token ids."""

    def __init__(self):
        self.tt_sampling = _TTSampling()
        self.seed_manager = _SeedManager()

    def apply_decode_state(self, chunks, reset_batch=False, prompt_tokens=None,
                           output_tokens=None):
        pass

    def apply_prefill_state(self, sampling_params=None, prompt_tokens=None, empty_slots=None,
                            replicate_seeds=True):
        pass

    def precompile(self, logits=None, tt_out_tok=None):
        pass

    def capture_trace(self, logits=None, tt_out_tok=None, skip_precompile=False):
        pass

    def reset_trace(self):
        pass

    def sample(self, logits, tt_out_tok=None, enable_trace=True, skip_precompile=False,
               count_tokens=True):
        if isinstance(logits, tuple):
            logits = logits[0]
        if tt_out_tok is not None:
            ttnn.copy(logits, tt_out_tok)
            return tt_out_tok, None
        return ttnn.Tensor(logits.value.clone(), logits.device, logits.dtype), None


class ModelArgs:
    """The `model_args[i]` attributes the generator reads."""

    def __init__(self, mesh_device, max_batch_size, max_seq_len):
        self.mesh_device = mesh_device
        self.max_batch_size = max_batch_size
        self.max_seq_len = max_seq_len
        self.vocab_size = VOCAB
        self.dim = 32
        self.max_prefill_chunk_size = 1 << 16
        self.disable_batched_prefill = True     # the sequential per-user path
        self.trace_prefill_supported_seq_lens = [128]

    def get_warmup_prefill_supported_seq_lens(self):
        return [128]

    def can_enable_trace(self, prefill_seq_len, num_cached_tokens=0):
        return False

    def is_llama_vision(self):
        return False


class Transformer:
    def __init__(self, args, mesh_device, dp=0):
        self.args = args
        self.mesh_device = mesh_device
        self.dp = dp
        self.mode = None
        self.sampling = Sampling()
        self._supports_on_device_sampling = True

    def switch_mode(self, mode):
        self.mode = mode

    # -- decode --

    def prepare_decode_inputs_host(self, tokens, current_pos, page_table=None):
        tok = tokens.reshape(-1).to(torch.int64)
        pos = current_pos.reshape(-1).to(torch.int64)
        tok = torch.nn.functional.pad(tok, (0, TILE - tok.shape[0]), "constant", 0)
        pos = torch.nn.functional.pad(pos, (0, TILE - pos.shape[0]), "constant", -1)
        tt_tokens = ttnn.unsqueeze_to_4D(ttnn.from_torch(tok, dtype=ttnn.uint32))
        tt_pos = ttnn.from_torch(pos, dtype=ttnn.int32)
        tt_page = ttnn.from_torch(page_table, dtype=ttnn.int32) if page_table is not None else None
        return tt_tokens, tt_pos, None, tt_page

    def prepare_inputs_decode(self, tokens, current_pos, page_table=None):
        return copy_host_to_device(self.prepare_decode_inputs_host(tokens, current_pos,
                                                                   page_table),
                                   mesh_device=self.mesh_device)

    def ttnn_decode_forward(self, tokens, current_pos, rot_mat_idxs=None, page_table=None,
                            kv_cache=None, on_device_logits=False, **kwargs):
        width = self.args.max_batch_size
        dp = self.dp

        def witness():
            TRUTH.executed(dp, tokens.value.reshape(-1)[:width].tolist(),
                           current_pos.value.reshape(-1)[:width].tolist())
        ttnn._issue(tokens.device, witness)
        mixed = ttnn.add(ttnn.multiply(tokens, 1103515245), ttnn.multiply(current_pos, 12345))
        logits = ttnn.remainder(ttnn.add(mixed, 7), VOCAB)
        ttnn.plus_one(current_pos, skip_negative_entries=True)
        return logits

    def process_output_decode(self, tt_out, B, S=1, is_tokens=False, is_log_probs=False):
        return tt_out.value.reshape(-1)[:B].reshape(B, S).clone()

    # -- prefill --

    def prepare_inputs_prefill(self, tokens, page_table=None, batch_size=1, user_id=0,
                               start_pos=0, chunk_page_table=None, **kwargs):
        x = ttnn.from_torch(tokens.reshape(-1).to(torch.int64), device=self.mesh_device,
                            dtype=ttnn.uint32)
        return x, None, None, None, None, None

    def ttnn_prefill_forward(self, x, rot_mats_global=None, rot_mats_local=None, user_id=0,
                             page_table=None, get_last_token=-1, kv_cache=None, batch_size=1,
                             chunk_page_table=None, chunk_start_idx=None, **kwargs):
        ids = x.value.reshape(-1)
        start = max(0, int(get_last_token))
        rows = torch.zeros(TILE, dtype=torch.int64)
        for r in range(TILE):
            p = start + r
            if p < ids.shape[0]:
                rows[r] = (int(ids[p]) * 1103515245 + p * 12345 + 7) % VOCAB
        return ttnn.Tensor(rows, self.mesh_device, ttnn.uint32)

    def process_output_prefill(self, logits, last_token_idx=0, **kwargs):
        out = torch.zeros(VOCAB)
        out[int(logits.value.reshape(-1)[int(last_token_idx)])] = 1.0
        return out
