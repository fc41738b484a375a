#!/usr/bin/env python3
"""Random audits that explore the corners of docs/audit-format.md, each replayed
by ttaudit and by the independent reference (scripts/replay_ref.py, imported
here), whose projections must agree exactly.

The corners: widths 0 to 70 (windows of 64 slots and their tails), positions
at -2, -1, 0, 2^24, INT64_MIN and INT64_MAX, optional fields present, null,
or of a wrong type (malformed lines), request ids with NULs and lone
surrogates, duplicate keys, escaped member names, unknown and look-alike
"ev" values, gate and trace events, rank and dp, configs of 0, null or no
max_model_len, several processes in a capture with lost and uncertain
records, whitespace, byte order marks, gzip whole, cut or with a damaged
check value, --max-pos up to INT64_MAX and --tree. Beside the projection of
tests/e2e/expect-filter.jq, each rule's rate (k of n), its first
contradicting step, every garbage value shown (its whole count, or not shown)
and the lines of a truncated file must agree.

usage: 14-corners.py TTAUDIT WORKDIR [N] [SEED]
"""
import gzip
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import replay_ref  # noqa: E402

I64MIN, I64MAX = -(1 << 63), (1 << 63) - 1
POS = (-2, -1, -1, -1, 0, 1, 2, 20, 21, 22, 99, 100, 1 << 24, I64MIN, I64MAX, I64MAX - 1,
       1206993122, -1206993122)
IDS = ("r1", "r2", "a\u0000b", "a\u0000c", "\ud800", "\udbff", "\udc80", "\udc81",
       "\U0001F600", "", None, None)


def pick(rng, *choices):
    return rng.choice(choices)


def maybe(rng, value, wrong):
    """value, or absent, or null, or now and then a value of the wrong type."""
    r = rng.random()
    if r < 0.25:
        return "<absent>"
    if r < 0.32:
        return None
    if r < 0.36:
        return wrong
    return value


def merge(rng):
    h = pick(rng, 0, 1, 2, 3, 8, 32, 63, 64, 65, 70)
    d = h + pick(rng, 0, 0, 0, 1, -1) if h else pick(rng, 0, 1)
    host = [rng.choice(POS) for _ in range(h)]
    dev = []
    for s in range(max(d, 0)):
        if s < h and rng.random() < 0.5 and host[s] < I64MAX:
            dev.append(host[s] + rng.choice((0, 1)))
        else:
            dev.append(rng.choice(POS))
    step = pick(rng, 5, 100, I64MIN, I64MAX, 0, -3)
    ev = {"ev": "merge", "step": step, "host_pos": host, "dev_pos": dev}
    fields = {
        "reset_batch": (rng.random() < 0.5, 1),
        "mode_switched": (rng.random() < 0.2, "no"),
        "host_tok": ([rng.randrange(-1, 40000) for _ in range(h)], [1.5]),
        "dev_tok": ([rng.randrange(-1, 40000) for _ in range(max(d, 0))], "x"),
        "prefilled": ([rng.randrange(-2, h + 2) for _ in range(rng.randrange(4))], [True]),
        "buf_step": (pick(rng, step - 1 if I64MIN < step else step, step - 2 if step > I64MIN + 1 else step, I64MAX, I64MIN), 2.5),
        "gen": (rng.randrange(3), "1"),
        "buf_gen": (rng.randrange(3), [1]),
        "slot_gen": ([rng.randrange(3) for _ in range(h)], [0] * (h + 1)),
        "buf_slot_gen": ([rng.randrange(3) for _ in range(h)], {"a": 1}),
        "slot_req": ([rng.choice(IDS) for _ in range(h)], [1] * h),
        "buf_req": ([rng.choice(IDS) for _ in range(h)], "r1"),
        "taken": ([rng.random() < 0.4 for _ in range(h)], [0] * h),
        "arm": (pick(rng, "batch", "bare", "batch\u0000"), 7),
        "t": (pick(rng, 1.5, 1790000000, 1e300), "now"),
        "dp": (rng.randrange(3), -1),
        "rank": (rng.randrange(2), "0"),
    }
    for k, (v, wrong) in fields.items():
        v = maybe(rng, v, wrong)
        if v != "<absent>":
            ev[k] = v
    return ev


def event(rng):
    r = rng.random()
    if r < 0.6:
        return merge(rng)
    if r < 0.7:
        ev = {"ev": "config", "max_model_len": pick(rng, 100, 4096, 131072, 0, 0, -5, "x", None)}
        if rng.random() < 0.15:
            del ev["max_model_len"]
        if rng.random() < 0.3:
            ev["rank"] = rng.randrange(2)
        return ev
    if r < 0.78:
        return {"ev": "gate", "step": rng.randrange(50), "keep": pick(rng, False, False, True, None, "no"),
                "force": pick(rng, False, True), "reason": "model does not declare supports_async_decode",
                "dp": pick(rng, 0, 1, -1)}
    if r < 0.84:
        return {"ev": "trace", "step": rng.randrange(50), "op": pick(rng, "replay", "restage", 3),
                "key": "(True, 8)", "dp": rng.randrange(2)}
    if r < 0.9:
        return {"ev": pick(rng, "decode", "prefill", "request", "width_change"), "step": pick(rng, 1, "x", None),
                "slot": pick(rng, 0, 2), "phase": pick(rng, "start", 5), "req": pick(rng, "r1", None)}
    return {"ev": pick(rng, "merge\u0000", "Merge", "heartbeat", "", "gate\u0000"), "step": 1,
            "host_pos": [1], "dev_pos": [1]}


def text_of(rng, obj):
    """The JSON of obj, in one of several writings."""
    s = json.dumps(obj, ensure_ascii=rng.random() < 0.7,
                   separators=(",", ":") if rng.random() < 0.8 else (", ", " : "))
    r = rng.random()
    if r < 0.05 and s.startswith('{"ev"'):
        s = '{"\\u0065v"' + s[5:]                              # an escaped member name
    elif r < 0.1 and s.endswith("}"):
        s = s[:-1] + ',"step":' + str(rng.randrange(9)) + "}"  # a duplicate key (the last decides)
    elif r < 0.13:
        s = s[: rng.randrange(len(s))]                          # a cut line: malformed
    elif r < 0.16:
        s = " \t" + s + " \r"
    return s


def audit(rng):
    lines, capture = [], rng.random() < 0.4
    pids = [101, 202, 303][: rng.randrange(1, 4)]
    for _ in range(rng.randrange(1, 25)):
        ev = event(rng)
        if capture and rng.random() < 0.85:
            r = rng.random()
            pid = rng.choice(pids)
            if r < 0.08:
                rec = {"src": "lost", "count": pick(rng, 3, -1, "x")}
            elif r < 0.16:
                rec = {"src": "uncertain", "pid": pid, "count": rng.randrange(3), "reason": "in flight"}
                if rng.random() < 0.6:
                    rec["record"] = {"src": "audit", "pid": pid, "event": ev}
            elif r < 0.2:
                rec = {"src": "end", "pid": pid, "how": "signal", "signal": 9, "by": "parent"}
            else:
                rec = {"src": pick(rng, "audit", "audit", "audit", "audit\u0000"), "pid": pid,
                       "t": 1.0, "event": ev if rng.random() < 0.95 else "merge"}
                if rng.random() < 0.1:
                    rec["partial"] = True
            lines.append(text_of(rng, rec))
        else:
            lines.append(text_of(rng, ev))
        if rng.random() < 0.05:
            lines.append("")
    data = ("\n".join(lines) + ("\n" if rng.random() < 0.8 else "")).encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:
        data = b"\xef\xbb\xbf" + data
    return data


def projection(j):
    """tests/e2e/expect-filter.jq, in Python."""
    keys = ("merges", "taken", "substitutions", "unverified", "prevented", "forgone", "fired",
            "skipped", "shape_fallback", "rejected_unverified", "evaluable")
    return {
        "rules": {r: {k: v[k] for k in keys} for r, v in j["rules"].items()},
        "garbage": {k: j["garbage"][k] for k in ("count", "float32_like")},
        "fingerprint": {k: j["fingerprint"][k] for k in ("consistent", "verdict", "never_evaluated")},
        "malformed": j["malformed"],
        "capture_lost": j["input"]["capture_lost"],
        "capture_uncertain": j["input"]["capture_uncertain"],
        "uncertain_events": j["input"]["uncertain_events"],
        "gate": {k: j["gate"][k] for k in ("refused", "forced")},
        "duplicates": len(j["input"]["duplicates"]),
        "truncated": len(j["input"]["truncated"]),
    }


def exact_of(j, ref_values):
    """What the projection leaves out, from ttaudit's report; a garbage value
    shown with other than its whole count (the reference's) is named."""
    rules = {}
    for r, v in j["rules"].items():
        rules[r] = {"k": v["substitution_rate"]["k"], "n": v["substitution_rate"]["n"],
                    "first_mismatch_step": v["fingerprint"].get("first_mismatch_step")}
    g = j["garbage"]
    shown = {x["value"]: x["count"] for x in g["values"]}
    bad = {v: n for v, n in shown.items() if ref_values.get(v) != n}
    if sum(shown.values()) + g["values_dropped"] != g["count"]:
        bad["sum"] = sum(shown.values()) + g["values_dropped"]
    return {"rules": rules, "garbage_values": bad,
            "truncated_lines": [t["lines"] for t in j["input"]["truncated"]],
            "no_audit": len(j["input"]["no_audit"])}


def damaged(rng, data):
    """data gzipped: whole, cut at a random byte, or with a byte of its CRC-32 flipped."""
    z = bytearray(gzip.compress(data))
    r = rng.random()
    if r < 0.35:
        return bytes(z[: rng.randrange(1, len(z))])
    if r < 0.7:
        z[len(z) - 8 + rng.randrange(4)] ^= 1 << rng.randrange(8)
    return bytes(z)


def main():
    ttaudit, work = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 18
    rng = random.Random(seed)
    bad = 0
    seen = dict.fromkeys(("merges", "substitutions", "malformed", "uncertain_events", "refused",
                          "CONSISTENT", "WITHHELD", "INCONSISTENT", "NO_TAKEN", "garbage",
                          "shape_fallback", "first_mismatch", "truncated"), 0)
    for i in range(n):
        data = audit(rng)
        path = os.path.join(work, "corner-%d.jsonl" % i)
        if rng.random() < 0.15:
            path += ".gz"
            data = damaged(rng, data)
        with open(path, "wb") as f:
            f.write(data)
        rules = "bare,prefilled,batch,lifetime,stamp,bound"
        if i % 7 == 3:
            rules += ",batch+lifetime,prefilled+bound"
        max_pos = pick(rng, 0, 0, 0, 100, I64MAX)
        cmd = [ttaudit, "replay", "--json", "--allow-truncated", "--rules", rules]
        if max_pos:
            cmd += ["--max-pos", str(max_pos)]
        if rng.random() < 0.2:
            cmd.append("--tree")
        p = subprocess.run(cmd + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # a file with no audit event at all (a lone capture record) exits 2 and says so
        no_audit = p.returncode == 2 and p.stdout and json.loads(p.stdout)["input"]["no_audit"] == [path]
        if p.returncode != 0 and not no_audit:
            print("corner %d: ttaudit exited %d: %s" % (i, p.returncode, p.stderr[-300:]))
            bad += 1
            continue
        j = json.loads(p.stdout)
        ref = replay_ref.Replay(max_pos, [replay_ref.parts_of(r) for r in rules.split(",")])
        ref.file(path)
        want = ref.report()
        ref_exact = ref.exact()
        got = projection(j)
        got["exact"] = exact_of(j, ref_exact["garbage_values"])
        want["exact"] = dict(ref_exact, garbage_values={})
        seen["merges"] += want["rules"]["bare"]["merges"]
        seen["substitutions"] += want["rules"]["bare"]["substitutions"]
        seen["malformed"] += want["malformed"]
        seen["uncertain_events"] += want["uncertain_events"]
        seen["refused"] += want["gate"]["refused"]
        seen["garbage"] += want["garbage"]["count"]
        seen["shape_fallback"] += want["rules"]["bare"]["shape_fallback"]
        seen["first_mismatch"] += ref_exact["rules"]["bare"]["first_mismatch_step"] is not None
        seen["truncated"] += want["truncated"]
        seen[want["fingerprint"]["verdict"]] += 1
        if got != want:
            bad += 1
            for k in want:
                if got.get(k) != want[k]:
                    print("corner %d (%s): %s differs\n  ttaudit   %s\n  reference %s" % (
                        i, path, k, json.dumps(got.get(k), sort_keys=True)[:600],
                        json.dumps(want[k], sort_keys=True)[:600]))
            if bad > 5:
                break
        else:
            os.unlink(path)
    print("%d random audits, %d differences; %s" % (n, bad, json.dumps(seen, sort_keys=True)))
    # the corners were reached: a test that compares empty reports proves nothing
    idle = [k for k, v in seen.items() if not v]
    if idle and n >= 100:
        print("corners never reached: %s" % ", ".join(idle))
        bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
