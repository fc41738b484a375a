#!/usr/bin/env python3
"""Writes a seeded merge-audit corpus with full ground-truth fields.

A small model of the tt-metal generator's async-ahead merge: continuous
batching over B slots, a device buffer of (position, token) captured at
decode steps but copied to the host only on some of them, merges on
reset_batch / mode_switched steps, reused slots, and resident float32
garbage in inactive buffer slots that a plus_one grows every step. The
`taken` field records what the engaged arm (--arm) really took.

Output is spec merge-audit JSONL (config, prefill, decode, request, merge),
deterministic for a given seed. Standard library only.

usage: gencorpus.py --seed S --merges N [--slots B] [--arm R] [--out FILE]
                    [--max-model-len L] [--refresh P] [--no-truth]
"""
import argparse
import gzip
import json
import random
import struct
import sys

RULES = ("bare", "prefilled", "batch", "lifetime", "stamp", "bound")


def float32_garbage(rng):
    """An int32 whose bits read as a float32 of magnitude in [2^10, 2^20]."""
    f = rng.uniform(1024.0, 1048576.0)
    return struct.unpack("<i", struct.pack("<f", f))[0]


def allowed(rule, ev, max_pos):
    """The set of slots the (possibly combined) rule allows on event ev."""
    host, dev = ev["host_pos"], ev["dev_pos"]
    h = len(host)
    g = {s for s in range(h) if host[s] != -1}
    for part in rule.split("+"):
        if part == "prefilled":
            g -= set(ev.get("prefilled", []))
        elif part == "batch":
            if any((dev[s] != -1) != (host[s] != -1) for s in range(h)):
                g = set()
        elif part == "lifetime":
            if not (ev["buf_step"] == ev["step"] - 1 and not ev.get("mode_switched")):
                g = set()
        elif part == "stamp":
            g = {s for s in g if ev["slot_gen"][s] == ev["buf_slot_gen"][s]}
        elif part == "bound":
            g = {s for s in g if -1 <= dev[s] < max_pos}
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--merges", type=int, default=3000)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--arm", default="batch")
    ap.add_argument("--out", default="-")
    ap.add_argument("--max-model-len", type=int, default=131072)
    ap.add_argument("--refresh", type=float, default=0.15,
                    help="chance that a decode step refreshes the host's copy of the buffer")
    ap.add_argument("--garbage", type=float, default=0.02,
                    help="chance that an inactive buffer slot holds float32 garbage")
    ap.add_argument("--no-truth", action="store_true",
                    help="positions only (a legacy audit)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    B = a.slots
    if a.out == "-":
        out = sys.stdout
    elif a.out.endswith(".gz"):
        out = gzip.open(a.out, "wt", compresslevel=6)
    else:
        out = open(a.out, "w")
    w = out.write
    dumps = json.JSONEncoder(separators=(",", ":")).encode

    pos = [-1] * B          # host position per slot
    tok = [-1] * B
    req = [None] * B
    left = [0] * B          # tokens still to generate
    slot_gen = [0] * B
    gen = 0                 # batch generation: bumped on every composition change
    n_req = 0
    prefilled = set()
    # the host's copy of the device buffer: (pos, tok, req, slot_gen) per slot
    buf = {"pos": [-1] * B, "tok": [-1] * B, "req": [None] * B, "sg": [0] * B,
           "step": 0, "gen": 0}
    garbage = [None] * B    # resident garbage in the buffer's inactive slots
    composition_changed = False
    step = 0
    merges = 0

    if not a.no_truth:
        w(dumps({"ev": "config", "slots": B, "max_model_len": a.max_model_len, "arm": a.arm}) + "\n")
    while merges < a.merges:
        step += 1
        free = [s for s in range(B) if req[s] is None]
        if free and rng.random() < 0.35:
            s = rng.choice(free)
            n_req += 1
            req[s] = "r%d" % n_req
            # narrow prompt lengths make stale positions coincide now and then
            pos[s] = rng.randint(20, 40)
            tok[s] = rng.randrange(32000)
            left[s] = rng.randint(4, 30)
            slot_gen[s] += 1
            gen += 1
            prefilled.add(s)
            composition_changed = True
            if not a.no_truth:
                w(dumps({"ev": "prefill", "step": step, "slots": [s]}) + "\n")
                w(dumps({"ev": "request", "phase": "start", "req": req[s], "slot": s,
                         "step": step}) + "\n")
            continue
        # a decode step; the merge block runs first when the batch was reset
        mode_switched = rng.random() < 0.03
        if (composition_changed or mode_switched) and any(r is not None for r in req):
            host_pos = list(pos)
            dev_pos = []
            for s in range(B):
                if buf["req"][s] is None:
                    dev_pos.append(garbage[s] if garbage[s] is not None else -1)
                else:
                    dev_pos.append(buf["pos"][s])
            ev = {"ev": "merge", "step": step, "reset_batch": composition_changed,
                  "mode_switched": mode_switched, "host_pos": host_pos, "dev_pos": dev_pos}
            if not a.no_truth:
                ev.update({
                    "host_tok": list(tok), "dev_tok": list(buf["tok"]),
                    "prefilled": sorted(prefilled), "buf_step": buf["step"],
                    "gen": gen, "buf_gen": buf["gen"], "slot_gen": list(slot_gen),
                    "buf_slot_gen": list(buf["sg"]), "slot_req": list(req),
                    "buf_req": list(buf["req"]), "arm": a.arm})
                g = allowed(a.arm, ev, a.max_model_len)
                ev["taken"] = [s in g and host_pos[s] != -1 and
                               (dev_pos[s] == host_pos[s] or dev_pos[s] == host_pos[s] + 1)
                               for s in range(B)]
            w(dumps(ev) + "\n")
            merges += 1
            composition_changed = False
        for s in range(B):
            if req[s] is None:
                continue
            pos[s] += 1
            tok[s] = rng.randrange(32000)
            left[s] -= 1
        prefilled.clear()
        if not a.no_truth:
            w(dumps({"ev": "decode", "step": step,
                     "slots": [s for s in range(B) if req[s] is not None]}) + "\n")
        # the device wrote its buffer one ahead; the host sees it only sometimes
        for s in range(B):
            if garbage[s] is not None:
                garbage[s] += 1
        if rng.random() < a.refresh:
            buf = {"pos": [p + 1 if r is not None else -1 for p, r in zip(pos, req)],
                   "tok": [rng.randrange(32000) if r is not None else -1 for r in req],
                   "req": list(req), "sg": list(slot_gen), "step": step, "gen": gen}
            garbage = [float32_garbage(rng) if req[s] is None and rng.random() < a.garbage
                       else None for s in range(B)]
        for s in range(B):
            if req[s] is not None and left[s] <= 0:
                if not a.no_truth:
                    w(dumps({"ev": "request", "phase": "finish", "req": req[s], "slot": s,
                             "step": step}) + "\n")
                req[s] = None
                pos[s] = -1
                tok[s] = -1
                gen += 1
                composition_changed = True
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
