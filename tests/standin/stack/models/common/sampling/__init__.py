"""Stand-in for tenstorrent/tt-metal models/common/sampling (tests only):
the names models/tt_transformers/tt/generator.py imports at
50868c00281366b286bdf5ccb7b50c4b7b56cef1 (SamplingParams,
broadcast_sampling_params, chunk_sampling_params, format_sampling_params,
scatter_sampling_params_to_slots), written from its call sites.
SamplingParams has the fields of models/common/sampling/sampling_params.py
as stored at 421a32c198c9ce77908f704f673da5d0a0ffa3f8. The stand-in model
samples greedily, so the values only have to have the right shape."""

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class SamplingParams:
    temperature: object
    top_k: object
    top_p: object
    presence_penalty: object = 0.0
    frequency_penalty: object = 0.0
    repetition_penalty: object = 1.0
    seed: object = None
    enable_log_probs: object = False


def _fields(p):
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}


def _per_slot(v, n):
    if isinstance(v, (list, tuple)):
        v = list(v)
        return (v + [v[-1] if v else None] * n)[:n]
    if hasattr(v, "tolist"):
        return _per_slot(v.tolist(), n)
    return [v] * n


def format_sampling_params(params, batch):
    """`params` with every field a list of `batch` entries (None stays None)."""
    if params is None:
        return None
    return type(params)(**{k: _per_slot(v, batch) for k, v in _fields(params).items()})


def chunk_sampling_params(params, n):
    """`params` split into `n` equal chunks of the batch."""
    lists = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in _fields(params).items()}
    size = None
    for v in lists.values():
        if isinstance(v, (list, tuple)):
            size = len(v)
            break
    if size is None:
        return [params] * n
    step = max(1, size // n)
    out = []
    for i in range(n):
        out.append(type(params)(**{k: (list(v[i * step:(i + 1) * step])
                                       if isinstance(v, (list, tuple)) else v)
                                   for k, v in lists.items()}))
    return out


def broadcast_sampling_params(params, idx, slot_len):
    """Request `idx`'s parameters repeated over `slot_len` slots."""
    one = {}
    for k, v in _fields(params).items():
        if hasattr(v, "tolist"):
            v = v.tolist()
        one[k] = [v[idx] if isinstance(v, (list, tuple)) else v] * slot_len
    return type(params)(**one)


def scatter_sampling_params_to_slots(params, slots, batch):
    """Per-request parameters placed at their slots in a `batch`-wide set."""
    out = {}
    for k, v in _fields(params).items():
        row = [v[-1] if isinstance(v, list) and v else v] * batch
        if isinstance(v, list):
            for i, s in enumerate(slots):
                if i < len(v):
                    row[int(s)] = v[i]
        out[k] = row
    return type(params)(**out)
