#!/usr/bin/env python3
"""Reference replay: the six-rule merge replay of docs/audit-format.md written
the plain way, with the standard json module, for cross-checking ttaudit and as
the baseline of `make bench`. Reads plain audit JSONL and capture files (gzip
by its magic bytes); prints the same JSON projection as
tests/e2e/expect-filter.jq. Replay.exact() gives what that projection leaves
out (rates' trials, first contradictions, each garbage value's count, the
lines of truncated files), for tests/e2e/14-corners.py.

It shares no code with ttaudit: strings are Python strings (a NUL or a lone
surrogate is a character like any other), integers are unbounded and checked
against int64 where the format says so, and every rule is written from the
spec's table.

usage: replay_ref.py [--max-pos N] [--rules LIST] FILE...
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import zlib

RULES = ("bare", "prefilled", "batch", "lifetime", "stamp", "bound")
NEEDS = {"prefilled": "prefilled", "lifetime": "buf_step", "stamp": "stamp", "bound": "max_pos"}
I64 = (-(1 << 63), (1 << 63) - 1)
COUNTS = ("merges", "taken", "substitutions", "unverified", "prevented", "forgone",
          "fired", "skipped", "shape_fallback", "rejected_unverified")
MAX_LINE = 1 << 20
MAX_DEPTH = 64
MAX_SLOTS = 4096
CONTEXT = ("decode", "prefill", "width_change", "request", "trace")


class Malformed(Exception):
    pass


def need(cond):
    if not cond:
        raise Malformed()


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and I64[0] <= v <= I64[1]


def opt_int(ev, key, minimum=None):
    v = ev.get(key)
    if v is None:
        return None
    need(is_int(v))
    if minimum is not None:
        need(v >= minimum)
    return v


def opt_bool(ev, key):
    v = ev.get(key)
    need(v is None or isinstance(v, bool))
    return bool(v)


def opt_str(ev, key):
    v = ev.get(key)
    need(v is None or isinstance(v, str))
    return v


def int_array(ev, key, cap=True):
    v = ev.get(key)
    if v is None:
        return None
    need(isinstance(v, list) and all(is_int(x) for x in v))
    need(not cap or len(v) <= MAX_SLOTS)
    return v


def depth(v):
    """Nesting depth of a JSON value, containers counted (the root object is 1)."""
    best, stack = 0, [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (list, dict)):
            best = max(best, d)
            stack.extend((y, d + 1) for y in (x.values() if isinstance(x, dict) else x))
    return best


def no_constant(name):
    raise Malformed()


def f32_like(v):
    if not (-(1 << 31) <= v < (1 << 31)):
        return False
    f = struct.unpack("<f", struct.pack("<i", v))[0]
    return f == f and abs(f) != float("inf") and 1.0 <= abs(f) <= 16777216.0


def decode_merge(ev):
    """The merge's fields, validated as the format says; Malformed otherwise."""
    need(is_int(ev.get("step")))
    host = int_array(ev, "host_pos")
    dev = int_array(ev, "dev_pos")
    need(host is not None and dev is not None)
    h = len(host)
    opt_bool(ev, "reset_batch")
    m = {"step": ev["step"], "host": host, "dev": dev, "h": h,
         "mode_switched": opt_bool(ev, "mode_switched")}
    int_array(ev, "host_tok")
    int_array(ev, "dev_tok")
    pre = int_array(ev, "prefilled", cap=False)
    m["prefilled"] = None if pre is None else {s for s in pre if 0 <= s < h}
    m["buf_step"] = opt_int(ev, "buf_step")
    gen, buf_gen = opt_int(ev, "gen"), opt_int(ev, "buf_gen")
    m["gen"] = (gen, buf_gen) if gen is not None and buf_gen is not None else None
    sg, bsg = int_array(ev, "slot_gen"), int_array(ev, "buf_slot_gen")
    need(sg is None or len(sg) == h)
    need(bsg is None or len(bsg) == h)
    m["slot_gen"] = (sg, bsg) if sg is not None and bsg is not None else None
    reqs = []
    for key in ("slot_req", "buf_req"):
        v = ev.get(key)
        if v is not None:
            need(isinstance(v, list) and len(v) == h and
                 all(x is None or isinstance(x, str) for x in v))
        reqs.append(v)
    m["req"] = tuple(reqs) if reqs[0] is not None and reqs[1] is not None else None
    taken = ev.get("taken")
    if taken is not None:
        need(isinstance(taken, list) and len(taken) == h and
             all(isinstance(x, bool) for x in taken))
    m["taken"] = taken
    opt_str(ev, "arm")
    t = ev.get("t")
    need(t is None or (isinstance(t, (int, float)) and not isinstance(t, bool)))
    m["dp"] = opt_int(ev, "dp", 0)
    m["rank"] = opt_int(ev, "rank", 0)
    return m


def decode_event(ev):
    """(kind, fields) of a plain event object, validated; Malformed otherwise."""
    kind = ev.get("ev")
    need(isinstance(kind, str))
    if kind == "merge":
        return "merge", decode_merge(ev)
    if kind == "config":
        opt_int(ev, "slots")
        mml = opt_int(ev, "max_model_len")
        need(mml is None or mml >= 0)
        opt_str(ev, "arm")
        # None (absent or null): says nothing about the bound; 0: the length is not known
        return "config", {"max_model_len": mml, "rank": opt_int(ev, "rank", 0)}
    if kind in CONTEXT:
        opt_int(ev, "step")
        opt_int(ev, "slot")
        for k in ("phase", "req", "op", "key"):
            opt_str(ev, k)
        opt_int(ev, "dp", 0)
        opt_int(ev, "rank", 0)
        return "context", None
    if kind == "gate":
        opt_int(ev, "step")
        keep = ev.get("keep")
        need(keep is None or isinstance(keep, bool))
        opt_bool(ev, "supports_async_decode")
        force = opt_bool(ev, "force")
        opt_str(ev, "reason")
        return "gate", {"keep": keep, "force": force, "dp": opt_int(ev, "dp", 0),
                        "rank": opt_int(ev, "rank", 0)}
    return "other", None


class Proc:
    def __init__(self, rules):
        self.c = {r: dict.fromkeys(COUNTS, 0) for r in rules}
        self.fp = {r: [0, 0] for r in rules}
        self.subst_merges = dict.fromkeys(rules, 0)   # merges with a substitution
        self.first = dict.fromkeys(rules)             # (line, step) of the first contradiction
        self.values = {}                              # garbage value -> positions
        self.taken_events = 0
        self.garbage = 0
        self.f32 = 0
        self.max_pos = 0
        self.gate_refused = 0
        self.gate_forced = 0


def allowed(rule, m, max_pos, active):
    """The slots combination `rule` allows (the intersection of its parts)."""
    host, dev, h = m["host"], m["dev"], m["h"]
    g = set(active)
    for part in rule.split("+"):
        if part == "prefilled":
            g -= m["prefilled"]
        elif part == "batch":
            if any((dev[s] != -1) != (host[s] != -1) for s in range(h)):
                g = set()
        elif part == "lifetime":
            if not (m["buf_step"] == m["step"] - 1 and not m["mode_switched"]):
                g = set()
        elif part == "stamp":
            if m["slot_gen"] is not None:
                sg, bsg = m["slot_gen"]
                g = {s for s in g if sg[s] == bsg[s]}
            elif m["gen"][0] != m["gen"][1]:
                g = set()
        elif part == "bound":
            g = {s for s in g if -1 <= dev[s] < max_pos}
    return g


def parts_of(rule):
    parts = [p for p in RULES if p in rule.split("+")]
    if len(parts) > 1 and "bare" in parts:
        parts.remove("bare")
    return "+".join(parts)


class Replay:
    def __init__(self, max_pos, rules):
        self.max_pos_override = max_pos
        self.rules = rules
        self.total = Proc(rules)
        self.malformed = 0
        self.lost = 0
        self.uncertain = 0
        self.uncertain_events = 0
        self.seen_id = set()
        self.seen_content = set()
        self.duplicates = 0
        self.truncated = 0
        self.truncated_lines = []
        self.no_audit = 0
        self.first_step = {}

    def merge(self, p, m, line):
        host, dev, h = m["host"], m["dev"], m["h"]
        max_pos = self.max_pos_override or p.max_pos
        for r in self.rules:
            p.c[r]["merges"] += 1
        if len(dev) < h:
            for r in self.rules:
                p.c[r]["shape_fallback"] += 1
            return
        gpos = max_pos or (1 << 24)
        for s in range(h):
            if dev[s] < -1 or dev[s] >= gpos:
                p.garbage += 1
                p.f32 += f32_like(dev[s])
                p.values[dev[s]] = p.values.get(dev[s], 0) + 1
        active = [s for s in range(h) if host[s] != -1]
        bare = {s for s in active if dev[s] == host[s] or dev[s] == host[s] + 1}
        truth = {}
        for s in active:
            req = m["req"]
            if req is not None and req[0][s] is not None and req[1][s] is not None:
                truth[s] = req[0][s] != req[1][s]
            elif m["slot_gen"] is not None:
                truth[s] = m["slot_gen"][0][s] != m["slot_gen"][1][s]
            elif m["gen"] is not None:
                truth[s] = m["gen"][0] != m["gen"][1]
            elif m["buf_step"] is not None:
                truth[s] = (m["buf_step"] != m["step"] - 1 or
                            (m["prefilled"] is not None and s in m["prefilled"]))
            else:
                truth[s] = None
        taken = m["taken"]
        if taken is not None:
            p.taken_events += 1
        have = {"prefilled": m["prefilled"] is not None, "buf_step": m["buf_step"] is not None,
                "stamp": m["slot_gen"] is not None or m["gen"] is not None,
                "max_pos": bool(max_pos)}
        for r in self.rules:
            c = p.c[r]
            if any(part in NEEDS and not have[NEEDS[part]] for part in r.split("+")):
                c["skipped"] += 1
                continue
            g = allowed(r, m, max_pos, active)
            take = bare & g
            if active and g != set(active):
                c["fired"] += 1
            for s in take:
                c["taken"] += 1
                if truth[s] is None:
                    c["unverified"] += 1
                elif truth[s]:
                    c["substitutions"] += 1
            p.subst_merges[r] += any(truth[s] for s in take)
            for s in bare - take:
                if truth[s] is None:
                    c["rejected_unverified"] += 1
                elif truth[s]:
                    c["prevented"] += 1
                else:
                    c["forgone"] += 1
            if taken is not None:
                p.fp[r][0] += 1
                if any(taken[s] != (s in take) for s in active):
                    p.fp[r][1] += 1
                    if p.first[r] is None:
                        p.first[r] = (line, m["step"])

    def chunks(self, path):
        """The bytes of a file, decompressed when it starts with gzip's magic (member by
        member); self.cut is set when a stream ends early or is corrupt."""
        self.cut = False
        f = sys.stdin.buffer if path == "-" else open(path, "rb")
        try:
            head = f.read(2)
            if head != b"\x1f\x8b":
                yield head
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        return
                    yield b
            d, data = zlib.decompressobj(31), head
            while True:
                if not data:
                    data = f.read(1 << 20)
                    if not data:
                        self.cut = not d.eof
                        return
                if d.eof:
                    d = zlib.decompressobj(31)
                saved = d.copy()
                try:
                    out = d.decompress(data)
                except zlib.error:
                    # what zlib decoded before it failed (for a bad check value, the
                    # whole member) is read: again from before the call, a byte at a time
                    d, out = saved, []
                    for k in range(len(data)):
                        try:
                            out.append(d.decompress(data[k:k + 1]))
                        except zlib.error:
                            break
                    yield b"".join(out)
                    self.cut = True
                    return
                data = d.unused_data
                if out:
                    yield out
        finally:
            if f is not sys.stdin.buffer:
                f.close()

    def file(self, path):
        if path != "-":
            st = os.stat(path)
            if (st.st_dev, st.st_ino) in self.seen_id:
                self.duplicates += 1
                return
            self.seen_id.add((st.st_dev, st.st_ino))
        procs, cfgs = {}, []
        # malformed, lost, uncertain, uncertain events, events, line number
        counts = [0, 0, 0, 0, 0, 0]
        digest, size, rest, first = hashlib.sha256(), 0, b"", True
        for b in self.chunks(path):
            digest.update(b)
            size += len(b)
            rest += b
            parts = rest.split(b"\n")
            rest = parts.pop()
            for line in parts:
                if first and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                first = False
                counts[5] += 1
                self.line(line, procs, cfgs, counts)
        if self.cut:
            self.truncated += 1
            self.truncated_lines.append(counts[5])
        elif rest:
            if first and rest.startswith(b"\xef\xbb\xbf"):
                rest = rest[3:]
            counts[5] += 1
            self.line(rest, procs, cfgs, counts)
        if not self.cut and size:
            key = (digest.digest(), size)
            if key in self.seen_content:
                self.duplicates += 1
                return
            self.seen_content.add(key)
        self.malformed += counts[0]
        self.lost += counts[1]
        self.uncertain += counts[2]
        self.uncertain_events += counts[3]
        if not counts[4]:
            self.no_audit += 1     # malformed lines alone are no audit either
        first = {}
        for p in procs.values():
            self.absorb(p)
            for r in self.rules:
                if p.first[r] is not None and (r not in first or p.first[r] < first[r]):
                    first[r] = p.first[r]    # the file's first: the earliest line
        for r, (_, step) in first.items():
            self.first_step.setdefault(r, step)  # the first file's that has one

    def proc(self, procs, cfgs, pid, rank, dp):
        key = (pid, rank, dp)
        if key not in procs:
            p = procs[key] = Proc(self.rules)
            for cpid, crank, mml in cfgs:
                if cpid == pid and (crank is None or crank == rank):
                    p.max_pos = mml
        return procs[key]

    def line(self, line, procs, cfgs, counts):
        if len(line) > MAX_LINE:
            counts[0] += 1
            return
        if not line.strip(b" \t\r"):
            return
        # a brace not followed (after blanks) by '"', '}' or the line's end
        # starts no JSON object: a log's line ("{{", "{%", "{'"), not malformed
        t = line.lstrip(b" \t")
        if t[:1] == b"{" and t[1:].lstrip(b" \t\r")[:1] not in (b'"', b"}", b""):
            return
        try:
            obj = json.loads(line.decode("utf-8", "surrogateescape"), parse_constant=no_constant)
            need(isinstance(obj, dict))
            need(depth(obj) <= MAX_DEPTH)
            pid = None
            if "ev" not in obj and "src" in obj:
                src = obj["src"]
                need(isinstance(src, str))
                if is_int(obj.get("pid")):
                    pid = obj["pid"]
                if src in ("lost", "uncertain"):
                    need(is_int(obj.get("count")) and obj["count"] >= 0)
                    if src == "lost":
                        counts[1] += obj["count"]
                    else:
                        counts[2] += obj["count"]
                        rec = obj.get("record")
                        if isinstance(rec, dict) and ("ev" in rec or (
                                rec.get("src") == "audit" and "event" in rec)):
                            counts[3] += 1
                    return
                if src != "audit":
                    return
                obj = obj.get("event")
                need(isinstance(obj, dict))
            elif "ev" not in obj:
                return
            kind, f = decode_event(obj)
        except (Malformed, ValueError, RecursionError):
            counts[0] += 1
            return
        counts[4] += 1
        if kind == "config":
            if f["max_model_len"] is not None:
                cfgs.append((pid, f["rank"], f["max_model_len"]))
                for (ppid, prank, _), p in procs.items():
                    if ppid == pid and (f["rank"] is None or f["rank"] == prank):
                        p.max_pos = f["max_model_len"]
        elif kind == "merge":
            self.merge(self.proc(procs, cfgs, pid, f["rank"], f["dp"]), f, counts[5])
        elif kind == "gate":
            p = self.proc(procs, cfgs, pid, f["rank"], f["dp"])
            if f["keep"] is False:
                p.gate_refused += 1
            if f["keep"] is True and f["force"]:
                p.gate_forced += 1

    def absorb(self, p):
        t = self.total
        for r in self.rules:
            for k in COUNTS:
                t.c[r][k] += p.c[r][k]
            t.fp[r][0] += p.fp[r][0]
            t.fp[r][1] += p.fp[r][1]
        for r in self.rules:
            t.subst_merges[r] += p.subst_merges[r]
        for v, n in p.values.items():
            t.values[v] = t.values.get(v, 0) + n
        t.taken_events += p.taken_events
        t.garbage += p.garbage
        t.f32 += p.f32
        t.gate_refused += p.gate_refused
        t.gate_forced += p.gate_forced

    def report(self):
        t = self.total
        consistent = [r for r in self.rules if t.fp[r][0] > 0 and t.fp[r][1] == 0]
        never = [r for r in self.rules if t.fp[r][0] == 0]
        if not t.taken_events:
            verdict, never = "NO_TAKEN", []
        elif never or len(consistent) > 1:
            verdict = "WITHHELD"
        else:
            verdict = "CONSISTENT" if consistent else "INCONSISTENT"
        rules = {}
        for r in self.rules:
            c = dict(t.c[r])
            c["evaluable"] = c["skipped"] + c["shape_fallback"] != c["merges"]
            rules[r] = c
        return {"rules": rules, "garbage": {"count": t.garbage, "float32_like": t.f32},
                "fingerprint": {"consistent": consistent, "verdict": verdict,
                                "never_evaluated": never},
                "malformed": self.malformed, "capture_lost": self.lost,
                "capture_uncertain": self.uncertain, "uncertain_events": self.uncertain_events,
                "gate": {"refused": t.gate_refused, "forced": t.gate_forced},
                "duplicates": self.duplicates, "truncated": self.truncated}


    def exact(self):
        """What expect-filter.jq leaves out: each rule's rate (merges with a
        substitution of the merges it evaluated) and first contradicting step,
        every garbage value's whole count, the lines read of each truncated
        file, and how many files held no audit event."""
        t = self.total
        rules = {}
        for r in self.rules:
            c = t.c[r]
            rules[r] = {"k": t.subst_merges[r],
                        "n": c["merges"] - c["skipped"] - c["shape_fallback"],
                        "first_mismatch_step": self.first_step.get(r)}
        return {"rules": rules, "garbage_values": dict(t.values),
                "truncated_lines": list(self.truncated_lines), "no_audit": self.no_audit}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-pos", type=int, default=0)
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    rules = []
    for r in a.rules.split(","):
        r = parts_of(r)
        if r not in rules:
            rules.append(r)
    rp = Replay(a.max_pos, rules)
    for p in a.files:
        rp.file(p)
    json.dump(rp.report(), sys.stdout, sort_keys=True, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
