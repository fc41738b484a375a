#!/bin/sh
# make check-stress: the whole suite (make check-run) with a busy loop pinned
# to each core (taskset), as a loaded CI machine runs it. The loops are this
# script's children, stopped by their pids on any exit. Prints the suite's
# wall time and its exit status; exits as the suite did.
set -u
MAKE=${MAKE:-make}
command -v taskset >/dev/null 2>&1 || { echo "check-stress: taskset (util-linux) is needed" >&2; exit 2; }
n=$(nproc)
pids=""
stop() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM
i=0
while [ $i -lt "$n" ]; do
	taskset -c "$i" sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
echo "check-stress: $n busy loop(s) pinned (pids$pids)"
start=$(date +%s)
"$MAKE" --no-print-directory "$@" check-run
rc=$?
echo "check-stress: make check-run exited $rc in $(( $(date +%s) - start )) s under $n busy loop(s)"
exit $rc
