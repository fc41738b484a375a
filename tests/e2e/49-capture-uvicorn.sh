#!/bin/sh
# A real ASGI server under ttaudit capture: Debian's uvicorn serving a
# FastAPI app (tests/progs/capture_asgi.py) on 127.0.0.1, the way vLLM's API
# server runs. With --workers 2 uvicorn starts its workers with
# multiprocessing "spawn" and supervises them; SIGTERM sent to ttaudit
# capture reaches the server, which shuts down cleanly. The capture must
# hold every line the server's stdout and stderr hold (capcheck: none
# missing, none invented), one audit record per request, each worker's
# "Application startup complete." as a vllm:ready banner (also through its
# colour codes, --use-colors), and a start and an end for every process.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc
"$PYTHON" -c 'import uvicorn, fastapi' 2>/dev/null ||
	fail "uvicorn and fastapi are not importable by $PYTHON (scripts/deps.sh check installs python3-uvicorn, python3-fastapi)"

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# serve NAME SIGNAL REQUESTS UVICORN-OPTIONS...: the server under the
# capture ($T/NAME.cap, its stdout and stderr in $T/NAME.out, .err), up
# until /health answers, REQUESTS GET /step/N, then SIGNAL to ttaudit
# capture; $rc is what ttaudit capture exited with.
serve() {
	name=$1 sig=$2 reqs=$3
	shift 3
	port=$(free_port)
	"$TTAUDIT" capture --all-lines -o "$T/$name.cap" -- "$PYTHON" -m uvicorn --app-dir "$PWD/tests/progs" \
		capture_asgi:app --host 127.0.0.1 --port "$port" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	cap=$!
	E2E_PIDS="$E2E_PIDS $cap"
	n=0
	until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
		n=$((n + 1))
		[ $n -lt 200 ] || { cat "$T/$name.err" >&2; fail "$name: uvicorn did not answer on 127.0.0.1:$port"; }
		kill -0 "$cap" 2>/dev/null || { cat "$T/$name.err" >&2; fail "$name: ttaudit capture ended before the server answered"; }
		sleep 0.05
	done
	# every worker up, not only the one that answered: a worker still
	# starting when the signal comes never says it started (under load
	# that is seconds after the first)
	n=0
	while [ "$(grep -c "Application startup complete" "$T/$name.err")" -lt "${UP:-1}" ]; do
		n=$((n + 1))
		[ $n -lt 600 ] || { cat "$T/$name.err" >&2; fail "$name: fewer than ${UP:-1} workers started in 30 s"; }
		sleep 0.05
	done
	i=1
	while [ $i -le "$reqs" ]; do
		eq "$(curl -sf "http://127.0.0.1:$port/step/$i")" "{\"step\":$i}" "$name: GET /step/$i"
		i=$((i + 1))
	done
	kill "-$sig" "$cap"
	# the server must end by itself once the signal reached it: bounded, never a hang
	n=0
	while kill -0 "$cap" 2>/dev/null && [ "$(ps -o stat= -p "$cap" 2>/dev/null | cut -c1)" != Z ]; do
		n=$((n + 1))
		[ $n -lt 400 ] || { cat "$T/$name.err" >&2; fail "$name: still running 20 s after SIG$sig"; }
		sleep 0.05
	done
	set +e
	wait "$cap"
	rc=$?
	set -e
}

# 1. two workers, stopped by SIGTERM
UP=2
serve workers TERM 20 --workers 2
UP=1
eq "$rc" 0 "workers: ttaudit capture's status (uvicorn's after SIGTERM)"
C="$T/workers.cap"
contains "$T/workers.err" "Finished server process"
check workers-stdout "$T/workers.out" "$C" --fd 1 --expect missing=0
check workers-stderr "$T/workers.err" "$C" --fd 2 --expect missing=0
ceq "$(jq -r 'select(.src=="audit") | .event.step' "$C" | sort -n | tr '\n' ' ')" \
	"$(seq 1 20 | tr '\n' ' ')" "workers: one audit record per request"
# the audit lines came from the spawned workers, each its own start record
workers=$(jq -r 'select(.src=="start" and (.argv | index("--multiprocessing-fork"))) | .pid' "$C" | sort -u)
ceq "$(echo "$workers" | wc -l | tr -d ' ')" 2 "workers: spawned worker processes"
for p in $(jq -r 'select(.src=="audit") | .pid' "$C" | sort -u); do
	echo "$workers" | grep -qx "$p" || ceq "$p" "a worker" "workers: the pid of an audit record"
done
ceq "$(jq -r 'select(.src=="audit") | "\(.pid) \(.event.pid)"' "$C" | awk '$1 != $2' | wc -l | tr -d ' ')" 0 \
	"workers: audit records carry the pid that wrote them"
parent=$(jq -r 'select(.src=="start") | .pid' "$C" | head -n 1)
# the parent says "Uvicorn running on", which no rule matches (under vllm
# serve it never prints: vLLM hands uvicorn its socket); it is a line
ceq "$(jq -r --argjson p "$parent" 'select(.src=="banner" and .pid==$p) | .rule' "$C")" "" \
	"workers: the parent's banners"
ceq "$(jq -r --argjson p "$parent" 'select(.src=="line" and .pid==$p) | .text' "$C" | grep -c "Uvicorn running on http://127.0.0.1:")" 1 \
	"workers: the parent's line"
for p in $workers; do
	ceq "$(jq -r --argjson p "$p" 'select(.src=="banner" and .pid==$p) | .rule + " " + .text' "$C")" \
		"vllm:ready INFO:     Application startup complete." "workers: worker $p's banner"
done
check_clean_ends "$C" workers

# 2. one process with uvicorn's colour codes, stopped by SIGINT (CTRL+C)
serve colours INT 5 --use-colors
eq "$rc" 0 "colours: ttaudit capture's status"
C="$T/colours.cap"
grep -q "$(printf '\033')\[32mINFO" "$T/colours.err" || fail "colours: uvicorn wrote no colour codes: $(head -n 3 "$T/colours.err")"
check colours-stdout "$T/colours.out" "$C" --fd 1 --expect missing=0
check colours-stderr "$T/colours.err" "$C" --fd 2 --expect missing=0
ceq "$(jq -r 'select(.src=="audit") | .event.step' "$C" | tr '\n' ' ')" "1 2 3 4 5 " "colours: audit records"
# the rule matches through the codes; the text is kept as written
ceq "$(jq -r 'select(.src=="banner") | .rule' "$C" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')" " 1 vllm:ready " \
	"colours: banners"
ceq "$(jq -r 'select(.src=="banner") | .text | test("^\u001b\\[32mINFO\u001b\\[0m:     Application startup complete\\.$")' "$C")" \
	true "colours: the banner's text as written"
clacks "$C" '"src":"lost"'
check_done
echo ok
