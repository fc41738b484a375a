"""Stand-in for vllm_tt_plugin/input_batch.py at tenstorrent/vllm dev
b4dd0fa695bfe85a1f83068bb30dae4220e8334a (tests only): the persistent
batch's rows, as upstream keeps them.

  - _req_ids holds a request id per row, None for a hole left by
    remove_request (which "must always be followed by a call to condense()");
  - add_request(request, req_index=None) fills the given row or appends;
  - condense(empty_req_indices) (indices sorted descending) moves the last
    non-empty row into the smallest hole, repeatedly, and records each move
    in the slot remap: _slot_remap[empty] = _slot_remap[last] ("slot i's data
    came from slot j"), identity otherwise;
  - pop_slot_remap() returns the remap and resets it to identity.

Only the row bookkeeping is kept (token ids live in the runner's request
states here)."""

import torch


class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids = []
        self.req_id_to_index = {}
        self._slot_remap = torch.arange(max_num_reqs, dtype=torch.int32)

    def pop_slot_remap(self):
        remap = self._slot_remap
        self._slot_remap = torch.arange(self.max_num_reqs, dtype=torch.int32)
        return remap

    @property
    def req_ids(self):
        return list(self._req_ids)

    @property
    def num_reqs(self):
        return len(self.req_id_to_index)

    def add_request(self, request, req_index=None):
        if req_index is None:
            req_index = self.num_reqs
        assert req_index < self.max_num_reqs, "req_index=%d >= max_num_reqs" % req_index
        if req_index == len(self._req_ids):
            self._req_ids.append(request.req_id)
        else:
            self._req_ids[req_index] = request.req_id
        self.req_id_to_index[request.req_id] = req_index

    def remove_request(self, req_id):
        req_index = self.req_id_to_index.pop(req_id, None)
        if req_index is None:
            return None
        self._req_ids[req_index] = None
        return req_index

    def condense(self, empty_req_indices):
        num_reqs = self.num_reqs
        if num_reqs == 0:
            self._req_ids.clear()
            return
        last_req_index = num_reqs + len(empty_req_indices) - 1
        while empty_req_indices:
            while last_req_index in empty_req_indices:
                last_req_index -= 1
            empty_index = empty_req_indices.pop()
            if empty_index >= last_req_index:
                break
            self._slot_remap[empty_index] = self._slot_remap[last_req_index]
            req_id = self._req_ids[last_req_index]
            self._req_ids[empty_index] = req_id
            self._req_ids[last_req_index] = None
            self.req_id_to_index[req_id] = empty_index
            last_req_index -= 1
        del self._req_ids[num_reqs:]
