"""The stand-in's own account of what happened (tests only; nothing of
upstream). The stand-in runner records, per decode, the request in each row
and the host inputs it gave the generator; the stand-in model records, at
every execution of its decode, the token and position each slot was decoded
with. From those alone, never from the generator's code or the kit, the
tests know for every reset step (reset_batch: the only steps a keep runs):

  - taken: the slots decoded with values other than the host's, which can
    only have come from the device buffer;
  - source and writer: the buffer entry those values were in and the request
    it was written for (the buffer after an execution is known: the stand-in
    model is deterministic, next_token of what it decoded, the position one
    on, -1 left alone), the slot remap's entry first;
  - substituted: taken from an entry written for another request;
  - ambiguous: not taken, but the compared entry held the host's own values,
    so whether the code "took" it cannot be seen and does not matter;
  - dev_tok, dev_pos: the entry each slot is compared with (the slot remap's
    entry, else its own row), as the buffer held it; buf_step: the step of
    the execution that wrote the buffer; buf_req: who each compared entry
    was written for;
  - prefilled and mode_switched, on the decode record: the rows the runner
    prefilled since the last decode (a prefill without empty_slots fills
    rows 0..n-1) and whether a prefill came between.

Written as JSON lines to $STANDIN_TRUTH when it is set, and kept in memory
(TRUTH.records)."""

import json
import os

VOCAB = 50021


def next_token(tok, pos):
    """The stand-in language model: the token after `tok` at position `pos`."""
    return (int(tok) * 1103515245 + int(pos) * 12345 + 7) % VOCAB


class _Truth:
    def __init__(self):
        self.records = []
        self.step = -1
        self._decode = None
        self._last = {}         # dp -> (step, tok, pos, rows) of its last execution
        self._prefilled = set()
        self._after_prefill = True
        path = os.environ.get("STANDIN_TRUTH")
        self._f = open(path, "a", encoding="utf-8") if path else None

    def _write(self, rec):
        self.records.append(rec)
        if self._f is not None:
            self._f.write(json.dumps(rec, sort_keys=True) + "\n")
            self._f.flush()

    def prefill(self, step, rows):
        self.step = step
        self._decode = None
        self._prefilled.update(range(len(rows)))
        self._after_prefill = True
        self._write({"kind": "prefill", "step": step, "rows": list(rows)})

    def decode(self, step, rows, host_tok, host_pos, reset_batch, slot_remap):
        self.step = step
        self._decode = {"kind": "decode", "step": step, "rows": list(rows),
                        "host_tok": [int(t) for t in host_tok],
                        "host_pos": [int(p) for p in host_pos],
                        "reset_batch": bool(reset_batch),
                        "slot_remap": None if slot_remap is None else [int(r) for r in slot_remap],
                        "prefilled": sorted(self._prefilled),
                        "mode_switched": self._after_prefill}
        self._prefilled = set()
        self._after_prefill = False
        self._write(self._decode)

    def executed(self, dp, tok, pos):
        """The model ran chunk `dp` of the current decode with these inputs."""
        tok = [int(t) for t in tok]
        pos = [int(p) for p in pos]
        w = len(pos)
        base = dp * w
        d = self._decode
        rows = ((d["rows"] if d else []) + [None] * (base + w))[base:base + w]
        rec = {"kind": "exec", "step": self.step, "dp": dp, "rows": rows, "tok": tok, "pos": pos}
        prev = self._last.get(dp)
        if d is not None and d["reset_batch"] and prev is not None and prev[0] != self.step:
            rec.update(self._judge(d, base, w, tok, pos, prev))
        self._last[dp] = (self.step, tok, pos, rows)
        self._write(rec)

    @staticmethod
    def _judge(d, base, w, tok, pos, prev):
        _, ptok, ppos, prows = prev
        dev = [(next_token(t, p), p + 1 if p >= 0 else p) for t, p in zip(ptok, ppos)]
        host = list(zip(d["host_tok"][base:base + w], d["host_pos"][base:base + w]))
        remap = d["slot_remap"]
        taken, source, writer, substituted, ambiguous = [], [], [], [], []
        cmp_tok, cmp_pos, buf_req = [], [], []
        for s in range(w):
            first = s
            if remap is not None and base + s < len(remap):
                first = remap[base + s] - base
            ok = 0 <= first < w
            cmp_tok.append(dev[first][0] if ok else None)
            cmp_pos.append(dev[first][1] if ok else None)
            buf_req.append(prows[first] if ok else None)
            got = (tok[s], pos[s])
            if host[s][1] < 0 or got == host[s]:
                taken.append(False)
                source.append(None)
                writer.append(None)
                substituted.append(False)
                ambiguous.append(host[s][1] >= 0 and 0 <= first < w and dev[first] == host[s])
                continue
            cands = ([first] if 0 <= first < w and dev[first] == got else []) + \
                [j for j in range(w) if dev[j] == got and j != first]
            j = cands[0] if cands else None
            taken.append(True)
            source.append(j)
            writer.append(prows[j] if j is not None else None)
            substituted.append(j is not None and prows[j] != d["rows"][base + s])
            ambiguous.append(False)
        return {"taken": taken, "source": source, "writer": writer, "substituted": substituted,
                "ambiguous": ambiguous, "dev_tok": cmp_tok, "dev_pos": cmp_pos,
                "buf_step": prev[0], "buf_req": buf_req, "mode_switched": d["mode_switched"],
                "prefilled": sorted(r - base for r in d["prefilled"] if base <= r < base + w),
                "host_tok": [t for t, _ in host], "host_pos": [p for _, p in host]}


TRUTH = _Truth()
