#!/bin/sh
# ttaudit preflight on fixture roots and topologies (each check made to fail),
# and ttaudit lock: held for a command, refused while held by a live process,
# a stale one reported and never taken, released on SIGTERM.
. tests/e2e/lib.sh
PF="$FIX/preflight"
pre() {
	want=$1; shift
	expect_rc "$want" "$TTAUDIT" preflight --topology "$PF/topo-2dev.xml" --docker "$PF/docker-none.sh" "$@"
}
result() { jget "$T/out" ".checks[] | select(.check == \"$1\") | .result"; }

pre 0 --root "$PF/root-ok"
contains "$T/out" "preflight: PASS"
contains "$T/out" "0000:21:00.0 [1e52:b140] numa 1"
pre 1 --root "$PF/root-lowmem" --json
eq "$(result memory)" fail "low memory"
contains "$T/out" "not reclaimed by a driver reload"
pre 1 --root "$PF/root-nomemavail" --json
eq "$(result memory)" fail "no MemAvailable"
pre 1 --root "$PF/root-nodev" --json
eq "$(result device-nodes)" fail "no device nodes"
pre 1 --root "$PF/root-onedev" --json
eq "$(result device-nodes)" fail "one node for two boards"
pre 1 --root "$PF/root-holder" --json
eq "$(result device-holders)" fail "foreign holder"
eq "$(jget "$T/out" '.holders[0].pid')" 4000001 "holder pid"
pre 1 --root "$PF/root-ok" --topology "$PF/topo-none.xml" --json
eq "$(result pci)" fail "no Tenstorrent PCI device"
pre 1 --root "$PF/root-ok" --docker "$PF/docker-running.sh"
contains "$T/out" "docker stop -t 90 vllm-qwen36"
pre 0 --root "$PF/root-ok" --docker "$PF/docker-down.sh" --json
eq "$(result containers)" skip "docker that does not answer"
pre 0 --root "$PF/root-lowmem" --mem-floor 2
pre 2 --root "$PF/root-ok" --topology "$T/none.xml"
pre 2 --mem-floor lots
pre 2 --phase after
# memory recorded around a run: less after than before fails
pre 0 --root "$PF/root-ok" --record "$T/mem.jsonl" --vendor-neutral
pre 1 --root "$PF/root-lowmem" --mem-floor 1 --record "$T/mem.jsonl" --phase after --vendor-neutral --json
eq "$(result memory-delta)" fail "memory lost over the run"
eq "$(wc -l <"$T/mem.jsonl" | tr -d ' ')" 2 "memory records"

# lock: held for the command, released after, exit status passed through
L="$T/host.lock"
expect_rc 5 "$TTAUDIT" lock --lock "$L" -- sh -c 'cat "$0/owner"; exit 5' "$L"
contains "$T/out" "pid="
contains "$T/out" "command=sh -c"
[ ! -e "$L" ] || fail "lock left behind after the command"
expect_rc 0 "$TTAUDIT" lock --lock "$L" --status
contains "$T/out" "free"
expect_rc 2 "$TTAUDIT" lock --lock "$L"

# held by a live process: refused, reported, and preflight sees it
"$TTAUDIT" lock --lock "$L" -- sleep 30 &
HOLDER=$!
E2E_PIDS="$E2E_PIDS $HOLDER"
n=0; while [ ! -s "$L/owner" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "lock not taken in 30 s"; sleep 0.05; done
expect_rc 1 "$TTAUDIT" lock --lock "$L" -- true
contains "$T/err" "held by pid $HOLDER"
expect_rc 1 "$TTAUDIT" lock --lock "$L" --status --json
eq "$(jget "$T/out" .state)" held "lock state"
eq "$(jget "$T/out" .pid)" "$HOLDER" "lock holder"
pre 1 --root "$PF/root-ok" --lock "$L" --json
eq "$(result lock)" fail "preflight: lock held"
# run under the lock, preflight counts it as ours
expect_rc 0 "$TTAUDIT" lock --lock "$T/own.lock" -- "$TTAUDIT" preflight --lock "$T/own.lock" \
	--root "$PF/root-ok" --topology "$PF/topo-2dev.xml" --docker "$PF/docker-none.sh"
contains "$T/out" "held by this run"
# SIGTERM: the command is stopped, the lock released, the holder exits 143
CHILD=$(pgrep -P "$HOLDER")
[ -n "$CHILD" ] || fail "no command under the lock"
kill -TERM "$HOLDER"
set +e; wait "$HOLDER"; rc=$?; set -e
eq "$rc" 143 "holder exit status on SIGTERM"
[ ! -e "$L" ] || fail "lock not released on SIGTERM"
! kill -0 "$CHILD" 2>/dev/null || fail "the command (pid $CHILD) outlived its lock"

# stale: the owner is dead; reported with the command to remove it, never taken
sh -c 'exit 0' & DEAD=$!; wait $DEAD
mkdir "$L"
printf 'user=u\nhost=%s\npid=%s\nstarted=1\ncommand=bench.sh --arm batch\n' "$(hostname)" "$DEAD" >"$L/owner"
expect_rc 1 "$TTAUDIT" lock --lock "$L" -- true
contains "$T/err" "stale"
contains "$T/err" "rm -r -- '$L'"
contains "$L/owner" "pid=$DEAD"
expect_rc 1 "$TTAUDIT" lock --lock "$L" --status --json
eq "$(jget "$T/out" .state)" stale "stale state"
pre 1 --root "$PF/root-ok" --lock "$L" --json
eq "$(result lock)" fail "preflight: stale lock"
contains "$T/out" "remove the lock by hand"
