#!/bin/sh
# ttaudit ab with a treatment whose banner lies (ttsim --fault banner-only:
# the stamp banner, bare merges): the arm check on the banner passes, the
# recorded merge decisions contradict it, and the A/B stops with FAIL; no
# report is written, the boot's records are set aside. A server that never
# writes its port, and one that ignores the stop signals, stop it too.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "no $BUILD/ttsim"
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim"

jq '.arms.stamp.env.TTSIM_FAULT = "banner-only"' "$FIX/ab/arms.json" >"$T/arms.json"
SERVE="$PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --seed 1 \${TTSIM_FAULT:+--fault \$TTSIM_FAULT}"
expect_rc 1 "$TTAUDIT" ab --control bare --treatment stamp --spec "$T/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --lock "$T/lock" --vendor-neutral --no-docker \
	--serve "$SERVE" -o "$T/ab"
contains "$T/err" "arm 'stamp' at http://127.0.0.1:"
contains "$T/err" "CONFIRMED"
contains "$T/err" "FAIL: treatment: arm 'stamp' not engaged: the recorded merge decisions contradict it"
contains "$T/err" "nothing published"
[ ! -s "$T/out" ] || fail "a report on stdout"
for f in ab-report.md ab-report.json ab-timeline.svg ab-latency.svg ab-makespan.svg; do
	[ ! -e "$T/ab/$f" ] || fail "$f written after a failed arm"
done
[ -e "$T/ab/boot-01-treatment.run.jsonl.rejected" ] || fail "the lying boot's records were not set aside"
[ ! -e "$T/ab/boot-02-negative-control.cap.jsonl" ] || fail "the A/B went on after the failure"
# the same spec without the fault passes: the check can pass
SERVE_OK="$PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --seed 1"
expect_rc 0 "$TTAUDIT" ab --control bare --treatment stamp --spec "$T/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --lock "$T/lock" --vendor-neutral --no-docker \
	--serve "$SERVE_OK" -o "$T/ok"

# a banner missing altogether fails at the gate, before any run record
expect_rc 1 "$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --lock "$T/lock" --vendor-neutral --no-docker \
	--serve "$PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --fault no-banner" \
	-o "$T/nob"
contains "$T/err" "FAIL: control (arm bare)"
[ ! -e "$T/nob/boot-00-control.run.jsonl" ] || fail "run records written past a failed gate"
[ ! -e "$T/nob/ab-report.md" ] || fail "report written past a failed gate"

# the host lock is held by someone else: FAIL before the server starts
mkdir "$T/held"
printf 'user x\nhost x\npid 1\nstarted 0\ncommand other job\n' >"$T/held/owner"
expect_rc 1 "$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" \
	--lock "$T/held" --vendor-neutral --no-docker --no-preflight --serve "touch $T/started" -o "$T/lk"
contains "$T/err" "host lock"
[ ! -e "$T/started" ] || fail "the server started without the lock"

# a server that ignores SIGINT and SIGTERM is left running and said so (never SIGKILL)
expect_rc 1 "$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" \
	--lock "$T/lock2" --vendor-neutral --no-docker --ready-timeout 1 --stop-timeout 0.5 \
	--serve "trap '' INT TERM; echo \$\$ >$T/stubborn.pid; exec sleep 30" -o "$T/stub"
contains "$T/err" "did not write its port"
contains "$T/err" "kill -TERM"
pid=$(cat "$T/stubborn.pid")
E2E_PIDS="$pid"
kill -0 "$pid" 2>/dev/null || fail "the stubborn server was killed"
kill -KILL "$pid"
[ -d "$T/lock2" ] || fail "the lock over a server left running was released"

# SIGTERM to the A/B mid-bench: the server gets the stop signal, the boot
# stops gracefully, the lock is released, FAIL and nothing published
"$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" --suite "$FIX/ab/suite.jsonl" \
	--concurrency 1 --lock "$T/lock3" --vendor-neutral --no-docker -o "$T/int" \
	--serve "$PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 2" \
	>"$T/int.out" 2>"$T/int.err" &
abpid=$!
E2E_PIDS="$abpid"
i=0
while [ ! -s "$T/int/boot-00.port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/int/boot-00.port" ] || fail "the server never wrote its port"
sleep 0.5
kill -TERM "$abpid"
set +e
wait "$abpid"
rc=$?
set -e
eq "$rc" 1 "exit status after SIGTERM"
contains "$T/int.err" "interrupted by"
contains "$T/int.err" "nothing published"
[ ! -e "$T/int/ab-report.md" ] || fail "report written after an interruption"
[ ! -d "$T/lock3" ] || fail "the lock was not released after a graceful stop"
port=$(cat "$T/int/boot-00.port")
! curl -s -m 1 "http://127.0.0.1:$port/health" >/dev/null 2>&1 || fail "the server is still answering"

# host memory that does not come back after a boot is said (a warning, not a
# gate): the fake /proc/meminfo loses 2 GiB while the server runs
mkdir -p "$T/root/proc"
printf 'MemTotal:       32000000 kB\nMemAvailable:   20000000 kB\n' >"$T/root/proc/meminfo"
SERVE_LEAK="printf 'MemTotal:       32000000 kB\\nMemAvailable:   17900000 kB\\n' >$T/root/proc/meminfo; exec $PWD/$BUILD/ttsim serve --port 0 --port-file \"\$TTAUDIT_AB_PORT_FILE\" --time-scale 0.01 --seed 1"
expect_rc 0 "$TTAUDIT" ab --control bare --treatment stamp --spec "$FIX/ab/arms.json" \
	--suite "$FIX/ab/suite.jsonl" --concurrency 16 --requests 96 --lock "$T/lock4" --vendor-neutral --no-docker \
	--preflight-root "$T/root" --serve "$SERVE_LEAK" -o "$T/leak" --json
eq "$(jget "$T/out" .host_memory_warnings)" 1 "host memory warnings"
contains "$T/err" "warning: control boot 0: MemAvailable fell by 2.00 GiB"
contains "$T/leak/ab-report.md" "Host memory did not come back after 1 boot(s)"
