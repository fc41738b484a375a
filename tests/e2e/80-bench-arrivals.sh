#!/bin/sh
# ttaudit bench against ttsim: each arrival model as recorded, token counts
# from usage and from counted chunks, the chat role chunk never taken for the
# first token, and the --json summary.
. tests/e2e/lib.sh
[ -x "$BUILD/ttsim" ] || fail "$BUILD/ttsim is not built (the simulator is a prerequisite)"
. tests/e2e/ttsim.inc

# modeled time at 1/50: a prefill is long enough that a role chunk sent at
# once arrives well before the first token is sent
# one token per chunk (--no-merge): the checks below join each chunk's time
# with the send log's token; merged chunks are 76-ttsim-surfaces' and 84's
sim_start s --seed 2 --time-scale 0.02 --slots 8 --send-log "$T/send.jsonl" --no-merge
B="$TTAUDIT bench --url $URL --no-progress"

# closed loop: a ladder, each level its own run, never more in flight than asked
expect_rc 0 $B --input-tokens 24 --output-tokens 12 --prompts 6 --concurrency 1,4 --requests 12 -o "$T/closed.jsonl"
contains "$T/out" "closed arrivals"
jq -s -c '[.[] | select(.kind == "run") | [.arrival.model, .arrival.concurrency, .arrival.max_inflight, .figures.requests]]' \
	"$T/closed.jsonl" >"$T/c.json"
eq "$(cat "$T/c.json")" '[["closed",1,1,12],["closed",4,4,12]]' "closed runs"
eq "$(jq -s '[.[] | select(.kind == "request")] | length' "$T/closed.jsonl")" 24 "closed request records"
eq "$(jq -s '[.[] | select(.kind == "request" and (.id | test("^cmpl-")))] | length' "$T/closed.jsonl")" 24 \
	"every request record carries the response id"
eq "$(jq -s '[.[] | select(.kind == "summary")] | length' "$T/closed.jsonl")" 1 "one summary record"
# generated prompts sized exactly with the server's tokenizer
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].identity.sizing' "$T/closed.jsonl")" tokenize "sizing"
eq "$(jq -s '[.[] | select(.kind == "request") | .prompt_tokens] | unique' "$T/closed.jsonl")" '[
  24
]' "prompt tokens as sized"

# batch: all launched at once; batch prefill is prompt tokens over max(TTFT)
expect_rc 0 $B --input-tokens 40 --output-tokens 8 --prompts 6 --batch 6 -o "$T/batch.jsonl"
jq -s '[.[] | select(.kind == "run")][0]' "$T/batch.jsonl" >"$T/b.json"
eq "$(jget "$T/b.json" .arrival.model)" batch "batch model"
eq "$(jget "$T/b.json" .arrival.batch)" 6 "batch size"
eq "$(jget "$T/b.json" .arrival.max_inflight)" 6 "batch in flight"
eq "$(jget "$T/b.json" '.figures.ttft_staircase_s | length')" 6 "staircase entries"
jq -e '.figures.batch_prefill_tok_s > 0 and
       (.figures.batch_prefill_tok_s - .figures.prompt_tokens / .figures.max_ttft_s | fabs) < 1e-6' \
	"$T/b.json" >/dev/null || fail "batch prefill is not prompt tokens / max(ttft)"
# together: every request launched before any ended (an ordering, which a
# preempted client cannot break; a 50 ms window could)
jq -s -e '[.[] | select(.kind == "request")] | (map(.t_launch) | max) < (map(.t_sent + .e2e_s) | min)' "$T/batch.jsonl" >/dev/null ||
	fail "batch requests not launched together"

# poisson: the seed and every scheduled arrival recorded; same seed, same schedule
expect_rc 0 $B --input-tokens 16 --output-tokens 4 --prompts 4 --rate 100 --arrival-seed 9 --requests 20 -o "$T/p1.jsonl"
expect_rc 0 $B --input-tokens 16 --output-tokens 4 --prompts 4 --rate 100 --arrival-seed 9 --requests 20 -o "$T/p2.jsonl"
jq -s '[.[] | select(.kind == "run")][0]' "$T/p1.jsonl" >"$T/p.json"
eq "$(jget "$T/p.json" .arrival.model)" poisson "poisson model"
eq "$(jget "$T/p.json" .arrival.rate)" 100 "poisson rate"
eq "$(jget "$T/p.json" .arrival.seed)" 9 "poisson seed"
gaps() { jq -s -c '[.[] | select(.kind == "request")] | sort_by(.index) | [.[].t_sched] as $t |
	[range(1; $t | length) | ($t[.] - $t[. - 1]) * 1e6 | round]' "$1"; }
eq "$(gaps "$T/p1.jsonl")" "$(gaps "$T/p2.jsonl")" "poisson schedule from the seed"
# the schedule is drawn from the seed, not measured: no load moves it
jq -s -e '[.[] | select(.kind == "request")] | sort_by(.index) | [.[].t_sched] as $t |
	(($t[-1] - $t[0]) / (($t | length) - 1)) as $mean | $mean > 0.002 and $mean < 0.05' "$T/p1.jsonl" >/dev/null ||
	fail "poisson mean inter-arrival far from 1/rate"
# launches: never before they are due, in the order they are due; how late
# is the client's share of two loaded cores, recorded (sched_lag_s), not
# asserted. 1 s only catches a loop that waits for responses (20 requests of
# 4 tokens behind each other): a runnable process is not kept off a core that
# long by CFS, whatever the load
jq -s -e '[.[] | select(.kind == "request")] | (map(.t_launch - .t_sched) | min) >= 0 and (map(.t_launch - .t_sched) | max) < 1 and
	(sort_by(.t_sched) | map(.index)) == (sort_by(.t_launch) | map(.index))' "$T/p1.jsonl" >/dev/null ||
	fail "poisson launches early, out of order or behind responses"
# open loop: latency from when each request was due as well as from its
# write (coordinated omission, guidellm #1048): never shorter, and the wait
# between the two recorded per request and per run
jq -s -e '[.[] | select(.kind == "request") | (.ttft_from_sched_s >= .ttft_s and .e2e_from_sched_s >= .e2e_s and
	(.e2e_from_sched_s - .e2e_s - .sched_lag_s | fabs) < 1e-6)] | all' "$T/p1.jsonl" >/dev/null ||
	fail "poisson: latency from the schedule missing or shorter than from the write"
jq -e '.figures.ttft_from_sched_s.n == 20 and .figures.sched_lag_s.n == 20' "$T/p.json" >/dev/null ||
	fail "poisson: run figures from the schedule"
contains "$T/out" "from the scheduled time: ttft p50/p90/p99"
lacks "$T/out" "CLIENT BEHIND SCHEDULE"
# a rate no client can keep (1000 requests due within about 1 ms): opening
# and writing them takes about 0.1 s, and the report says the client fell behind
expect_rc 0 $B --input-tokens 16 --output-tokens 2 --prompts 4 --rate 1000000 --arrival-seed 9 --requests 1000 -o "$T/fast.jsonl"
contains "$T/out" "CLIENT BEHIND SCHEDULE: requests written up to"
contains "$T/out" "(CLIENT BEHIND SCHEDULE: the figures above from the write hide that wait; quote these)"
jq -s -e '[.[] | select(.kind == "request")] | (map(.e2e_from_sched_s) | max) > (map(.e2e_s) | max)' "$T/fast.jsonl" >/dev/null ||
	fail "behind: latency from the schedule is not longer"

# token counts: from usage when the server sends it, else counted chunks, labelled
expect_rc 0 $B --input-tokens 16 --output-tokens 9 --prompts 4 --concurrency 2 -o "$T/u.jsonl"
# (tokens that piled up share a chunk: the per-chunk usage counts them)
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.tps_source, .output_tokens, .counted_tokens, .token_count_source]] | unique' "$T/u.jsonl")" \
	'[["usage",9,9,"usage"]]' "usage counts"
jq -s -e '[.[] | select(.kind == "request") | .content_chunks <= 9] | all' "$T/u.jsonl" >/dev/null || fail "more chunks than tokens"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].figures.tps_source' "$T/u.jsonl")" usage "run tps_source usage"
lacks "$T/u.jsonl" "from_sched"
expect_rc 0 $B --input-tokens 16 --output-tokens 9 --prompts 4 --concurrency 2 --no-stream-usage -o "$T/n.jsonl"
# without usage nothing says how many tokens a chunk carried: one per chunk
# is assumed and labelled (merged chunks make it an undercount)
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.tps_source, .output_tokens == .content_chunks, .token_count_source, .prompt_tokens]] | unique' "$T/n.jsonl")" \
	'[["chunks",true,"chunks",null]]' "chunk counts"
jq -s -e '[.[] | select(.kind == "request") | .output_tokens <= 9] | all' "$T/n.jsonl" >/dev/null || fail "chunk count above the tokens"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].figures.tps_source' "$T/n.jsonl")" chunks "run tps_source chunks"
contains "$T/out" "token counts from chunks"

# chat: the role chunk is counted apart and TTFT waits for the first content token,
# which the client cannot have before the server sent it

expect_rc 0 $B --input-tokens 200 --output-tokens 6 --prompts 4 --chat --concurrency 4 --token-times -o "$T/chat.jsonl"
eq "$(jq -s -c '[.[] | select(.kind == "request") | [.role_chunks, .content_chunks]] | unique' "$T/chat.jsonl")" \
	'[[1,6]]' "chat role and content chunks"
jq -s -e '[.[] | select(.kind == "request") | ((.t_sent + .ttft_s) - .token_t[0] | fabs) < 1e-9] | all' \
	"$T/chat.jsonl" >/dev/null || fail "ttft is not the first content token's time from the request written"
jq -s -e '[.[] | select(.kind == "request") | .t_sent >= .t_launch] | all' \
	"$T/chat.jsonl" >/dev/null || fail "a request written before it was launched"
jq -s -r '.[] | select(.kind == "request") | "\(.id) \(.t_sent + .ttft_s) \(.t_launch)"' "$T/chat.jsonl" | sort >"$T/first.txt"
jq -r 'select(.i == 0) | "\(.req) \(.mono_start)"' "$T/send.jsonl" | sort >"$T/sent0.txt"
join "$T/first.txt" "$T/sent0.txt" >"$T/j.txt"
eq "$(wc -l <"$T/j.txt" | tr -d ' ')" 4 "chat requests joined with the send log"
# fields: id, first content token received, launched, the send of the first
# token began. The check can fail: the server sends the role chunk at once and
# the first token only after the prefill, which the first condition makes sure
# is long (ttsim sleeps it: load only lengthens it). An ordering, not a time
# budget: ttsim stamps mono_start before its send(2) and the kernel stamps the
# packet inside it, so the receive is never before the stamp however the
# server thread is preempted (a stamp taken after the send returned was
# beaten by 0.5 ms under load). 0.1 ms: the receive stamp's realtime-to-
# monotonic relation, from the narrowest of 16 clock brackets (microseconds).
awk '$4 - $3 < 0.003 { short = short " " $1 }
     $2 + 0.0001 < $4 { bad = bad " " $1 }
     END { if (short != "") { print "prefill too short to tell the role chunk apart:" short; exit 1 }
	   if (bad != "") { print "first token before it was sent:" bad; exit 1 } }' \
	"$T/j.txt" || fail "ttft taken before the first content token was sent (role chunk counted?)"
# token times are the kernel's receive stamps: every chunk is stamped (the
# run's own socket holds the kernel's stamping on before it connects), and no
# token is timed before ttsim sent it; --loop-times stamps none
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].client_loop | "\(.stamped_kernel) \(.stamped_loop)"' "$T/chat.jsonl")" \
	"24 0" "chunks stamped by the kernel"
jq -r 'select(.kind == "request") | .id as $id | .token_t | to_entries[] | "\($id)/\(.key) \(.value)"' "$T/chat.jsonl" |
	sort >"$T/tok.txt"
jq -r '"\(.req)/\(.i) \(.mono_start) \(.mono)"' "$T/send.jsonl" | sort >"$T/sent.txt"
join "$T/tok.txt" "$T/sent.txt" >"$T/tj.txt"
eq "$(wc -l <"$T/tj.txt" | tr -d ' ')" 24 "chat tokens joined with the send log"
# fields: token, client time, send began, send returned. The kernel stamps a
# packet inside the sender's send(2), so no token is timed before its send
# began, and most fall inside the call: a token still unread when the next
# one of its stream arrived is stamped late (the ASan build's slower client
# had 4 of 24 so), and a wrong clock conversion would move them all: so at
# least one inside, not a share of them, which a client kept off its core
# while tokens pile up (a loaded 2-core machine) lowers without any bug
awk '$2 + 0.0001 < $3 { early = early " " $1 }
     $2 >= $3 - 0.0001 && $2 <= $4 + 0.0001 { inside++ }
     END { if (early != "") { print "timed before it was sent:" early; exit 1 }
	   if (inside < 1) { print inside " of " NR " tokens timed within 100 us of their send call"; exit 1 } }' \
	"$T/tj.txt" || fail "token times are not the kernel's receive times"
expect_rc 0 $B --input-tokens 16 --output-tokens 5 --prompts 2 --concurrency 2 --loop-times -o "$T/lt.jsonl"
eq "$(jq -s -r '[.[] | select(.kind == "run")][0].client_loop | "\(.stamped_kernel) \(.stamped_loop)"' "$T/lt.jsonl")" \
	"0 10" "--loop-times: chunks stamped by the loop"
contains "$T/out" "0 of 10 chunks by kernel receive stamps"

# completions have no role chunk
eq "$(jq -s -c '[.[] | select(.kind == "request") | .role_chunks] | unique' "$T/u.jsonl")" '[0]' "completions role chunks"

# --json: the summary on stdout, nothing else
expect_rc 0 $B --input-tokens 16 --output-tokens 4 --prompts 2 --json -o "$T/j.jsonl"
eq "$(jget "$T/out" .kind)" summary "json summary"
eq "$(jget "$T/out" .failed)" 0 "json failed"
eq "$(jget "$T/out" '.cells | length')" 1 "json cells"
echo "ok"
