#!/bin/sh
# Replaying ttsim's audits with ttaudit replay gives the simulator's own
# counts: offline runs under several arms and keep configurations (stale
# buffers from host-sampled stretches and width buckets, the generic path's
# prefilled mask, traces keyed by sampling alone with their shape and remap
# fallbacks, data-parallel chunks), and a served run's audit both from
# --audit and from the MERGE_AUDIT log lines on stderr.
. tests/e2e/lib.sh
. tests/e2e/ttsim.inc
"$TTAUDIT" replay --help >/dev/null 2>&1 || fail "ttaudit replay --help failed: the command is part of the build"

# seed arm slots garbage arrival dp, then the keep's options (':' for spaces)
for spec in "1 bare 8 0 0 1 --host-sampling:0.05" "2 stamp 8 0.2 0 1 --host-sampling:0.1" \
	"3 batch 4 0.5 0.2 1 --decode-buckets:1,2,4" "4 prefilled+bound 8 0.3 0.15 1 --decode-buckets:2,4,8" \
	"5 lifetime 16 0 0 1 --host-sampling:0.03" "6 batch+lifetime 8 0.3 0.12 1 --decode-buckets:1,2,4,8:--host-sampling:0.05" \
	"7 batch 8 0.3 0.3 2 --host-sampling:0.05" "8 bare 16 0 0 4 --generator:generic:--host-sampling:0.05" \
	"9 prefilled 8 0.2 0.2 1 --trace-key:sampling:--decode-buckets:1,2,4,8" "10 bare 8 0 0 1 --generator:generic"; do
	set -- $spec
	"$TTSIM" run --steps 4000 --seed "$1" --arm "$2" --slots "$3" --garbage-rate "$4" \
		--arrival "$5" --dp "$6" $(echo "$7" | tr : ' ') --audit "$T/a.jsonl" --json >"$T/sim.json"
	if [ "$6" -gt 1 ]; then
		eq "$(jq -s -c '[.[] | select(.ev == "merge") | [.dp, (.host_pos | length)]] | unique | map(.[1]) | unique' "$T/a.jsonl")" \
			"[$(( $3 / $6 ))]" "seed $1: chunk width"
		eq "$(jq -s '[.[] | select(.ev == "merge") | .dp] | unique | length' "$T/a.jsonl")" "$6" "seed $1: every chunk merges"
	fi
	rc=0
	"$TTAUDIT" replay --json --rules "bare,prefilled,batch,lifetime,stamp,bound,$2,$(jget "$T/sim.json" .running_rules)" "$T/a.jsonl" \
		>"$T/rep.json" || rc=$?
	[ $rc -le 1 ] || fail "replay exited $rc"
	eq "$(jget "$T/rep.json" .malformed)" 0 "seed $1: malformed lines"
	# every count of every rule the simulator reports, in one pass
	jq -r -s '.[0].rules as $r | .[1].rules as $s | $s | keys[] as $k |
		("merges", "taken", "substitutions", "prevented", "forgone", "fired", "skipped",
		 "shape_fallback") as $f | select($r[$k][$f] != $s[$k][$f]) |
		"\($k) \($f): replay \($r[$k][$f]), ttsim \($s[$k][$f])"' \
		"$T/rep.json" "$T/sim.json" >"$T/diff.txt"
	[ ! -s "$T/diff.txt" ] || { cat "$T/diff.txt" >&2; fail "seed $1 arm $2: counts differ"; }
	eq "$(jq '[.rules[].unverified] | add' "$T/rep.json")" 0 "seed $1: unverified takes"
	eq "$(jq '.rules | length' "$T/sim.json")" "$(jq '[.rules | keys[] | select(. == "bare" or . == "prefilled" or . == "batch" or . == "lifetime" or . == "stamp" or . == "bound" or . == "'"$2"'")] | length' "$T/rep.json")" "seed $1: rules compared"
	# the rules the keep ran (the generic path adds its own prefilled mask)
	run=$(jget "$T/sim.json" .running_rules)
	eq "$(jget "$T/rep.json" ".rules[\"$run\"].substitutions")" "$(jget "$T/sim.json" .substitutions)" \
		"seed $1: the engaged arm's substitutions"
	eq "$(jget "$T/rep.json" ".rules[\"$run\"].fingerprint.mismatched")" 0 "seed $1: the takes are $run's"
	eq "$(jget "$T/rep.json" ".rules[\"$2\"].merges")" "$(jget "$T/sim.json" .merges)" "seed $1 merges"
done

# a served run: the audit file and the stderr log lines replay alike, and the
# engaged arm's substitutions are the sum the finish events report
sim_start srv --time-scale 0 --arm batch --host-sampling 0.1
sim_load 60
sim_stop
sed -n 's/^.*MERGE_AUDIT //p' "$T/srv.err" >"$T/srv.jsonl"
[ "$(grep -c '"ev":"merge"' "$T/srv.jsonl")" -gt 10 ] || fail "served audit has few merges"
rc=0
"$TTAUDIT" replay --json "$T/srv.jsonl" >"$T/srep.json" || rc=$?
[ $rc -le 1 ] || fail "replay of the served audit exited $rc"
want=$(jq -s 'map(select(.ev == "request" and .phase == "finish") | .substitutions) | add' "$T/srv.jsonl")
eq "$(jget "$T/srep.json" .rules.batch.substitutions)" "$want" "served: batch substitutions"
eq "$(jget "$T/srep.json" .rules.batch.fingerprint.mismatched)" 0 "served: takes are batch's"
eq "$(jget "$T/srep.json" .malformed)" 0 "served: malformed"
