#!/usr/bin/env python3
"""Reference replay: the six-rule merge replay written the plain way, with the
standard json module, for cross-checking ttaudit and as the baseline of
`make bench`. Reads plain audit JSONL and capture files; prints the same JSON
projection as tests/e2e/expect-filter.jq (rules, garbage, fingerprint,
malformed, capture_lost).

usage: replay_ref.py [--max-pos N] FILE...
"""
import argparse
import gzip
import json
import struct
import sys

RULES = ("bare", "prefilled", "batch", "lifetime", "stamp", "bound")
NEEDS = {"prefilled": "prefilled", "lifetime": "buf_step", "stamp": "stamp", "bound": "max_pos"}
I64 = (-(1 << 63), (1 << 63) - 1)
COUNTS = ("merges", "taken", "substitutions", "unverified", "prevented", "forgone",
          "fired", "skipped", "shape_fallback", "rejected_unverified")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and I64[0] <= v <= I64[1]


def int_array(ev, key, n=None):
    v = ev.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(is_int(x) for x in v):
        raise ValueError(key)
    if n is not None and len(v) != n:
        raise ValueError(key)
    return v


def f32_like(v):
    if not (-(1 << 31) <= v < (1 << 31)):
        return False
    f = struct.unpack("<f", struct.pack("<i", v))[0]
    return f == f and abs(f) != float("inf") and 1.0 <= abs(f) <= 16777216.0


class Replay:
    def __init__(self, max_pos):
        self.max_pos_override = max_pos
        self.c = {r: dict.fromkeys(COUNTS, 0) for r in RULES}
        self.fp = {r: [0, 0] for r in RULES}
        self.taken_events = 0
        self.garbage = 0
        self.f32 = 0
        self.malformed = 0
        self.lost = 0

    def merge(self, ev, cfg_max):
        host = int_array(ev, "host_pos")
        dev = int_array(ev, "dev_pos")
        if host is None or dev is None or not is_int(ev.get("step")):
            raise ValueError("merge")
        step = ev["step"]
        for b in ("reset_batch", "mode_switched"):
            if ev.get(b) is not None and not isinstance(ev[b], bool):
                raise ValueError(b)
        h = len(host)
        pre = int_array(ev, "prefilled")
        slot_gen = int_array(ev, "slot_gen", h)
        buf_slot_gen = int_array(ev, "buf_slot_gen", h)
        has_sg = slot_gen is not None and buf_slot_gen is not None
        gen, buf_gen = ev.get("gen"), ev.get("buf_gen")
        has_gen = is_int(gen) and is_int(buf_gen)
        buf_step = ev.get("buf_step")
        has_bs = is_int(buf_step)
        sreq, breq = ev.get("slot_req"), ev.get("buf_req")
        has_req = isinstance(sreq, list) and isinstance(breq, list)
        taken = ev.get("taken")
        max_pos = self.max_pos_override or cfg_max
        for r in RULES:
            self.c[r]["merges"] += 1
        if len(dev) < h:
            for r in RULES:
                self.c[r]["shape_fallback"] += 1
            return
        gpos = max_pos or (1 << 24)
        for s in range(h):
            if dev[s] < -1 or dev[s] >= gpos:
                self.garbage += 1
                self.f32 += f32_like(dev[s])
        active = [s for s in range(h) if host[s] != -1]
        bare = {s for s in active if dev[s] == host[s] or dev[s] == host[s] + 1}
        pset = set(pre or [])
        truth = {}
        for s in active:
            if has_req and sreq[s] is not None and breq[s] is not None:
                truth[s] = sreq[s] != breq[s]
            elif has_sg:
                truth[s] = slot_gen[s] != buf_slot_gen[s]
            elif has_gen:
                truth[s] = gen != buf_gen
            elif has_bs:
                truth[s] = buf_step != step - 1 or s in pset
            else:
                truth[s] = None
        if taken is not None:
            self.taken_events += 1
        have = {"prefilled": pre is not None, "buf_step": has_bs,
                "stamp": has_sg or has_gen, "max_pos": bool(max_pos)}
        for r in RULES:
            c = self.c[r]
            if r in NEEDS and not have[NEEDS[r]]:
                c["skipped"] += 1
                continue
            g = set(active)
            if r == "prefilled":
                g -= pset
            elif r == "batch":
                if any((dev[s] != -1) != (host[s] != -1) for s in range(h)):
                    g = set()
            elif r == "lifetime":
                if not (buf_step == step - 1 and not ev.get("mode_switched")):
                    g = set()
            elif r == "stamp":
                if has_sg:
                    g = {s for s in g if slot_gen[s] == buf_slot_gen[s]}
                elif gen != buf_gen:
                    g = set()
            elif r == "bound":
                g = {s for s in g if -1 <= dev[s] < max_pos}
            take = bare & g
            if active and g != set(active):
                c["fired"] += 1
            for s in take:
                c["taken"] += 1
                if truth[s] is None:
                    c["unverified"] += 1
                elif truth[s]:
                    c["substitutions"] += 1
            for s in bare - take:
                if truth[s] is None:
                    c["rejected_unverified"] += 1
                elif truth[s]:
                    c["prevented"] += 1
                else:
                    c["forgone"] += 1
            if taken is not None:
                self.fp[r][0] += 1
                if any(bool(taken[s]) != (s in take) for s in active):
                    self.fp[r][1] += 1

    def file(self, path):
        op = gzip.open if path.endswith(".gz") else open
        cfg_max = 0
        with (sys.stdin if path == "-" else op(path, "rt")) as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    if not isinstance(obj, dict):
                        raise ValueError("not an object")
                    if "ev" not in obj and "src" in obj:
                        if obj["src"] == "lost":
                            self.lost += obj.get("count", 0)
                            continue
                        if obj["src"] != "audit":
                            continue
                        obj = obj.get("event")
                        if not isinstance(obj, dict):
                            raise ValueError("event")
                    ev = obj.get("ev")
                    if ev == "config":
                        if is_int(obj.get("max_model_len")) and obj["max_model_len"] > 0:
                            cfg_max = obj["max_model_len"]
                    elif ev == "merge":
                        self.merge(obj, cfg_max)
                except (ValueError, TypeError, KeyError):
                    self.malformed += 1

    def report(self):
        consistent = [r for r in RULES if self.fp[r][0] > 0 and self.fp[r][1] == 0]
        if not self.taken_events:
            verdict = "NO_TAKEN"
        else:
            verdict = {0: "INCONSISTENT", 1: "CONSISTENT"}.get(len(consistent), "WITHHELD")
        rules = {}
        for r in RULES:
            c = dict(self.c[r])
            c["evaluable"] = c["skipped"] + c["shape_fallback"] != c["merges"]
            rules[r] = c
        return {"rules": rules, "garbage": {"count": self.garbage, "float32_like": self.f32},
                "fingerprint": {"consistent": consistent, "verdict": verdict},
                "malformed": self.malformed, "capture_lost": self.lost}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-pos", type=int, default=0)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    r = Replay(a.max_pos)
    for p in a.files:
        r.file(p)
    json.dump(r.report(), sys.stdout, sort_keys=True, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
