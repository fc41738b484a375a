# ttaudit capture on a C program: write, writev, printf/fprintf/puts/fputs/
# fwrite/putc/dprintf, lines in pieces and many lines per write; a host that
# closes or dup2s over every fd above 2; a non-blocking pipe with a slow
# reader (EAGAIN, partial writes); EPIPE; EINTR; a signal handler that
# writes. Results, output bytes and exit status must not change, and the
# capture must hold exactly the audit lines that reached each fd.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
PROG="$PWD/$BUILD/progs/capture_c"

# run MODE RC: plain and captured runs into $T/MODE.{out,err}.{plain,cap}, capture $T/MODE.cap
run() {
	expect_rc "$2" "$PROG" "$1"
	mv "$T/out" "$T/$1.out.plain"; mv "$T/err" "$T/$1.err.plain"
	expect_rc "$2" "$TTAUDIT" capture -o "$T/$1.cap" -- "$PROG" "$1"
	mv "$T/out" "$T/$1.out.cap"; mv "$T/err" "$T/$1.err.cap"
}
same_output() {
	cmp "$T/$1.out.plain" "$T/$1.out.cap" || fail "$1: stdout differs under the shim"
	cmp "$T/$1.err.plain" "$T/$1.err.cap" || fail "$1: stderr differs under the shim"
}
# audits_match MODE FD FILE: the capture's fd audits are FILE's audit objects, in order.
audits_match() {
	grep -o '{"ev".*' "$3" | jq -c . >"$T/want" || true
	jq -c "select(.src==\"audit\" and .fd==$2) | .event" "$T/$1.cap" >"$T/got"
	cmp "$T/want" "$T/got" || { diff "$T/want" "$T/got" | head -n 20 >&2; fail "$1: fd $2 audits differ"; }
}
no_loss() {
	lacks "$T/$1.cap" '"src":"lost"'
	eq "$(jq -r 'select(.src=="end") | .lost' "$T/$1.cap")" 0 "$1: end lost"
}

# Every stdio and raw path, exit status 5.
run basic 5
same_output basic
audits_match basic 1 "$T/basic.out.cap"
audits_match basic 2 "$T/basic.err.cap"
eq "$(jq -r 'select(.src=="audit") | .event.seq' "$T/basic.cap" | sort -n | uniq | wc -l)" 40 "basic: distinct audit lines"
for via in printf fprintf puts fputs fwrite pieces write split writev dprintf tail; do
	eq "$(jq -r --arg v $via 'select(.src=="audit" and .event.via==$v) | .event.seq' "$T/basic.cap" | wc -l)" 1 "basic: via $via"
done
eq "$(jq -r 'select(.src=="banner") | .rule' "$T/basic.cap" | sort | tr '\n' ' ')" "arm:stamp vllm:version " "basic: banners"
no_loss basic

# The host closes every fd above 2 (close_range), then dup2s /dev/null over
# every open one, then closes them in a loop: the shim reopens its file.
run closefds 0
same_output closefds
audits_match closefds 2 "$T/closefds.err.cap"
eq "$(jq -r 'select(.src=="audit") | .event.via' "$T/closefds.cap" | tr '\n' ' ')" \
	"before-close after-close-range after-dup2 after-close-loop " "closefds: audits"
no_loss closefds

# Non-blocking stdout into a pipe whose reader starts late.
for how in plain cap; do
	if [ $how = plain ]; then set -- "$PROG" nonblock; else set -- "$TTAUDIT" capture -o "$T/nonblock.cap" -- "$PROG" nonblock; fi
	set +e
	"$@" 2>"$T/nonblock.err.$how" | { sleep 0.5; cat; } >"$T/nonblock.out.$how"
	set -e
done
same_output nonblock
eq "$(cat "$T/nonblock.err.cap")" "eagain=yes partial=yes" "nonblock: the writer met EAGAIN and partial writes"
audits_match nonblock 1 "$T/nonblock.out.cap"
eq "$(jq -r 'select(.src=="audit") | 1' "$T/nonblock.cap" | wc -l)" 1000 "nonblock: audit records"
no_loss nonblock

# EPIPE from write() and from fflush(); exit status 3. The failed write()
# reached nothing and is not captured; the flush that failed cannot say how
# much of stdio's line reached the fd: it is an uncertain record, not an audit.
run epipe 3
same_output epipe
contains "$T/epipe.err.cap" "write=-1 errno=EPIPE"
contains "$T/epipe.err.cap" "fflush=-1 errno=EPIPE"
eq "$(jq -r 'select(.src=="audit") | "\(.fd):\(.event.seq)"' "$T/epipe.cap" | tr '\n' ' ')" "2:3 " "epipe: audits"
eq "$(jq -r 'select(.src=="uncertain") | "\(.fd):\(.record.event.seq):\(.count)"' "$T/epipe.cap")" "1:2:1" "epipe: uncertain"

# A blocking write into a full pipe interrupted by a signal: EINTR, nothing written.
run eintr 0
same_output eintr
contains "$T/eintr.err.cap" "write=-1 errno=EINTR"
eq "$(jq -r 'select(.src=="audit") | "\(.fd):\(.event.seq)"' "$T/eintr.cap" | tr '\n' ' ')" "2:2 " "eintr: audits"

# Four threads fwrite()ing to stdout and stderr at once: every line, in
# order per thread (lines from threads interleave differently run to run).
expect_rc 0 "$TTAUDIT" capture -o "$T/threads.cap" -- "$PROG" threads
for fd in 1 2; do
	f=$([ $fd = 1 ] && echo out || echo err)
	grep -o '{"ev".*' "$T/$f" | jq -c . | sort >"$T/want"
	jq -c "select(.src==\"audit\" and .fd==$fd) | .event" "$T/threads.cap" | sort >"$T/got"
	eq "$(wc -l <"$T/got")" 4000 "threads: fd $fd audit records"
	cmp "$T/want" "$T/got" || fail "threads: fd $fd audits differ"
done
# Each thread's lines in its order. (tid is the thread whose call wrote the
# bytes to the fd: with a FILE shared by threads, whichever filled the buffer.)
jq -r 'select(.src=="audit") | [.tid, .event.via, .event.seq] | @tsv' "$T/threads.cap" | awk -F'\t' '
	{ if ($2 in last && $3 != last[$2] + 1) bad = 1; last[$2] = $3 }
	END { exit bad }' || fail "threads: out of order"
no_loss threads

# A SIGALRM handler writing audit lines every 200us while main writes 20000.
expect_rc 0 "$TTAUDIT" capture -o "$T/signal.cap" -- "$PROG" signal
contains "$T/out" "handler=yes"
# Main's lines and the handler's lines each in order, all of them, once. How
# the two interleave may differ by a line from the fd's order when the signal
# lands just before main's write() (docs/capture.md).
for ev in merge tick; do
	grep -o '{"ev".*' "$T/err" | jq -c "select(.ev==\"$ev\")" >"$T/want"
	jq -c "select(.src==\"audit\" and .fd==2 and .event.ev==\"$ev\") | .event" "$T/signal.cap" >"$T/got"
	[ -s "$T/want" ] || fail "signal: no $ev lines written"
	cmp "$T/want" "$T/got" || fail "signal: $ev audits differ"
done
eq "$(jq -r 'select(.src=="audit" and .event.ev=="merge") | 1' "$T/signal.cap" | wc -l)" \
	"$(sed -n 's/^main=\([0-9]*\) .*/\1/p' "$T/out")" "signal: main's audit records"
[ "$(jq -r 'select(.src=="audit" and .event.ev=="tick") | 1' "$T/signal.cap" | wc -l)" -gt 0 ] ||
	fail "signal: no handler audit records"
no_loss signal
echo "ok"
