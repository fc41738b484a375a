# The start record says how the capture was made (every line, or only the
# lines of its banner rules, and which rules), and `ttaudit arm` reads it: a
# forbidden line that the capture could not have recorded is not evaluable
# (the arm FAILs), never "clear". A capture made with rules of its own that
# leave out arm:bare, with the control banner printed: arm:bare's clause is
# not evaluable (it read "clear" when the built-in rules were assumed); with
# --all-lines the same line is found in the `line` records (forbidden-present).
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac

cat >"$T/spec.json" <<'JSON'
{"arms": {"batch": {
  "requires": [{"log": "QWEN36_MERGE_BATCH_GUARD engaged", "rule": "arm:batch"}],
  "forbids": [{"log": "guard none engaged", "rule": "arm:bare"},
              {"log": "Shutting down FastAPI HTTP server"}]}}}
JSON
printf 'arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n' >"$T/rules"
host() {
	"$TTAUDIT" capture "$@" -- sh -c '
		echo "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)" >&2
		echo "ttaudit: guard none engaged (unguarded merge)" >&2
		echo "INFO Shutting down FastAPI HTTP server." >&2' 2>/dev/null
}
item() { jget "$T/out" ".items[$1].$2"; }

# 1. rules only, and rules without arm:bare: the start record names them
host -o "$T/r.cap" --rules "$T/rules"
eq "$(jq -c 'select(.src=="start") | .capture' "$T/r.cap")" \
	"{\"all_lines\":false,\"rules_from\":\"$T/rules\",\"rules\":[\"arm:batch\"]}" "start: rules only"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm batch --capture "$T/r.cap"
eq "$(item 0 verdict)" met "the rule the capture had"
eq "$(item 1 verdict)" not-evaluable "arm:bare, a rule the capture did not have"
contains "$T/out" "do not include 'arm:bare'"
eq "$(item 2 verdict)" not-evaluable "a line no rule of the capture matches"
eq "$(jget "$T/out" .verdict)" FAIL "not evaluable fails the arm"

# 2. the same rules and --all-lines: every line is there, the control banner found
host -o "$T/a.cap" --rules "$T/rules" --all-lines
eq "$(jq -r 'select(.src=="start") | .capture.all_lines' "$T/a.cap")" true "start: all lines"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm batch --capture "$T/a.cap"
eq "$(item 1 verdict)" forbidden-present "arm:bare's line, in a line record"
eq "$(item 2 verdict)" forbidden-present "the forbidden line, in a line record"

# 3. the built-in rules (arm:bare among them), rules only: the banner itself
host -o "$T/b.cap"
eq "$(jq -r 'select(.src=="start") | .capture.rules_from' "$T/b.cap")" built-in "start: built-in rules"
jq -s -e '[.[] | select(.src=="start")][0].capture.rules | any(. == "arm:bare")' "$T/b.cap" >/dev/null ||
	fail "the built-in rules in the start record lack arm:bare"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm batch --capture "$T/b.cap"
eq "$(item 1 verdict)" forbidden-present "arm:bare's banner"
eq "$(item 2 verdict)" not-evaluable "a line no built-in rule matches"

# 4. nothing forbidden printed, every line kept: clear, the arm confirmed
"$TTAUDIT" capture --all-lines -o "$T/c.cap" -- sh -c \
	'echo "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)" >&2' 2>/dev/null
expect_rc 0 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm batch --capture "$T/c.cap"
eq "$(item 1 verdict)" clear "arm:bare absent from every line"
eq "$(item 2 verdict)" clear "the forbidden line absent from every line"

# 5. follow's start record says the same
printf 'x\n' | "$TTAUDIT" follow --once --rules "$T/rules" -o "$T/f.cap" - 2>/dev/null
eq "$(jq -c 'select(.src=="start") | .capture' "$T/f.cap")" \
	"{\"all_lines\":false,\"rules_from\":\"$T/rules\",\"rules\":[\"arm:batch\"]}" "follow: start"
echo ok
