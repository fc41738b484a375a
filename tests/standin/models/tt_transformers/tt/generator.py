"""Stand-in for tt-metal's models/tt_transformers/tt/generator.py (tests only).

Written for ttaudit from what docs/instrumenting.md records of the real
code: the same module path, class, function names and signatures as the
kit's name table expects, and the same decisions:

  - decode_forward runs the async-ahead keep when on-device sampling and
    (reset_batch or a mode switch) and trace and trace inputs exist for the
    key (on_device_sampling, batch), and the model declares
    model_capabilities["supports_async_decode"] (undeclared counts as yes),
    unless TT_FORCE_ASYNC_AHEAD_KEEP=1; per data-parallel chunk it reads the
    device's trace-input tensors and calls merge_async_ahead_decode_tokens;
  - _decode_forward_trace_text keys the traces by (on_device_sampling, batch),
    restages the inputs from the host on a reset, a sampling-mode change or
    a batch change, and replays the trace, which writes the sampled token
    back into the token input and moves the position on (plus_one), as
    Qwen3.6's AsyncDecodeStep.emit_step_tail does;
  - prefill_forward_text records its slots in _slots_prefilled_since_decode,
    which decode_forward clears.

The "device" is ours: a token is next_token(previous token, position), so a
substituted token changes the rest of the output. Beside the real decisions
the stand-in keeps its own account of them (STANDIN_TRUTH, one JSON object
per line), from its internals, never from the kit: the test holds the kit's
audit to it.

STANDIN_LOGGER picks the module's `logger`: loguru (default, as upstream),
logging, or broken (an object that looks like loguru and raises on every call).
STANDIN_TRACE_KEY=sampling keys the traces by on_device_sampling only (before
PR #53947), so a buffer of one width can meet a batch of another.
STANDIN_RENAME=1 gives the keep helper another name (an upstream rename).
QWEN36_MERGE_BATCH_GUARD=1 applies the seeds' batch-composition guard inside
the helper (the patch falls back to host tokens when the buffer's active
pattern differs from the batch's).
"""

import collections
import json
import os

import ttnn
from models.tt_transformers.tt.common import Mode, Vec, copy_host_to_device

if os.environ.get("STANDIN_LOGGER", "loguru") == "logging":
    import logging
    logger = logging.getLogger(__name__)
elif os.environ.get("STANDIN_LOGGER") == "broken":
    class _BrokenLogger:
        """Quacks like loguru's logger; every call fails."""

        def opt(self, *a, **k):
            return self

        def bind(self, *a, **k):
            return self

        def log(self, *a, **k):
            raise RuntimeError("the log sink is broken")

        info = warning = log
    logger = _BrokenLogger()
else:
    from loguru import logger

VOCAB = 50021
_DECIDED = []       # the helper's use_dev of its last merge, for the stand-in's account


def next_token(tok, pos):
    return (tok * 1103515245 + pos * 12345 + 7) % VOCAB


def first_token(prompt):
    return (sum(prompt) * 31 + len(prompt)) % VOCAB


class _Truth:
    """The stand-in's own account of its keep decisions."""

    def __init__(self):
        path = os.environ.get("STANDIN_TRUTH")
        self.f = open(path, "a", encoding="utf-8") if path else None

    def write(self, obj):
        if self.f is not None:
            self.f.write(json.dumps(obj, sort_keys=True) + "\n")
            self.f.flush()


_TRUTH = _Truth()


def merge_async_ahead_decode_tokens(
    host_toks,
    host_pos,
    dev_toks_full,
    dev_pos_full,
    slot_remap_local=None,
    prefilled_local=None,
):
    """Merge host decode inputs with the device's async-ahead buffers.

    Returns (tokens, positions, source), source "merged" or "host_fallback".
    Falls back to the host when a device buffer is narrower than the batch
    or the local slot remap points outside it; otherwise compares the front
    host_b device slots (after the remap) and keeps the device token and
    position where dev_pos == host_pos or dev_pos == host_pos + 1, except in
    prefilled slots."""
    host_toks = host_toks.tolist()
    host_pos = host_pos.tolist()
    dt = dev_toks_full.tolist()
    dp = dev_pos_full.tolist()
    host_b = len(host_toks)
    if len(dt) < host_b or len(dp) < host_b:
        return Vec(host_toks), Vec(host_pos), "host_fallback"
    dt, dp = dt[:host_b], dp[:host_b]
    if slot_remap_local is not None:
        remap = slot_remap_local.tolist()
        if len(remap) != host_b or any(r < 0 or r >= host_b for r in remap):
            return Vec(host_toks), Vec(host_pos), "host_fallback"
        dt = [dt[r] for r in remap]
        dp = [dp[r] for r in remap]
    if os.environ.get("QWEN36_MERGE_BATCH_GUARD") == "1":
        if any((dp[s] != -1) != (host_pos[s] != -1) for s in range(host_b)):
            return Vec(host_toks), Vec(host_pos), "host_fallback"
    use_dev = [dp[s] == host_pos[s] or dp[s] == host_pos[s] + 1 for s in range(host_b)]
    for slot in prefilled_local or ():
        if 0 <= slot < host_b:
            use_dev[slot] = False
    _DECIDED.append(list(use_dev))
    merged = [dt[s] if use_dev[s] else host_toks[s] for s in range(host_b)]
    merged_pos = [dp[s] if use_dev[s] else host_pos[s] for s in range(host_b)]
    return Vec(merged), Vec(merged_pos), "merged"


if os.environ.get("STANDIN_RENAME") == "1":
    _keep_async_ahead_tokens = merge_async_ahead_decode_tokens
    del merge_async_ahead_decode_tokens


def _trace_key(on_device_sampling, batch):
    """Traces keyed by (on_device_sampling, batch), as since PR #53947, or by
    on_device_sampling alone, as before it (STANDIN_TRACE_KEY=sampling)."""
    if os.environ.get("STANDIN_TRACE_KEY") == "sampling":
        return on_device_sampling
    return (on_device_sampling, batch)


def _keep(*args, **kwargs):
    """The keep helper, by whichever name this module gives it."""
    fn = globals().get("merge_async_ahead_decode_tokens") or globals()["_keep_async_ahead_tokens"]
    return fn(*args, **kwargs)


class Generator:
    def __init__(self, model, model_args, mesh_device, processor=None, tokenizer=None):
        self.model = model
        self.model_args = model_args
        self.mesh_device = mesh_device
        self.processor = processor
        self.tokenizer = tokenizer
        self.data_parallel = len(self.model)
        self.mode = None
        self.prev_page_table = None
        self.trace_ids_decode = collections.defaultdict(dict)
        self.trace_inputs_decode = collections.defaultdict(list)
        self.trace_output_decode = collections.defaultdict(list)
        self._slots_prefilled_since_decode = set()
        self._prev_on_device_sampling = None
        self._prev_decode_batch = None
        # the stand-in's own: the step clock (every prefill_forward_text and
        # decode_forward call) and the request id of each row, which the
        # runner sets before each call
        self._standin_clock = -1
        self._standin_rows = []
        self._standin_last = None

    # Note: This function is called by vLLM
    def prefill_forward_text(
        self,
        tokens,
        page_table=None,
        kv_cache=None,
        prompt_lens=None,
        empty_slots=None,
        enable_trace=True,
        sampling_params=None,
        start_pos=None,
        warmup_prefill=True,
        **kwargs,
    ):
        self._standin_clock += 1
        batch_size = len(tokens)
        if empty_slots is None:
            empty_slots = list(range(batch_size))
        for slot in empty_slots:
            self._slots_prefilled_since_decode.add(slot)
        self.mode = Mode.PREFILL
        out = []
        for idx, _slot in enumerate(empty_slots):
            n = int(prompt_lens[idx]) if prompt_lens is not None else len(tokens[idx])
            logger.info("Prefilling User {} up to {} tokens", _slot + 1, n)
            out.append(first_token(list(tokens[idx])[:n]))
        return Vec(out)

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
        defer_device_sampling=False,
        **kwargs,
    ):
        self._standin_clock += 1
        step = self._standin_clock
        mode_switched = False
        if self.mode != Mode.DECODE:
            self.mode = Mode.DECODE
            mode_switched = True
        on_device_sampling = (sampling_params is not None) or defer_device_sampling
        n = self.data_parallel
        tok_all, pos_all = tokens.tolist(), start_pos.tolist()
        bs = len(tok_all) // n
        tok_chunks = [Vec(tok_all[i * bs:(i + 1) * bs]) for i in range(n)]
        pos_chunks = [Vec(pos_all[i * bs:(i + 1) * bs]) for i in range(n)]
        rows = (list(self._standin_rows) + [None] * len(tok_all))[:len(tok_all)]
        key = _trace_key(on_device_sampling, bs)
        caps = getattr(self, "model_capabilities", None)
        supports = caps.get("supports_async_decode", True) if isinstance(caps, dict) else True
        force = os.environ.get("TT_FORCE_ASYNC_AHEAD_KEEP") == "1"
        would_keep = on_device_sampling and (reset_batch or mode_switched) and enable_trace \
            and bool(self.trace_inputs_decode[key])
        if would_keep and not (supports or force):
            _TRUTH.write({"kind": "gate", "step": step, "keep": False})
        if would_keep and (supports or force):
            new_tok, new_pos = [], []
            for i in range(n):
                trace_in = self.trace_inputs_decode[key][i]
                dev_toks_full = ttnn.to_torch(ttnn.get_device_tensors(trace_in[0])[0])
                dev_pos_full = ttnn.to_torch(ttnn.get_device_tensors(trace_in[1])[0])
                remap_local = None
                if slot_remap is not None:
                    remap = slot_remap.tolist()[i * bs:(i + 1) * bs]
                    remap_local = Vec([r - i * bs for r in remap])
                prefilled = self._slots_prefilled_since_decode
                prefilled_local = None
                if prefilled:
                    prefilled_local = {s - i * bs for s in prefilled if i * bs <= s < (i + 1) * bs}
                merged, merged_pos, src = _keep(
                    tok_chunks[i], pos_chunks[i], dev_toks_full, dev_pos_full,
                    slot_remap_local=remap_local, prefilled_local=prefilled_local)
                self._account(step, i, reset_batch, mode_switched, pos_chunks[i], trace_in[1],
                              remap_local, prefilled_local, src, rows[i * bs:(i + 1) * bs])
                new_tok.append(merged)
                new_pos.append(merged_pos)
            tok_chunks, pos_chunks = new_tok, new_pos
        self._slots_prefilled_since_decode = set()
        out = self._decode_forward_trace_text(
            tok_chunks, pos_chunks, page_table=page_table, kv_cache=kv_cache,
            on_device_sampling=on_device_sampling, reset_batch=reset_batch or mode_switched)
        return Vec([t for chunk in out for t in chunk.data])

    def _account(self, step, dp, reset, switched, hpos, pos_t, remap, prefilled, src, rows):
        """What the keep did, from the stand-in's own state (the truth)."""
        h = len(hpos)
        hp = hpos.tolist()
        rec = {"kind": "merge", "step": step, "dp": dp, "host_pos": hp, "reset_batch": reset,
               "mode_switched": switched, "prefilled": sorted(prefilled or ()),
               "buf_step": pos_t.step, "slot_req": rows}
        if len(pos_t.data) < h:
            rec.update(dev_pos=pos_t.data, fallback="shape", taken=[False] * h)
        elif remap is not None and any(r < 0 or r >= h for r in remap.tolist()):
            rec.update(dev_pos=[], fallback="slot_remap", taken=[False] * h)
        else:
            idx = remap.tolist() if remap is not None else list(range(h))
            rec["dev_pos"] = [pos_t.data[j] for j in idx]
            rec["buf_req"] = [pos_t.writer[j] for j in idx]
            decided = _DECIDED.pop() if src == "merged" and _DECIDED else [False] * h
            rec["taken"] = decided
            rec["substituted"] = [decided[s] and hp[s] != -1 and rec["buf_req"][s] != rows[s]
                                  for s in range(h)]
        del _DECIDED[:]
        _TRUTH.write(rec)

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
        batch = len(tokens[0]) if tokens else 1
        decode_trace_key = _trace_key(on_device_sampling, batch)
        step = self._standin_clock
        rows = (list(self._standin_rows) + [None] * (batch * self.data_parallel))
        if not self.trace_ids_decode[decode_trace_key]:
            ids, inputs = {}, []
            for i in range(self.data_parallel):
                tok_t = ttnn.Tensor(tokens[i].tolist())
                pos_t = ttnn.Tensor(current_pos[i].tolist())
                inputs.append([tok_t, pos_t, None, None])
                tid = len(self.mesh_device.traces)
                self.mesh_device.traces[tid] = self._make_trace(tok_t, pos_t)
                ids[i] = tid
            self.trace_ids_decode[decode_trace_key] = ids
            self.trace_inputs_decode[decode_trace_key] = inputs
        prev_ods, prev_batch = self._prev_on_device_sampling, self._prev_decode_batch
        self._prev_on_device_sampling, self._prev_decode_batch = on_device_sampling, batch
        reset_inputs = reset_batch or not on_device_sampling or \
            (prev_ods is not None and prev_ods != on_device_sampling) or \
            (prev_batch is not None and prev_batch != batch)
        for i in range(self.data_parallel):
            tok_t, pos_t = self.trace_inputs_decode[decode_trace_key][i][:2]
            if reset_inputs or tok_t.step is None:
                w = rows[i * batch:(i + 1) * batch]
                copy_host_to_device([(tokens[i].tolist(), w, step),
                                     (current_pos[i].tolist(), w, step)], [tok_t, pos_t])
        self._standin_step_now = step
        for i, trace_id in self.trace_ids_decode[decode_trace_key].items():
            ttnn.execute_trace(self.mesh_device, trace_id, cq_id=0, blocking=False)
        return [self.trace_inputs_decode[decode_trace_key][i][0]
                for i in range(self.data_parallel)]

    def _make_trace(self, tok_t, pos_t):
        """The captured decode: sample each active row's next token into the
        token input and move its position on (the device keeps what it wrote)."""
        def run():
            for s in range(len(pos_t.data)):
                if pos_t.data[s] != -1:
                    tok_t.data[s] = next_token(tok_t.data[s], pos_t.data[s])
                    pos_t.data[s] += 1
            tok_t.step = pos_t.step = self._standin_step_now
        return run
