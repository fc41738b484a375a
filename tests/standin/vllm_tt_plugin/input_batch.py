"""Stand-in for vllm_tt_plugin/input_batch.py: the persistent batch. Rows
are kept dense: a request that finishes leaves a hole that the last row
fills (the condense), and the move is recorded as the slot remap that the
next decode hands the generator (remap[i] = j: slot i's data came from j)."""

from models.tt_transformers.tt.common import Vec


class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids = []
        self._slot_remap = list(range(max_num_reqs))

    @property
    def req_ids(self):
        return list(self._req_ids)

    @property
    def num_reqs(self):
        return len(self._req_ids)

    @property
    def req_id_to_index(self):
        return {r: i for i, r in enumerate(self._req_ids)}

    def add_request(self, req_id):
        self._req_ids.append(req_id)
        return len(self._req_ids) - 1

    def remove_request(self, req_id):
        i = self._req_ids.index(req_id)
        last = len(self._req_ids) - 1
        if i != last:
            self._req_ids[i] = self._req_ids[last]
            self._slot_remap[i] = self._slot_remap[last]
        self._req_ids.pop()

    def pop_slot_remap(self):
        """Return pending slot remap and reset to identity."""
        remap = Vec(self._slot_remap)
        self._slot_remap = list(range(self.max_num_reqs))
        return remap
