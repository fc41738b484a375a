"""Stand-in for tenstorrent/tt-metal models/demos/gemma4/tt/async_decode.py
at commit 216c8690bb831f51872009b1a9062953b80e7664 (tests only): Gemma4's
helper, the only merge_async_ahead_decode_tokens upstream has. Its facts,
written again: merge_async_ahead_decode_tokens(host_toks, host_pos,
dev_toks_full, dev_pos_full, slot_remap_local=None, prefilled_local=None)
-> (tokens, positions, "merged" | "host_fallback"); it flattens its inputs;
falls back to the host when either device buffer is narrower than the host
batch, or the remap has another length or points outside the device rows;
takes the front host_b device rows when there is no remap (wider device
buffers are accepted); and keeps the device entry where
(host_pos >= 0) & ((dev_pos == host_pos) | (dev_pos == host_pos + 1)),
except the prefilled slots."""

import torch


def merge_async_ahead_decode_tokens(
    host_toks,
    host_pos,
    dev_toks_full,
    dev_pos_full,
    slot_remap_local=None,
    prefilled_local=None,
):
    host_toks = host_toks.reshape(-1)
    host_pos = host_pos.reshape(-1).to(torch.int64)
    host_b = int(host_toks.shape[0])
    dev_toks_full = dev_toks_full.reshape(-1)
    dev_pos_full = dev_pos_full.reshape(-1).to(torch.int64)
    tok_len, pos_len = int(dev_toks_full.shape[0]), int(dev_pos_full.shape[0])
    if tok_len < host_b or pos_len < host_b:
        return host_toks, host_pos, "host_fallback"
    if slot_remap_local is not None:
        rows = torch.as_tensor(slot_remap_local).long().reshape(-1)
        if int(rows.numel()) != host_b or bool((rows < 0).any()) or bool((rows >= min(tok_len, pos_len)).any()):
            return host_toks, host_pos, "host_fallback"
        dev_toks, dev_pos = dev_toks_full[rows], dev_pos_full[rows]
    else:
        dev_toks, dev_pos = dev_toks_full[:host_b], dev_pos_full[:host_b]
    use_dev = (host_pos >= 0) & ((dev_pos == host_pos) | (dev_pos == host_pos + 1))
    for slot in prefilled_local or ():
        if 0 <= slot < host_b:
            use_dev[slot] = False
    return (torch.where(use_dev, dev_toks.to(host_toks.dtype), host_toks),
            torch.where(use_dev, dev_pos, host_pos), "merged")
