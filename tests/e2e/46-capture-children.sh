# CPython starts children the way vLLM does: subprocess.run (CPython's
# _posixsubprocess: vfork, then close_range, close and dup2 in the child,
# in the parent's memory) and multiprocessing "spawn" (vLLM's engine core).
# A watched file written before, between and after them is captured whole;
# the children's own start and end records are there; stdout too.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc

F="$T/gen-audit.jsonl"
expect_rc 0 "$TTAUDIT" capture -o "$T/c.cap" --watch "$F" -- "$PYTHON" "$PWD/tests/progs/capture_vfork.py" "$F" 5
C="$T/c.cap"
main=$(jq -r 'select(.src=="start") | .pid' "$C" | head -n 1)
check watched-file "$F" "$C" --watched --expect captured=21 --expect missing=0
check stdout "$T/out" "$C" --fd 1 --pid "$main" --expect captured=1
for who in before after-subprocess spawn-child after-spawn; do
	ceq "$(jq -r --arg w $who 'select(.src=="audit" and .fd>2 and .event.who==$w) | 1' "$C" | wc -l)" 5 "records of $who"
done
# the children: true (subprocess), the spawn child and its resource
# tracker or semaphore helper, a grandchild; each started and ended
check_clean_ends "$C" children

# A process that outlives the command: ttaudit capture returns as the
# command did (the shell's own status, at once, not when the background
# process ends), and what that process writes later is still captured, by
# a reader that goes on in the background until the last process ended.
L="$T/late.cap"
expect_rc 7 "$TTAUDIT" capture -o "$L" -- sh -c "
	(while [ ! -e '$T/go' ]; do sleep 0.05; done
	 echo 'MERGE_AUDIT {\"ev\":\"merge\",\"step\":9}') &
	echo \$! >'$T/late.pid'; exit 7"
late=$(cat "$T/late.pid")
kill -0 "$late" 2>/dev/null || fail "the background process ended before ttaudit capture returned"
: >"$T/go"
n=0
until [ "$(jq -r --argjson p "$late" 'select(.src=="end" and .pid==$p and .how!="exec") | .pid' "$L")" = "$late" ]; do
	n=$((n + 1))
	[ $n -lt 200 ] || fail "the late process's end never reached the capture: $(cat "$L")"
	sleep 0.05
done
ceq "$(jq -c --argjson p "$late" 'select(.src=="audit" and .pid==$p) | .event' "$L")" '{"ev":"merge","step":9}' "late line"
check_done
echo ok
