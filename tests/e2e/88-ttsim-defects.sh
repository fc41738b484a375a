#!/bin/sh
# ttsim's defect modes (the async-ahead merge's family, docs/ttsim.md), each
# turned on alone under `--arm stamp` (no stale merge) and caught by the
# check meant for it, which names it; ttsim's audit `defect` events are the
# ground truth. The clean simulator passes every one of these checks at every
# churn level. (The stale merge itself, --arm bare: 85-bench-canary.sh,
# 86-bench-churn.sh.)
#   abort-reuse     canary: leaked at output token 0, the donor the aborted request
#   condense-state  canary: leaked, the donor the request that had left the row
#   prefix-block    canary under churn: leaked, in requests sending the prefix again
#   redecode        reference check under churn: diverged at the defect's token,
#                   "the token before it repeated"
#   oov             canary with --vocab-size: token ids past the vocabulary
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

SIM="--seed 3 --time-scale 0 --slots 4 --cache-blocks 64 --arm stamp"
CAN="--no-progress --correctness canary --workload churn --max-num-seqs 4 --churn-pressure 128 --seed 1"
strip() { sed -E 's/(chat)?cmpl-//g; s/-[0-9a-f]{8}( |$)/\1/g'; }
# "victim donor index" of every defect event of a mode
defects() { jq -r --arg m "$2" 'select(.ev == "defect" and .mode == $m) | "\(.req) \(.from) \(.index)"' "$1" | strip | sort -u; }
# "victim donor at" of every canary leak
leaks() { jq -r 'select(.kind == "request" and .verdict == "leaked") | "\(.request_id) \(.canary.leak.donor_id) \(.canary.leak.at)"' "$1" | sort -u; }

for mode in abort-reuse condense-state prefix-block; do
	# (abort-reuse paced: the server must still be generating when a cancel
	# comes, or it aborts nothing and reuses nothing)
	pace=""
	[ "$mode" = abort-reuse ] && pace="--time-scale 0.05"
	sim_start "$mode" $SIM --fault "$mode" $pace --audit "$T/$mode.audit.jsonl"
	expect_rc 1 $TTAUDIT bench --url "$URL" $CAN -o "$T/$mode.jsonl"
	sim_stop
	head -n 1 "$T/out" | grep -q '^CANARY: FAIL: [1-9][0-9]* leaked' || { cat "$T/out"; fail "$mode: not caught"; }
	defects "$T/$mode.audit.jsonl" "$mode" >"$T/$mode.def"
	leaks "$T/$mode.jsonl" >"$T/$mode.leaks"
	[ -s "$T/$mode.def" ] || fail "$mode: no defect injected"
		# every leak is an injection: the victim, the donor and the position
	# are the audit's (no leak is invented)
	awk 'NR == FNR { d[$0] = 1; next } !($0 in d) { print; bad = 1 } END { exit bad }' "$T/$mode.def" "$T/$mode.leaks" ||
		fail "$mode: a leak that is no injection (victim donor position)"
	# no merge made any of it: the stamp arm's audit has no substitution
	eq "$(jq -s '[.[] | select(.ev == "request" and .phase == "finish" and .substitutions > 0)] | length' \
		"$T/$mode.audit.jsonl")" 0 "$mode: substitutions under stamp"
done
# abort-reuse: every injection reaches its victim's first token, so every one
# is found, and its donor is named as aborted
cut -d' ' -f1 "$T/abort-reuse.def" | sort -u >"$T/a.victims"
cut -d' ' -f1 "$T/abort-reuse.leaks" | sort -u | cmp -s - "$T/a.victims" || fail "abort-reuse: not every victim found"
jq -s -e '[.[] | select(.kind == "request" and .verdict == "leaked") | .canary.leak |
	(.donor_aborted and .donor_finished and .at == 0)] | all' "$T/abort-reuse.jsonl" >/dev/null ||
	fail "abort-reuse: donor not named aborted"
# (condense-state's donor had left the row on the server; whether the client
# had seen its end before the victim's token is the client's view, recorded
# as such. prefix-block's victims share a cached prefix: the churn's shared
# text, or the first block of the canary's preface)

# redecode: the reference stage under churn, one token per chunk, catches
# every delivered duplicate at its own token and names it
sim_start redecode $SIM --fault redecode --no-merge --audit "$T/redecode.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --suite "$FIX/bench/slot-reuse.jsonl" --correctness \
	--workload churn --max-num-seqs 4 --seed 1 -o "$T/redecode.jsonl"
sim_stop
contains "$T/out" "(the token before it repeated)"
defects "$T/redecode.audit.jsonl" redecode | awk '{ print $1, $3 }' >"$T/r.def"
jq -r 'select(.kind == "request" and .verdict == "diverged") | "\(.request_id) \(.diverged_at) \(.diverged_kind)"' \
	"$T/redecode.jsonl" | sort -u >"$T/r.div"
[ "$(wc -l <"$T/r.div")" -ge 5 ] || fail "redecode: too few caught ($(wc -l <"$T/r.div"))"
awk '$3 != "duplicate-token" { print; bad = 1 } END { exit bad }' "$T/r.div" || fail "redecode: a divergence not named a repeated token"
awk '{ print $1, $2 }' "$T/r.div" | awk 'NR == FNR { d[$0] = 1; next } !($0 in d) { print; bad = 1 } END { exit bad }' "$T/r.def" - ||
	fail "redecode: a divergence where no token was re-decoded"

# oov: the ids the server returns, against the vocabulary
sim_start oov $SIM --fault oov --audit "$T/oov.audit.jsonl"
expect_rc 1 $TTAUDIT bench --url "$URL" --no-progress --correctness canary --concurrency 8 --requests 64 --seed 1 \
	--vocab-size 32768 -o "$T/oov.jsonl"
contains "$T/out" "with token ids past the vocabulary"
contains "$T/out" "a token id past the vocabulary at output token 8"
n_def=$(defects "$T/oov.audit.jsonl" oov | cut -d' ' -f1 | grep -c -- '-canary-') || true
eq "$(jq -s '[.[] | select(.kind == "request" and .phase == "canary" and .anomalies.ids_past_vocab > 0)] | length' "$T/oov.jsonl")" \
	"$n_def" "oov: outputs with an id past the vocabulary"
jq -s -e '[.[] | select(.kind == "request" and .phase == "canary" and .anomalies.ids_past_vocab > 0) |
	.anomalies.first_past_vocab_at == 8] | all' "$T/oov.jsonl" >/dev/null || fail "oov: position"
# without the vocabulary the ids cannot be judged: said so, never counted clean
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --correctness canary --concurrency 8 --requests 64 --seed 2 -o "$T/oov2.jsonl"
contains "$T/out" "token ids past the vocabulary: not evaluable (no --vocab-size)"
sim_stop

# the clean simulator: every check at every churn level fires nothing
sim_start clean $SIM --no-merge --audit "$T/clean.audit.jsonl"
expect_rc 0 $TTAUDIT bench --url "$URL" $CAN --vocab-size 32768 --json -o "$T/clean.jsonl"
eq "$(jq -c '[.cells[] | [.canary.leaked, .canary.lost, .canary.anomalies.ids_past_vocab, .canary.anomalies.special_repeated, .canary.verdict]]' "$T/out")" \
	'[[0,0,0,0,"PASS"],[0,0,0,0,"PASS"],[0,0,0,0,"PASS"],[0,0,0,0,"PASS"]]' "clean canary at every level"
expect_rc 0 $TTAUDIT bench --url "$URL" --no-progress --suite "$FIX/bench/slot-reuse.jsonl" --correctness \
	--workload churn --max-num-seqs 4 --seed 1 --json -o "$T/clean-ref.jsonl"
eq "$(jq -c '[.cells[] | .correctness.failing]' "$T/out")" '[0,0,0,0]' "clean reference check at every level"
sim_stop
eq "$(grep -c '"ev":"defect"' "$T/clean.audit.jsonl")" 0 "clean: no defect event"
# usage: an unknown mode is refused
expect_rc 2 "$TTSIM" serve --port 0 --fault bogus
contains "$T/err" "abort-reuse, redecode, condense-state, prefix-block or oov"
