#!/bin/sh
# ttaudit replay and validate at the edges: strings with NULs and lone
# surrogates, INT64_MIN steps, gzip cut inside a later member, the same input
# twice, several server processes in one capture, the fingerprint's never
# evaluated candidates, the capability gate, uncertain records, signals, a
# byte order mark, limits, and memory over thousands of files.
. tests/e2e/lib.sh

# same_as_ref WHAT FILE...: ttaudit's projection equals the plain-Python reference's
same_as_ref() {
	what=$1; shift
	"$PYTHON" scripts/replay_ref.py "$@" | jq -S . >"$T/ref.json"
	"$TTAUDIT" replay --json "$@" 2>/dev/null | jq -S -f tests/e2e/expect-filter.jq >"$T/got.json"
	diff -u "$T/ref.json" "$T/got.json" || fail "$what: ttaudit and the reference differ"
}

# 1. a NUL inside ev or src is not "merge" or "audit"
printf '%s\n' '{"ev":"merge\u0000","step":1,"host_pos":[1],"dev_pos":[1]}' >"$T/nul-ev.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/nul-ev.jsonl"
eq "$(jq .rules.bare.merges "$T/out")" 0 "merge\\u0000 is not a merge"
eq "$(jq .input.other_events "$T/out")" 1 "merge\\u0000 is another event"
printf '%s\n' '{"src":"audit\u0000","pid":1,"event":{"ev":"merge","step":1,"host_pos":[1],"dev_pos":[1]}}' >"$T/nul-src.jsonl"
# ... so the file holds no audit event: exit 2, the report says so
expect_rc 2 "$TTAUDIT" replay --json "$T/nul-src.jsonl"
eq "$(jq .rules.bare.merges "$T/out")" 0 "audit\\u0000 is not an audit record"
eq "$(jq -r '.input.no_audit[0]' "$T/out")" "$T/nul-src.jsonl" "no audit event"
contains "$T/err" "no audit event: a capture of 1 records without audit records"

# 2. request ids differing after a NUL, or in a lone surrogate, are different ids
printf '%s\n' '{"ev":"merge","step":1,"host_pos":[5,6,7,8],"dev_pos":[5,6,7,8],"slot_req":["a\u0000b","\ud800","\udc80","same\u0000"],"buf_req":["a\u0000c","\udbff","\udc81","same\u0000"]}' >"$T/ids.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/ids.jsonl"
eq "$(jq .rules.bare.substitutions "$T/out")" 3 "ids differing after a NUL or in a surrogate"
eq "$(jq .rules.bare.taken "$T/out")" 4 "all four taken"
same_as_ref "ids" "$T/ids.jsonl"
expect_rc 1 "$TTAUDIT" validate --rule bare "$T/ids.jsonl"
contains "$T/out" "ids.jsonl:1: step 1 slot 0 (evidence request)"
expect_rc 0 "$TTAUDIT" replay --explain 1 "$T/ids.jsonl"
contains "$T/out" "slot_req 'a\\x00b' != buf_req 'a\\x00c'"

# 3. step INT64_MIN with a buf_step: no overflow, and the lifetime rule refuses
printf '%s\n' '{"ev":"merge","step":-9223372036854775808,"buf_step":9223372036854775807,"host_pos":[5],"dev_pos":[5]}' >"$T/min.jsonl"
expect_rc 0 "$TTAUDIT" replay --json --rules lifetime "$T/min.jsonl"
eq "$(jq .rules.lifetime.taken "$T/out")" 0 "lifetime at INT64_MIN takes nothing"
eq "$(jq .rules.lifetime.prevented "$T/out")" 1 "lifetime at INT64_MIN prevents the stale take"
expect_rc 0 "$TTAUDIT" replay --explain -9223372036854775808 "$T/min.jsonl"
contains "$T/out" "buffer written at step 9223372036854775807 (-18446744073709551615 steps before)"
contains "$T/out" "is not step - 1 (-9223372036854775809)"
same_as_ref "INT64_MIN" "$T/min.jsonl"

# 4. gzip: cut inside the second member, inside the first, garbage after a member
gzip -c "$FIX/audit/incident-confirmed.jsonl" >"$T/m1.gz"
gzip -c "$FIX/audit/residual-coinciding.jsonl" >"$T/m2.gz"
cat "$T/m1.gz" "$T/m2.gz" >"$T/two.jsonl.gz"
s=$(wc -c <"$T/two.jsonl.gz")
head -c $((s - 10)) "$T/two.jsonl.gz" >"$T/cut2.jsonl.gz"
expect_rc 2 "$TTAUDIT" replay --json "$T/cut2.jsonl.gz"
contains "$T/err" "cut2.jsonl.gz: truncated gzip after 4 lines"
eq "$(jq .rules.bare.merges "$T/out")" 2 "merges read before the cut are counted"
eq "$(jq -c '[.input.truncated[].lines]' "$T/out")" '[4]' "truncated lines in the JSON"
eq "$(jq .malformed "$T/out")" 0 "the cut line is not counted as malformed"
expect_rc 0 "$TTAUDIT" replay --allow-truncated --json "$T/cut2.jsonl.gz"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/cut2.jsonl.gz"
contains "$T/out" "cut2.jsonl.gz: truncated gzip after 4 lines"
contains "$T/out" "FAIL"
expect_rc 1 "$TTAUDIT" validate --rule batch "$T/two.jsonl.gz"
contains "$T/out" "two.jsonl.gz:5: step 202 slot 0 (evidence stamp)"
s=$(wc -c <"$T/m1.gz")
head -c $((s / 2)) "$T/m1.gz" >"$T/cut1.gz"
expect_rc 2 "$TTAUDIT" replay "$T/cut1.gz"
contains "$T/err" "cut1.gz: truncated gzip after"
{ cat "$T/m1.gz"; printf '\037'; } >"$T/tail.gz"
expect_rc 2 "$TTAUDIT" replay "$T/tail.gz"
contains "$T/err" "tail.gz: truncated gzip after 3 lines"
{ cat "$T/m1.gz"; printf 'garbage'; } >"$T/junk.gz"
expect_rc 2 "$TTAUDIT" replay "$T/junk.gz"
contains "$T/err" "junk.gz: truncated gzip after 3 lines (incorrect header check)"
same_as_ref "truncated gzip" "$T/cut2.jsonl.gz"

# 5. the same input twice (by name, by symlink, by content) is counted once
A="$FIX/audit/incident-confirmed.jsonl"
ln -s "$A" "$T/link.jsonl"
cp "$A" "$T/copy.jsonl"
gzip -c "$A" >"$T/copy.jsonl.gz"
for second in "$A" "$T/link.jsonl" "$T/copy.jsonl" "$T/copy.jsonl.gz"; do
	expect_rc 0 "$TTAUDIT" replay --json "$A" "$second"
	eq "$(jq .rules.bare.merges "$T/out")" 2 "$second counted once"
	eq "$(jq '.input.duplicates | length' "$T/out")" 1 "$second named a duplicate"
	contains "$T/err" ": counted once"
done
expect_rc 0 "$TTAUDIT" replay "$A" "$T/link.jsonl"
contains "$T/err" "link.jsonl: the same file (device and inode) as $A: counted once"
contains "$T/out" "1 duplicate input counted once"
expect_rc 0 "$TTAUDIT" validate --rule batch "$A" "$T/copy.jsonl"
contains "$T/out" "copy.jsonl: the same content as $A: counted once"
same_as_ref "duplicates" "$A" "$T/copy.jsonl"

# 6. several server processes in one capture: config, garbage and fingerprint per pid
C="$FIX/audit/capture-two-servers.jsonl"
same_as_ref "two servers" "$C"
expect_rc 0 "$TTAUDIT" replay --json "$C"
eq "$(jq .rules.bound.taken "$T/out")" 5 "pid 101's config bounds only pid 101"
eq "$(jq .garbage.count "$T/out")" 1 "5000 is garbage under pid 101's config only"
eq "$(jq -c '[.processes[] | .pid]' "$T/out")" '[101,202]' "a row per process"
eq "$(jq -c '[.processes[] | .fingerprint.verdict]' "$T/out")" '["CONSISTENT","CONSISTENT"]' "per-process fingerprint"
eq "$(jq -c '[.processes[] | .fingerprint.consistent[0]]' "$T/out")" '["bare","batch"]' "each process's arm"
eq "$(jq -r .fingerprint.verdict "$T/out")" INCONSISTENT "together no single arm"
expect_rc 0 "$TTAUDIT" replay "$C"
contains "$T/out" "per process in $C (2 processes"
contains "$T/out" "  pid 101: 2 merge events"
contains "$T/out" "  pid 202: 2 merge events"
# data-parallel chunks of one process keep their drift apart
expect_rc 0 "$TTAUDIT" replay --explain 30 "$FIX/audit/capture-dp-drift.jsonl"
contains "$T/out" "(pid 7 dp 1)"
contains "$T/out" "grew by 20 over the 20 steps since step 10"
lacks "$T/out" "grew by 1000"

# 7. the fingerprint names what it never evaluated, and withholds
printf '%s\n' '{"ev":"merge","step":5,"host_pos":[5,7],"dev_pos":[5,-1],"taken":[true,false]}' >"$T/fp.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/fp.jsonl"
eq "$(jq -r .fingerprint.verdict "$T/out")" WITHHELD "four candidates never evaluated"
eq "$(jq -c .fingerprint.never_evaluated "$T/out")" '["prefilled","lifetime","stamp","bound"]' "named"
eq "$(jq -c .fingerprint.consistent "$T/out")" '["bare"]' "bare still consistent"
expect_rc 0 "$TTAUDIT" replay "$T/fp.jsonl"
contains "$T/out" "WITHHELD over 1 events with \`taken\`; consistent with: bare; never evaluated (not ruled out): prefilled lifetime stamp bound"
same_as_ref "fingerprint" "$T/fp.jsonl"
# every candidate evaluated, one survivor: CONSISTENT
expect_rc 0 "$TTAUDIT" replay --json --rules bare,batch "$T/fp.jsonl"
eq "$(jq -r .fingerprint.verdict "$T/out")" CONSISTENT "only evaluated candidates"

# 8. the capability gate refused the keep: never 0, not evaluable, said so
G="$FIX/audit/gate-refused.jsonl"
same_as_ref "gate" "$G"
expect_rc 0 "$TTAUDIT" replay "$G"
contains "$T/out" "the keep never ran (the capability gate refused it on 3 steps)"
contains "$T/out" "bare                         0   not evaluable on this audit (the keep never ran: the capability gate refused it on 3 steps)"
expect_rc 0 "$TTAUDIT" replay --json "$G"
eq "$(jq -c .not_evaluable "$T/out")" '["bare","prefilled","batch","lifetime","stamp","bound"]' "no rule evaluable"
eq "$(jq .gate.keep_never_ran "$T/out")" true "keep_never_ran"
expect_rc 1 "$TTAUDIT" validate --rule batch "$G"
contains "$T/out" "not evaluable: the keep never ran: the capability gate refused it on 3 steps"

# 9. capture records: uncertain apart from lost, its audit not replayed; signals; partial
U="$FIX/audit/capture-uncertain.jsonl"
same_as_ref "uncertain" "$U"
expect_rc 0 "$TTAUDIT" replay --json "$U"
eq "$(jq .input.capture_uncertain "$T/out")" 2 "uncertain count"
eq "$(jq .input.capture_lost "$T/out")" 1 "lost count apart"
eq "$(jq .input.uncertain_events "$T/out")" 1 "the audit inside is counted"
eq "$(jq .rules.bare.merges "$T/out")" 1 "and not replayed as a merge"
eq "$(jq .input.partial "$T/out")" 1 "partial lines"
eq "$(jq .input.invalid_utf8 "$T/out")" 3 "invalid UTF-8 bytes"
eq "$(jq -c '.input.signals[0] | [.pid, .signal, .name, .by]' "$T/out")" '[4243,9,"SIGKILL","parent"]' "signal end"
expect_rc 0 "$TTAUDIT" replay "$U"
contains "$T/out" "pid 4243 died by signal 9 (SIGKILL), reported by parent"
contains "$T/out" "2 lines UNCERTAIN in the capture"
contains "$T/out" "1 audit event inside uncertain capture records: counted, not replayed"

# 10. a byte order mark is skipped (said once); the config on line 1 still applies
printf '\357\273\277{"ev":"config","max_model_len":100}\n{"ev":"merge","step":1,"host_pos":[5000],"dev_pos":[5000]}\n' >"$T/bom.jsonl"
cp "$T/bom.jsonl" "$T/bom2.jsonl"
printf '\n' >>"$T/bom2.jsonl"
expect_rc 0 "$TTAUDIT" replay --json "$T/bom.jsonl" "$T/bom2.jsonl"
eq "$(jq .malformed "$T/out")" 0 "no malformed line for a BOM"
eq "$(jq .rules.bound.prevented "$T/out")" 0 "bound evaluated"
eq "$(jq .rules.bound.rejected_unverified "$T/out")" 2 "5000 outside [-1, 100)"
eq "$(grep -c 'byte order mark' "$T/err")" 1 "said once"
same_as_ref "BOM" "$T/bom.jsonl"

# 11. no merge events is said in those words; limits are options
echo '{"ev":"decode","step":1}' >"$T/zero.jsonl"
expect_rc 0 "$TTAUDIT" replay "$T/zero.jsonl"
eq "$(grep -c 'not evaluable on this audit (no merge events)' "$T/out")" 6 "zero merges, every rule"
"$PYTHON" -c 'print("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[" + ",".join(["1"] * 5000) + "],\"dev_pos\":[" + ",".join(["1"] * 5000) + "]}")' >"$T/wide.jsonl"
expect_rc 2 "$TTAUDIT" replay --json "$T/wide.jsonl"
eq "$(jq .malformed "$T/out")" 1 "5000 slots over the default cap"
contains "$T/err" "wide.jsonl: no audit event: 1 lines, 1 of them malformed"
contains "$T/err" "host_pos has 5000 entries, more than 4096"
expect_rc 0 "$TTAUDIT" replay --json --max-slots 8192 "$T/wide.jsonl"
eq "$(jq .rules.bare.taken "$T/out")" 5000 "--max-slots 8192 reads it"
"$PYTHON" -c 'print("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"x\":" + "[" * 70 + "]" * 70 + "}")' >"$T/deep.jsonl"
expect_rc 2 "$TTAUDIT" replay --json "$T/deep.jsonl"
eq "$(jq .malformed "$T/out")" 1 "nesting 71 over the default 64"
contains "$T/err" "nesting deeper than 64"
expect_rc 0 "$TTAUDIT" replay --json --max-depth 100 "$T/deep.jsonl"
eq "$(jq .rules.bare.merges "$T/out")" 1 "--max-depth 100 reads it"
expect_rc 2 "$TTAUDIT" replay --max-depth 0 "$T/deep.jsonl"
expect_rc 2 "$TTAUDIT" replay --max-slots 70000 "$T/deep.jsonl"

# 12. the scanner and the tree read every fixture the same, serial or in parallel
# Two runs that both print nothing (a crash, a command that did not run)
# would compare equal: each must exit 0, 1 or 2 and say something, a JSON
# report on stdout or a message on stderr (--explain of a step a file lacks).
# replay_json OUT RUN...: RUN's exit status in OUT.rc, its stderr in OUT's .err
replay_json() {
	out=$1; shift
	set +e; "$@" >"$out" 2>"${out%.json}.err"; echo $? >"$out.rc"; set -e
	[ "$(cat "$out.rc")" -le 2 ] || fail "'$*' exited $(cat "$out.rc")"
	if [ -s "$out" ]; then
		jq -e 'type == "object"' "$out" >/dev/null 2>&1 || fail "'$*': stdout is not a JSON report"
	else
		[ -s "${out%.json}.err" ] || fail "'$*' printed nothing"
	fi
}
n=0
for f in "$FIX"/audit/*.jsonl "$FIX"/audit/*.jsonl.gz "$FIX"/bad/*.jsonl "$T"/*.jsonl; do
	replay_json "$T/scan.json" "$TTAUDIT" replay --json --explain 141 "$f"
	replay_json "$T/tree.json" "$TTAUDIT" replay --json --explain 141 --tree "$f"
	cmp -s "$T/scan.json.rc" "$T/tree.json.rc" || fail "$f: the scanner and the tree exit differently"
	cmp -s "$T/scan.json" "$T/tree.json" || fail "$f: the scanner and the tree differ"
	cmp -s "$T/scan.err" "$T/tree.err" || fail "$f: the scanner and the tree say different things"
	n=$((n + 1))
done
[ $n -gt 10 ] || fail "only $n files compared"
set -- "$FIX"/audit/*.jsonl "$FIX"/audit/*.jsonl.gz "$FIX"/bad/*.jsonl "$T"/cut2.jsonl.gz "$A" "$T/copy.jsonl"
replay_json "$T/serial.json" "$TTAUDIT" replay --json "$@"
replay_json "$T/par.json" "$TTAUDIT" replay --json --jobs 3 "$@"
cmp -s "$T/serial.json.rc" "$T/par.json.rc" || fail "--jobs 3 and serial exit differently"
cmp -s "$T/serial.json" "$T/par.json" || fail "--jobs 3 and serial differ"
cmp -s "$T/serial.err" "$T/par.err" || fail "--jobs 3 and serial say different things"

# 13. memory stays flat in the number of files (GNU time's peak RSS; a sanitizer
# build's shadow memory is no measure of it)
case "$BUILD" in *asan*) memcheck=no ;; *) memcheck=yes ;; esac
if [ -x /usr/bin/time ] && [ "$memcheck" = yes ]; then
	mkdir "$T/many"
	"$PYTHON" - "$T/many" <<'EOF'
import os, sys
for i in range(3000):
    with open(os.path.join(sys.argv[1], "a%04d.jsonl" % i), "w") as f:
        f.write('{"ev":"merge","step":%d,"host_pos":[1,2],"dev_pos":[1,%d],"slot_req":["a","b"],"buf_req":["a","c"]}\n' % (i, 3 + i % 2))
EOF
	/usr/bin/time -f %M -o "$T/rss" "$TTAUDIT" validate --rule batch "$T"/many/*.jsonl >/dev/null || true
	rss=$(tail -n 1 "$T/rss")
	[ "$rss" -lt 16384 ] || fail "validate over 3000 files: peak RSS $rss KiB"
	/usr/bin/time -f %M -o "$T/rss" "$TTAUDIT" replay "$T"/many/*.jsonl >/dev/null
	rss=$(tail -n 1 "$T/rss")
	[ "$rss" -lt 16384 ] || fail "replay over 3000 files: peak RSS $rss KiB"
fi

# a file read in place that shrinks while it is read (copytruncate): the
# file named, no report, exit 2; never a death by SIGBUS. The truncation
# races the reader: when the reader is past it, or the file is small at
# the open, the run ends normally; three tries must hit it once
if [ -x "$BUILD/ttsim" ]; then
	"$BUILD/ttsim" run --steps 20000 --seed 1 --arm bare --audit "$T/one.jsonl" >/dev/null
	for i in 1 2 3 4 5 6 7 8; do cat "$T/one.jsonl"; done >"$T/whole.jsonl"
	hit=0
	for k in 1 2 3; do
		cp "$T/whole.jsonl" "$T/shrinks.jsonl"
		set +e
		"$TTAUDIT" replay "$T/shrinks.jsonl" >"$T/out" 2>"$T/err" &
		p=$!
		sleep 0.05
		truncate -s 100000 "$T/shrinks.jsonl"
		wait $p
		rc=$?
		set -e
		case $rc in
		2) contains "$T/err" "ttaudit: $T/shrinks.jsonl: the file shrank while it was read"
		   [ ! -s "$T/out" ] || fail "a report from a file that shrank"
		   hit=1; break ;;
		0) ;;
		*) cat "$T/err" >&2; fail "replay of a file that shrank exited $rc" ;;
		esac
	done
	[ "$hit" = 1 ] || echo "note: the truncation never caught the reader in three tries"
fi
echo ok
