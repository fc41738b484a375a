#!/bin/sh
# ttaudit bench --workload churn: mixed max_tokens, client aborts, requests
# that force the synchronous path among ones that do not, a shared prefix
# sent, pressed out and sent again, at levels that cross max_num_seqs (half,
# once, 4x, 32x). Against ttsim (4 slots): every abort is a real cancel (the
# server aborts exactly those requests), every sync-forcing request makes the
# server sample on the host, each request records the transitions it caused;
# with the canary, under `--arm bare` the leaks are exactly the audit's
# substitutions, and under `--arm stamp` no level has any.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SIM="--seed 3 --time-scale 0 --slots 4 --cache-blocks 64"
RUN="--no-progress --correctness canary --workload churn --max-num-seqs 4 --churn-pressure 128 --seed 1"

sim_start bare $SIM --arm bare --audit "$T/bare.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" $RUN -o "$T/bare.jsonl"
sim_stop
head -n 1 "$T/out" | grep -q '^CANARY: FAIL: [1-9][0-9]* leaked, 0 lost of 448 requests' || { cat "$T/out"; fail "bare: no leak"; }
contains "$T/out" "workload churn (max_num_seqs 4): requests that caused each transition: arrival-during-decode"
# the levels cross max_num_seqs: below, at, 4x and 32x
eq "$(jq -s -c '[.[] | select(.kind == "run" and .phase == "canary") | .arrival.concurrency]' "$T/bare.jsonl")" \
	'[2,4,16,128]' "churn levels"
eq "$(jq -s -c '[.[] | select(.kind == "run" and .phase == "canary") | .arrival.max_inflight]' "$T/bare.jsonl")" \
	'[2,4,16,128]' "levels reached in flight"
# the leaks are the audit's substitutions, request for request
jq -r 'select(.kind == "request" and .verdict == "leaked") | .request_id' "$T/bare.jsonl" | sort -u >"$T/leak.ids"
jq -r 'select(.ev == "request" and .phase == "finish" and .substitutions > 0) | .req' "$T/bare.audit.jsonl" |
	sed -E 's/^(chat)?cmpl-//; s/-[0-9a-f]{8}$//' | sort -u >"$T/sub.ids"
[ -s "$T/sub.ids" ] || fail "bare: churn made no substitution"
cmp -s "$T/leak.ids" "$T/sub.ids" || { diff "$T/leak.ids" "$T/sub.ids" >&2; fail "bare: leaks are not the substitutions"; }

# every abort is a real client-side cancel. Paced (a decode step takes
# 1.4 ms) so the server is still generating when the close reaches it: it
# aborted only requests the client cancelled, and each one the client
# cancelled it aborted, or had already generated to its end (a server cannot
# abort what it finished)
sim_start paced $SIM --arm stamp --time-scale 0.1 --audit "$T/paced.audit.jsonl"
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --correctness canary --workload churn --concurrency 8 \
	--requests 96 --seed 1 -o "$T/paced.jsonl"
sim_stop
jq -r 'select(.kind == "request" and .phase == "canary" and .outcome == "aborted") | "\(.request_id) \(.churn.max_tokens)"' \
	"$T/paced.jsonl" | sort -u >"$T/abort.client"
jq -r 'select(.ev == "request" and .phase == "finish") | "\(.req) \(.aborted) \(.tokens)"' "$T/paced.audit.jsonl" |
	sed -E 's/^(chat)?cmpl-//; s/-[0-9a-f]{8} / /' | sort -u >"$T/finish.server"
[ "$(wc -l <"$T/abort.client")" -ge 5 ] || fail "too few aborts: $(wc -l <"$T/abort.client")"
awk '$2 == "true" { print $1 }' "$T/finish.server" >"$T/abort.server"
[ "$(wc -l <"$T/abort.server")" -ge 3 ] || fail "the server saw too few cancels: $(wc -l <"$T/abort.server")"
cut -d' ' -f1 "$T/abort.client" | join -v2 - "$T/abort.server" | grep -q . && fail "the server aborted a request the client did not cancel"
join "$T/abort.client" "$T/finish.server" | awk '$3 != "true" && $4 != $2 { bad = 1; print } END { exit bad }' ||
	fail "a cancelled request neither aborted nor generated to its end on the server"

jq -s -e '[.[] | select(.kind == "request" and .outcome == "aborted") |
	(.ok and .aborted_at >= .churn.abort_at and .aborted_at < .churn.max_tokens and
	 (.churn.transitions | index("client-abort")) != null)] | all' "$T/bare.jsonl" >/dev/null ||
	fail "aborted requests: not cut where chosen, or the transition not recorded"
# an aborted request is no failure
eq "$(jq -s '[.[] | select(.kind == "request" and .ok == false)] | length' "$T/bare.jsonl")" 0 "failed requests"

# sync-forcing requests: logprobs in their bodies, recorded, and the server
# sampled on the host for them (decodes of the (False, width) trace)
n_sync=$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .churn.sync)] | length' "$T/bare.jsonl")
[ "$n_sync" -gt 20 ] || fail "too few sync-forcing requests: $n_sync"
grep -q '"op":"restage","key":"(False, 4)"' "$T/bare.audit.jsonl" || fail "no host-sampled decode on the server"
jq -s -e '[.[] | select(.kind == "request" and .phase == "canary" and .churn.sync) |
	((.churn.transitions | index("sync-path")) != null)] | all' "$T/bare.jsonl" >/dev/null ||
	fail "sync transition not recorded"
# the shared prefix: sent by the first eighth, pressed out by the middle, sent again by the last eighth
jq -s -e '[.[] | select(.kind == "run" and .phase == "canary") | .workload.transitions |
	(.["prefix-first"] > 0 and .["prefix-again"] > 0 and .["cache-pressure"] > 0 and .["early-finish"] > 0 and
	 .["arrival-during-decode"] > 0)] | all' "$T/bare.jsonl" >/dev/null || fail "run transitions"
jq -s -e '[.[] | select(.kind == "run" and .phase == "canary")][-1].workload.transitions["over-max-num-seqs"] > 0' \
	"$T/bare.jsonl" >/dev/null || fail "32x max_num_seqs: nothing over capacity"
# each run's counts are its requests' transitions
jq -s -e 'group_by(.run_id) | map(select(.[0].run_id != null)) | [.[] |
	([.[] | select(.kind == "request") | .churn.transitions // [] | .[]] | group_by(.) | map({(.[0]): length}) | add // {}) as $per |
	(.[] | select(.kind == "run" and .phase == "canary") | .workload.transitions | with_entries(select(.value > 0))) as $run |
	$per == $run] | all' "$T/bare.jsonl" >/dev/null || fail "run transition counts differ from the requests'"
eq "$(jq -s -r '[.[] | select(.kind == "run" and .phase == "canary")][0].cache_claim' "$T/bare.jsonl")" shared-prefix \
	"churn claims no cold cache"

# the clean simulator: no level leaks, no marker lost
sim_start stamp $SIM --arm stamp
expect_rc 0 $TTAUDIT bench --url "$URL" $RUN --json -o "$T/stamp.jsonl"
sim_stop
eq "$(jget "$T/out" .canary.verdict)" PASS "stamp verdict"
eq "$(jq -c '[.cells[] | .canary | [.leaked, .lost, .verdict]]' "$T/out")" \
	'[[0,0,"PASS"],[0,0,"PASS"],[0,0,"PASS"],[0,0,"PASS"]]' "stamp: every churn level clean"
jq -e '.workload.kind == "churn" and .workload.max_num_seqs == 4 and .workload.transitions["client-abort"] > 0' "$T/out" >/dev/null ||
	fail "JSON workload"

# churn without the canary, on generated prompts, chat (paced: a stream that
# came whole in one chunk has nothing left to cancel)
sim_start plain $SIM --arm stamp --time-scale 0.05
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --workload churn --concurrency 8 --requests 80 --chat \
	--input-tokens 16 --output-tokens 12 --prompts 8 --seed 2 -o "$T/plain.jsonl"
jq -s -e '[.[] | select(.kind == "request")] | (map(select(.outcome == "aborted")) | length) > 0 and
	(map(.churn.max_tokens) | unique | length) > 2' "$T/plain.jsonl" >/dev/null || fail "plain churn: no aborts or one shape"
# usage: churn needs max_num_seqs or levels; no batch
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --workload churn --input-tokens 8 --output-tokens 4 --prompts 2 -o "$T/x.jsonl"
contains "$T/err" "needs the server's --max-num-seqs"
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --workload churn --batch 4 --input-tokens 8 --output-tokens 4 --prompts 2 -o "$T/x.jsonl"
expect_rc 2 $TTAUDIT bench --url "$URL" --no-progress --workload storm --input-tokens 8 --output-tokens 4 --prompts 2 -o "$T/x.jsonl"
sim_stop
