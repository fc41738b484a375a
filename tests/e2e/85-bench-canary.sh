#!/bin/sh
# ttaudit bench --correctness canary against ttsim: every request a marker of
# its own in a copy task, every output searched for every marker. Under
# `--arm bare` with rows reused (4 slots, 16 in flight, prompts of many
# lengths) the stale merge hands a new request the token of the one that
# left its row: each such request is found leaked, exactly the requests the
# audit says received a substitution, with the donor the audit names. The
# same workload under `--arm stamp` is clean. Chat as well as completions;
# llama-server's surfaces (no token ids); the verdicts' JSON twin; bad usage.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SIM="--seed 3 --time-scale 0 --slots 4"
RUN="--no-progress --correctness canary --concurrency 16 --requests 200 --seed 1"

# victims -> donors from the audit: every take from another request's row
# (engine ids without their -<8 hex> suffix and the cmpl-/chatcmpl- prefix)
audit_subs() {
	jq -r 'select(.ev == "merge" and .buf_req != null) | . as $m | range(0; .taken | length) |
		select($m.taken[.] and $m.buf_req[.] != null and $m.slot_req[.] != $m.buf_req[.]) |
		"\($m.slot_req[.]) \($m.buf_req[.])"' "$1" |
		sed -E 's/(chat)?cmpl-//g; s/-[0-9a-f]{8}( |$)/\1/g' | sort -u -k1,1
}
# the canary's leaked requests and their donors
canary_leaks() {
	jq -r 'select(.kind == "request" and .phase == "canary" and .verdict == "leaked") |
		"\(.request_id) \(.canary.leak.donor_id)"' "$1" | sort -u -k1,1
}

for api in completions chat; do
	chat=""
	[ "$api" = chat ] && chat="--chat"
	sim_start "bare-$api" $SIM --arm bare --audit "$T/bare-$api.audit.jsonl"
	expect_rc 1 $TTAUDIT bench --url "$URL" $RUN $chat -o "$T/bare-$api.jsonl"
	sim_stop
	head -n 1 "$T/out" | grep -q '^CANARY: FAIL: [1-9][0-9]* leaked, 0 lost of 200 requests; leaked [0-9.]*%, 95% CI [0-9.]*% to [0-9.]*%$' ||
		{ cat "$T/out"; fail "$api bare: leak not said first, with its interval"; }
	contains "$T/out" "server 0 calibration: 3 of 3 answers repeated their marker; token ids searched too"
	contains "$T/out" "first: "
	canary_leaks "$T/bare-$api.jsonl" >"$T/leaks"
	audit_subs "$T/bare-$api.audit.jsonl" >"$T/subs"
	[ -s "$T/subs" ] || fail "$api bare: the workload made no substitution"
	# the same requests, the same donors: the canary sees every stale token
	# the merge handed over, and nothing else
	cut -d' ' -f1 "$T/leaks" >"$T/leak.ids"
	cut -d' ' -f1 "$T/subs" >"$T/sub.ids"
	cmp -s "$T/leak.ids" "$T/sub.ids" || { diff "$T/leak.ids" "$T/sub.ids" >&2; fail "$api bare: leaked requests are not the substituted ones"; }
	# the first substitution of each victim: its donor is the canary's
	awk '!seen[$1]++' "$T/subs" | cmp -s - "$T/leaks" ||
		{ diff "$T/leaks" "$T/subs" >&2; fail "$api bare: donors differ from the audit's"; }
	# every leak says where and whether its donor had finished, as the
	# client saw it (slot reuse: the donor left the row on the server; with
	# instant tokens its last one and the victim's stale one can come in the
	# same turn of ttsim's sends, in either order)
	jq -s -e '[.[] | select(.kind == "request" and .verdict == "leaked") | .canary.leak |
		(.at >= 0 and (.donor_finished | type) == "boolean" and .donor_kind == "sent" and (.group | length) == 6)] | all' \
		"$T/bare-$api.jsonl" >/dev/null || fail "$api bare: leak detail"
	# no decoy ever: the ttsim model writes only what it is given
	eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .canary.decoy > 0)] | length' \
		"$T/bare-$api.jsonl")" 0 "$api decoys"
	# the calibration pass: three requests alone, recorded as such
	eq "$(jq -s '[.[] | select(.kind == "run" and .phase == "calibration")][0].figures.requests' "$T/bare-$api.jsonl")" 3 \
		"$api calibration requests"
	# nothing in a body forces the synchronous path: no logprobs, penalties, structured output
	sim_start "stamp-$api" $SIM --arm stamp
	expect_rc 0 $TTAUDIT bench --url "$URL" $RUN $chat -o "$T/stamp-$api.jsonl"
	sim_stop
	head -n 1 "$T/out" | grep -q '^CANARY: PASS: 0 leaked, 0 lost of 200 requests; leaked rules out only rates above 1.83% at 95%$' ||
		{ cat "$T/out"; fail "$api stamp: not clean"; }
	eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .verdict == "clean" and .canary.own == "ok")] | length' \
		"$T/stamp-$api.jsonl")" 200 "$api stamp: every own marker checked and present"
done

# the JSON twin: rates with intervals, the verdict, the calibration
sim_start json $SIM --arm bare
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN --json -o "$T/json.jsonl"
eq "$(jget "$T/out" .canary.verdict)" FAIL "JSON verdict"
jq -e '.cells[0].canary | .leaked > 0 and .leak_rate.k == .leaked and .leak_rate.n == 200 and
	.leak_rate.method == "clopper-pearson" and .decoy_outputs == 0 and .own_checked == 200' "$T/out" >/dev/null ||
	fail "JSON cell canary"
# (three tokens write the marker; counted by chunk, so more when ttsim's
# instant tokens merged into one)
jq -e '.arms[0].canary_calibration | .own_marker_evaluable and .ids_searched and .tokens_for_marker >= 3' "$T/out" >/dev/null ||
	fail "JSON calibration"
# the baseline: 0 of too few is no PASS (against stamp: no leak)
sim_stop
sim_start base $SIM --arm stamp
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --correctness canary --concurrency 16 --requests 100 --seed 2 \
	--baseline 0.0048 -o "$T/base.jsonl"
contains "$T/out" "CANARY: INCONCLUSIVE: 0 leaked, 0 lost of 100 requests"
contains "$T/out" "767 requests would (ttaudit plan --baseline 0.0048 --target 0)"
# no body asks for what would force TT's synchronous path
grep -c '"phase":"canary"' "$T/base.jsonl" >/dev/null
sim_stop

# llama-server's surfaces: no token ids in its chunks, so only the text is
# searched, and the record says why
sim_start llama $SIM --arm bare --profile llamacpp --metrics
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/llama.jsonl"
contains "$T/out" "token ids not searched: a server sent none with its chunks"
head -n 1 "$T/out" | grep -q '^CANARY: FAIL: [1-9]' || { cat "$T/out"; fail "llama: the text search found nothing"; }
sim_stop

# usage: canary writes its own prompts; an unknown check is refused
sim_start usage $SIM
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --correctness canary --suite "$FIX/bench/slot-reuse.jsonl" -o "$T/x.jsonl"
contains "$T/err" "writes its own prompts"
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --correctness=bogus --input-tokens 8 --output-tokens 4 --prompts 2 -o "$T/x.jsonl"
contains "$T/err" "not a check"
# the reference stage still takes --correctness alone
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --correctness --input-tokens 8 --output-tokens 4 --prompts 2 -o "$T/x.jsonl"
contains "$T/out" "CORRECTNESS: PASS"
sim_stop
