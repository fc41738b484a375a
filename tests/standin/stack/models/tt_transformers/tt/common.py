"""Stand-in for tenstorrent/tt-metal models/tt_transformers/tt/common.py
(tests only): the names models/tt_transformers/tt/generator.py imports from
it at 50868c00281366b286bdf5ccb7b50c4b7b56cef1 (Mode, copy_host_to_device,
get_all_padded_prefill_lengths, get_block_size, get_max_prefill_chunk_size,
get_padded_prefill_len, num_blocks_in_seq). copy_host_to_device follows the
upstream function's two modes: without device_tensors it puts each host
tensor on the device and returns the new ones (None stays None); with them
it overwrites those tensors in place, which is how a trace's inputs are
restaged. The padding helpers are ours (a power of two from 128)."""

import enum
import math

import ttnn


class Mode(enum.Enum):
    PREFILL = "prefill"
    DECODE = "decode"


def copy_host_to_device(host_tensors, device_tensors=None, mesh_device=None, shard_specs=None):
    if device_tensors is None:
        assert mesh_device is not None, "mesh_device is required when device_tensors is None"
        return [ttnn.to_device(t, device=mesh_device) if t is not None else None
                for t in host_tensors]
    for i in range(len(host_tensors)):
        if host_tensors[i] is None:
            assert device_tensors[i] is None
            continue
        ttnn.copy_host_to_device_tensor(host_tensors[i], device_tensors[i])
    return device_tensors


def get_padded_prefill_len(seq_len):
    if seq_len <= 128:
        return 128
    return 1 << (int(seq_len) - 1).bit_length()


def get_all_padded_prefill_lengths(max_len):
    out, n = [], 128
    while n <= max(128, max_len):
        out.append(n)
        n *= 2
    return out


def get_block_size(kv_cache):
    return int(kv_cache[0][0].shape[2])


def num_blocks_in_seq(seq_len, block_size):
    return math.ceil(seq_len / block_size)


def get_max_prefill_chunk_size(seq_len, max_prefill_seq_len):
    n = max_prefill_seq_len
    while n > 1 and seq_len % n:
        n //= 2
    return n
