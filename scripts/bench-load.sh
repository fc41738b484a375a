#!/bin/sh
# make bench, load driver part: how many concurrent streams one client core
# sustains against ttsim with instant tokens on loopback, and how far the
# client's per-token receive times are from ttsim's own per-token send times.
#
# Per level (streams in flight, closed loop, one wave of requests):
#   - the client (ttaudit bench) is pinned to one core, ttsim to another;
#   - the client loop's CPU per token (its thread CPU time / output tokens)
#     and its share of its core over the run (thread CPU time / makespan);
#     with instant tokens ttsim sends as fast as its own core allows, so a
#     share near 100% says the client is close to falling behind it;
#   - sustained: every request succeeded, the level was reached in flight,
#     and the client's times held: kernel-stamped |error| p99 <= 100 us;
#   - timestamp error: for every token, the distance from the time the
#     client gave it to the send(2) call that carried it, as ttsim's
#     --send-log records it (began, returned; both CLOCK_MONOTONIC): 0 inside
#     the call, negative before it. p50 and p99 of its size, and the signed
#     extremes. Measured twice per level: as the
#     client runs by default (the kernel's receive stamp of the packet,
#     bench/rxstamp.h), and with --loop-times (the time the event loop got to
#     the bytes), to show what the stamps remove;
#   - the client loop's busy time per wake-up, p50 and p99, in wall time
#     and in the loop thread's CPU time: bytes that arrive while the loop is
#     busy wait that long to be timed, so this bounds the client's own share
#     of the error; wall far above CPU means the host took the core away.
# On loopback the bytes reach the client's socket inside ttsim's send(2), and
# the kernel stamps them there; the call takes a few microseconds on a busy
# host and tens on an idle one, hence the interval. A raw-socket reader
# (Python, one stream, timing when it reads) measured against the same log
# is the floor of timing in user space.
# TIME_SCALE (default 0, instant tokens: ttsim outpaces the client and the
# error measures the client's backlog) paces the generator instead: at 0.1
# with 256 slots a decode step delivers 256 tokens at once every ~17 ms.
# Nothing here asserts a figure; it reports.
#
# usage: scripts/bench-load.sh   (env: BUILD, PYTHON, LEVELS, TOKENS, TIME_SCALE)
set -u
BUILD="${BUILD:-build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
LEVELS="${LEVELS:-1 16 64 256 512 1024}"
TOKENS="${TOKENS:-16}"
TIME_SCALE="${TIME_SCALE:-0}"
cd "$(dirname "$0")/.."
TTAUDIT="$PWD/$BUILD/ttaudit"
TTSIM="$PWD/$BUILD/ttsim"
for b in "$TTAUDIT" "$TTSIM"; do
	[ -x "$b" ] || { echo "bench-load: $b is not built"; exit 0; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ttaudit-bench-load.XXXXXX")
SIMPID=""
cleanup() {
	[ -n "$SIMPID" ] && { kill "$SIMPID" 2>/dev/null; wait "$SIMPID" 2>/dev/null; }
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
# private copies: a rebuild of the tree during the run must not pull the
# binaries away under it
cp "$TTAUDIT" "$W/ttaudit" && cp "$TTSIM" "$W/ttsim" || { echo "bench-load: cannot copy the binaries"; exit 1; }
TTAUDIT="$W/ttaudit" TTSIM="$W/ttsim"

# one core for the client, another for the server, when there are two
CLIENT_PIN="" SERVER_PIN=""
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
	CLIENT_PIN="taskset -c 0" SERVER_PIN="taskset -c 1"
fi

sim_start() {
	rm -f "$W/port" "$W/send.jsonl"
	$SERVER_PIN "$TTSIM" serve --port 0 --port-file "$W/port" --time-scale "$TIME_SCALE" --no-audit \
		--slots 256 --send-log "$W/send.jsonl" ${SIM_SHAPE:---no-merge} >"$W/sim.err" 2>&1 &
	SIMPID=$!
	n=0
	while [ ! -s "$W/port" ]; do
		n=$((n + 1))
		[ $n -lt 200 ] || { cat "$W/sim.err"; echo "bench-load: ttsim did not start"; exit 1; }
		sleep 0.05
	done
	URL="http://127.0.0.1:$(cat "$W/port")"
}
sim_stop() {
	kill "$SIMPID" 2>/dev/null
	wait "$SIMPID" 2>/dev/null
	SIMPID=""
}

# errors.py SEND RUN: client time - send time over every token
cat >"$W/errors.py" <<'PY'
import json, sys
# ttsim logs, per token, when the send(2) that carried it began and returned;
# the bytes reach the client's socket inside that call. A client time inside
# the call has no error; outside, the error is the distance to it (negative:
# before the call began).
sent = {}
with open(sys.argv[1]) as f:
    for line in f:
        d = json.loads(line)
        sent[(d["req"], d["i"])] = (d["mono_start"], d["mono"])
errs, calls, missing = [], [], 0
with open(sys.argv[2]) as f:
    for line in f:
        d = json.loads(line)
        if d.get("kind") != "request" or not d.get("ok"):
            continue
        # a chunk of n tokens is the send of its tokens k .. k+n-1 (ttsim
        # stamps them all with the call that carried the chunk)
        k = 0
        ns = d.get("token_n") or [1] * len(d.get("token_t", []))
        for t, n in zip(d.get("token_t", []), ns):
            s = sent.get((d["id"], k))
            k += n
            if s is None:
                missing += 1
                continue
            a, b = s
            for _ in range(n):
                errs.append(t - a if t < a else t - b if t > b else 0.0)
                calls.append(b - a)
# "n |err| p50 |err| p99 min max missing call-p50", in microseconds
size = sorted(abs(e) for e in errs)
calls.sort()
def pct(v, p):
    k = max(1, min(len(v), -(-len(v) * p // 100)))
    return v[k - 1] * 1e6
if errs:
    print("%d %.0f %.0f %.0f %.0f %d %.0f" % (len(errs), pct(size, 50), pct(size, 99), min(errs) * 1e6,
                                          max(errs) * 1e6, missing, pct(calls, 50)))
else:
    print("0 0 0 0 0 %d 0" % missing)
PY

# floor.py PORT SEND: one raw-socket stream at a time, same error measure
cat >"$W/floor.py" <<'PY'
import json, re, socket, sys, time
port, send_log = int(sys.argv[1]), sys.argv[2]
got = []
for k in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = json.dumps({"prompt": "floor %d" % k, "max_tokens": 16, "stream": True})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
    buf, idx = b"", 0
    while b"[DONE]" not in buf:
        d = s.recv(65536)
        if not d:
            break
        t = time.monotonic()
        buf += d
        for m in re.finditer(rb"data: (\{.*?\})\n", d):
            o = json.loads(m.group(1))
            if o["choices"] and o["choices"][0].get("text"):
                got.append((o["id"], idx, t))
                idx += 1
    s.close()
time.sleep(0.3)
sent = {}
for line in open(send_log):
    o = json.loads(line)
    sent[(o["req"], o["i"])] = (o["mono_start"], o["mono"])
def dist(t, a, b):
    return a - t if t < a else t - b if t > b else 0.0
e = sorted(dist(t, *sent[(r, i)]) for r, i, t in got if (r, i) in sent)
print("%d %.0f %.0f" % (len(e), e[len(e) // 2] * 1e6, e[max(0, -(-len(e) * 99 // 100) - 1)] * 1e6))
PY

echo "client: $TTAUDIT bench ${CLIENT_PIN:+(pinned: $CLIENT_PIN)}; server: ttsim --time-scale $TIME_SCALE --slots 256 ${SERVER_PIN:+(pinned: $SERVER_PIN)}"
echo "each level: closed loop, one wave of max(level, 32) requests of $TOKENS tokens, run twice:"
echo "  kernel: as the client runs by default (kernel receive stamps); loop: with --loop-times"
echo "error = distance from the client's time to ttsim's send(2) call for the token (0 inside it), us:"
echo "  |error| p50/p99, signed min/max; call = that send(2)'s duration, p50"
printf '%7s %6s %6s %9s %7s %5s %8s %22s %22s %5s %22s  %s\n' streams reqs failed inflight "tok/s" "cpu%" "us/tok" \
	"kernel p50/p99 min/max" "loop p50/p99 min/max" call "busy wall/cpu p99 us" sustained
best=0 best_err="-"
# level_run LEVEL [extra]: one run; sets rc, failed, tps, inflight, cpu, per_tok, busy, err
level_run() {
	sim_start
	n=$1
	[ "$n" -lt 32 ] && n=32
	$CLIENT_PIN "$TTAUDIT" bench --url "$URL" --no-progress --input-tokens 16 --output-tokens "$TOKENS" \
		--prompts 32 --concurrency "$1" --requests "$n" --token-times --stall 30 --json ${2:-} \
		-o "$W/run.jsonl" >"$W/sum.json" 2>"$W/bench.err"
	rc=$?
	sim_stop
	if [ $rc -gt 1 ] || [ ! -s "$W/sum.json" ]; then
		echo "bench-load: level $1: ttaudit bench exited $rc"; sed 's/^/    /' "$W/bench.err"
		return 1
	fi
	failed=$(jq -r .failed "$W/sum.json")
	tps=$(jq -r '.cells[0].median.output_tok_s | floor' "$W/sum.json")
	set -- $(jq -s -r '[.[] | select(.kind == "run")][0] |
		"\(.arrival.max_inflight) \(100 * .client_loop.cpu_s / .figures.makespan_s | round)" +
		" \(if .figures.output_tokens > 0 then (1e6 * .client_loop.cpu_s / .figures.output_tokens | round) else "-" end)" +
		" \(.client_loop.busy_p99_s * 1e6 | round)/\(.client_loop.busy_cpu_p99_s * 1e6 | round)"' "$W/run.jsonl")
	inflight=$1 cpu=$2 per_tok=$3 busy=$4
	set -- $("$PYTHON" "$W/errors.py" "$W/send.jsonl" "$W/run.jsonl")
	err="$2/$3 $4/$5" call=$7 err_p99=$3
	[ "$6" -gt 0 ] && echo "    $6 received tokens had no send-log entry"
	return 0
}
for lv in $LEVELS; do
	level_run "$lv" --loop-times || continue
	loop_err=$err
	level_run "$lv" || continue
	ok=no
	if [ "$failed" = 0 ] && [ "$inflight" -ge "$lv" ] && [ "$err_p99" -le 100 ]; then
		ok=yes best=$lv best_err=$err
	fi
	printf '%7s %6s %6s %9s %7s %5s %8s %22s %22s %5s %22s  %s\n' "$lv" "$n" "$failed" "$inflight" "$tps" "$cpu" \
		"$per_tok" "$err" "$loop_err" "$call" "$busy" "$ok"
done
sim_start
floor=$($CLIENT_PIN "$PYTHON" "$W/floor.py" "$(cat "$W/port")" "$W/send.jsonl" 2>&1)
sim_stop

# The real chunk shapes at the highest level: vLLM's completions chunks
# (usage null, stop_reason, prompt_token_ids, token_ids in every chunk; the
# client asks continuous_usage_stats, so each carries its usage), tokens
# merged into one chunk when they pile up (vLLM's output processor), and
# --stream-interval 4; beside the one-token-per-chunk 0.10 shape of the
# ladder above (the old figure). Errors per token, a chunk's tokens sharing
# its time.
top=${LEVELS##* }
echo "real chunk shapes at $top streams (us/tok = client CPU per token; |error| p99 per token, kernel-stamped):"
printf '%-46s %6s %9s %7s %8s %22s %8s\n' shape failed inflight "tok/s" "us/tok" "kernel p50/p99 min/max" "tok/chunk"
for shape in "--no-merge --vllm-version 0.10|0.10, one token per chunk (the old figure)" \
	"--no-merge|current vLLM chunks, one token per chunk" \
	"|current vLLM chunks, merged when tokens pile up" \
	"--stream-interval 4|current vLLM chunks, --stream-interval 4"; do
	SIM_SHAPE="${shape%%|*} " label=${shape#*|}
	level_run "$top" || continue
	tpc=$(jq -s -r '[.[] | select(.kind == "request" and .ok) | .counted_tokens / .content_chunks] | add / length | . * 100 | round / 100' "$W/run.jsonl")
	printf '%-46s %6s %9s %7s %8s %22s %8s\n' "$label" "$failed" "$inflight" "$tps" "$per_tok" "$err" "$tpc"
done
unset SIM_SHAPE
echo "highest concurrency sustained by one client core: $best streams (kernel-stamped |error| p50/p99 us, signed min/max: $best_err)"
echo "user-space floor, raw-socket reader timing its reads, one stream, same send log: tokens/|error| p50/p99 us = $(echo "$floor" | tr ' ' /)"
