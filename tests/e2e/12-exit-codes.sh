# The command-line contract of every command, from its option table: -h,
# --help and `help CMD` print the same help and exit 0; an unknown option, a
# missing value and a bad value exit 2 with "ttaudit CMD: ..." and a hint; a
# missing input file exits 2, never 1; a failed verdict exits 1.
. tests/e2e/lib.sh

# usage_contract CMD OPTION-WITH-VALUE: the parts every command shares.
usage_contract() {
	cmd=$1 valopt=$2
	expect_rc 0 "$TTAUDIT" "$cmd" --help
	cp "$T/out" "$T/help.long"
	contains "$T/help.long" "usage: ttaudit $cmd"
	contains "$T/help.long" "exit status: 0 ok"
	expect_rc 0 "$TTAUDIT" "$cmd" -h
	cmp -s "$T/out" "$T/help.long" || fail "$cmd: -h and --help differ"
	expect_rc 0 "$TTAUDIT" help "$cmd"
	cmp -s "$T/out" "$T/help.long" || fail "$cmd: help $cmd and --help differ"
	expect_rc 2 "$TTAUDIT" "$cmd" --no-such-option
	contains "$T/err" "ttaudit $cmd: unknown option '--no-such-option'"
	contains "$T/err" "see 'ttaudit $cmd --help'"
	if [ -n "$valopt" ]; then
		expect_rc 2 "$TTAUDIT" "$cmd" "$valopt"
		contains "$T/err" "ttaudit $cmd: option '$valopt' needs a value"
	fi
}

usage_contract preflight --mem-floor
usage_contract lock --lock
usage_contract pair --slack
usage_contract report ""
usage_contract plan --baseline
usage_contract replay --rules
usage_contract validate --rule
usage_contract ready --url
usage_contract arm --spec
usage_contract passthrough --guard
usage_contract ab --baseline
usage_contract bench --baseline
usage_contract capture --output
usage_contract follow --poll

# typos get the nearest name
expect_rc 2 "$TTAUDIT" preflight --mem-flor 3
contains "$T/err" "did you mean '--mem-floor'?"
expect_rc 2 "$TTAUDIT" replya x
contains "$T/err" "did you mean 'replay'?"
expect_rc 2 "$TTAUDIT" help replya
contains "$T/err" "did you mean 'replay'?"

# bad values are usage errors
expect_rc 2 "$TTAUDIT" preflight --mem-floor x
contains "$T/err" "option '--mem-floor' wants a number"
expect_rc 2 "$TTAUDIT" plan --baseline 2
expect_rc 2 "$TTAUDIT" plan --observed 5/3

# missing inputs are 2, never a verdict
expect_rc 2 "$TTAUDIT" pair --run "$T/missing.jsonl" --capture "$T/missing.cap"
expect_rc 2 "$TTAUDIT" report timeline "$T/missing.jsonl"
expect_rc 2 "$TTAUDIT" report timeline "$T/missing.jsonl" -o "$T/t.svg"
[ ! -e "$T/t.svg" ] || fail "report created its output for a missing input"

expect_rc 2 "$TTAUDIT" replay "$T/missing.jsonl"
lacks "$T/out" "merge events"
expect_rc 2 "$TTAUDIT" validate --rule batch "$T/missing.jsonl"
expect_rc 2 "$TTAUDIT" validate --rule nosuchrule "$FIX/audit/incident-confirmed.jsonl"
expect_rc 2 "$TTAUDIT" replay --max-forgone-pct 5 "$FIX/audit/incident-confirmed.jsonl"
expect_rc 2 "$TTAUDIT" arm --spec "$T/missing.json" --arm batch

# verdicts: 1
expect_rc 1 "$TTAUDIT" validate --rule batch "$FIX/audit/residual-coinciding.jsonl"
expect_rc 0 "$TTAUDIT" validate --rule batch+lifetime "$FIX/audit/residual-coinciding.jsonl"
expect_rc 1 "$TTAUDIT" preflight --root "$FIX/preflight/root-lowmem" --vendor-neutral --no-docker
expect_rc 0 "$TTAUDIT" preflight --root "$FIX/preflight/root-ok" --vendor-neutral --no-docker

# pair takes the files after --run and --capture, as its synopsis writes them
expect_rc 2 "$TTAUDIT" pair --run "$T/a" "$T/b"
contains "$T/err" "no --capture file"
expect_rc 2 "$TTAUDIT" pair "$T/a"
contains "$T/err" "say what it is"

# the man page has every command
"$TTAUDIT" help --man >"$T/man"
for c in replay validate capture follow pair ab report preflight lock ready arm bench plan; do
	contains "$T/man" ".SS \"ttaudit $c\""
done

# ttaudit alone: the usage, exit 2, every summary in one column (the longest
# name, passthrough, included)
expect_rc 2 "$TTAUDIT"
contains "$T/err" "  passthrough  what a tt-run"
cols=$(sed -n '/^commands:/,/^$/p' "$T/err" | grep '^  [a-z]' | awk '{ match($0, /^  [a-z]+ +/); print RLENGTH }' | sort -u | wc -l)
eq "$cols" 1 "one summary column"
