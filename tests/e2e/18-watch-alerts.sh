#!/bin/sh
# The shipped alerting rules: `promtool check rules`, then `promtool test
# rules` on series made from a real watch run: ttsim's audit, read by watch
# --once as it grows (one scrape a minute), fires TtauditSubstitution for
# exactly the rules whose substitutions grew, and nothing fires on a run
# without substitutions (the rules file is held to both).
. tests/e2e/lib.sh
command -v promtool >/dev/null || fail "promtool is not installed (scripts/deps.sh installs prometheus)"
TTSIM="$PWD/$BUILD/ttsim"
[ -x "$TTSIM" ] || fail "$TTSIM is not built"
RULES=watch/ttaudit-alerts.yml
promtool check rules "$RULES" >"$T/check" 2>&1 || { cat "$T/check" >&2; fail "promtool check rules"; }

# the rules without their annotations (text, rendered with $value): promtool
# compares those too, and what is under test is expr, for and labels
awk '/^ *annotations:/ { ind = match($0, /[^ ]/); skip = 1; next }
     skip && match($0, /[^ ]/) > ind { next } { skip = 0; print }' "$RULES" >"$T/rules.yml"
grep -q annotations "$T/rules.yml" && fail "annotations left in the test copy"
[ "$(grep -c 'alert:' "$T/rules.yml")" = "$(grep -c 'alert:' "$RULES")" ] || fail "alerts lost in the copy"

# scrapes: the audit cut at 0, 1/4, 2/4, 3/4 and all of its lines
scrapes() {
	total=$(wc -l <"$1")
	for k in 0 1 2 3 4; do
		head -n $((total * k / 4)) "$1" >"$T/part.jsonl"
		"$TTAUDIT" watch --once --host h --from-start "$T/part.jsonl" >"$T/s$k.prom" 2>/dev/null ||
			fail "watch --once on part $k"
	done
}
mktest() {   # mktest OUT: the promtool test file from $T/s0..4.prom
	"$PYTHON" - "$T" "$1" <<'EOP'
import json, re, sys
t, out = sys.argv[1], sys.argv[2]
line = re.compile(r'^([a-z_]+)(\{.*\})? (\S+)$')
lab = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')
keep = ("ttaudit_substitutions_total", "ttaudit_fired_total", "ttaudit_merges_total",
        "ttaudit_lost_lines_total", "ttaudit_source_up")
scr = []
for k in range(5):
    d = {}
    for l in open("%s/s%d.prom" % (t, k)):
        m = line.match(l.strip())
        if m and m.group(1) in keep:
            d[(m.group(1), m.group(2) or "")] = float(m.group(3))
    scr.append(d)
keys = sorted(set().union(*scr))
series = [{"series": n + lbl, "values": " ".join("%g" % s.get((n, lbl), 0) for s in scr)} for n, lbl in keys]
# what must fire at 4m: per (host, source, rule), substitutions that grew
fire = {}
for n, lbl in keys:
    if n != "ttaudit_substitutions_total":
        continue
    l = dict(lab.findall(lbl))
    k = (l["host"], l["source"], l["rule"])
    fire[k] = fire.get(k, 0) + scr[4].get((n, lbl), 0) - scr[0].get((n, lbl), 0)
exp = [{"exp_labels": {"severity": "page", "host": h, "source": s, "rule": r}}
       for (h, s, r), v in sorted(fire.items()) if v > 0]
test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
    "interval": "1m", "input_series": series,
    "alert_rule_test": [
        {"eval_time": "4m", "alertname": "TtauditSubstitution", "exp_alerts": exp},
        {"eval_time": "4m", "alertname": "TtauditLostLines", "exp_alerts": []},
        {"eval_time": "4m", "alertname": "TtauditSourceDown", "exp_alerts": []}]}]}
json.dump(test, open(out, "w"), indent=1)
print(len(exp))
EOP
}

# a bare arm whose trace buffers go stale (host-sampled decodes leave them
# behind): substitutions under bare (and rules that let them through)
"$TTSIM" run --steps 3000 --seed 3 --arm bare --slots 8 --host-sampling 0.1 --arrival 0.3 \
	--audit "$T/a.jsonl" >/dev/null
scrapes "$T/a.jsonl"
nfire=$(mktest "$T/test.yml")
[ "$nfire" -ge 1 ] || fail "the run made no substitution to alert on"
jq -e '.tests[0].alert_rule_test[0].exp_alerts | map(.exp_labels.rule) | index("bare")' "$T/test.yml" >/dev/null ||
	fail "bare does not substitute in this run"
(cd "$T" && promtool test rules test.yml) >"$T/ptest" 2>&1 || { cat "$T/ptest" >&2; fail "promtool test rules"; }
# the test can fail: expecting no alert where one fires
jq '.tests[0].alert_rule_test[0].exp_alerts = []' "$T/test.yml" >"$T/wrong.yml"
! (cd "$T" && promtool test rules wrong.yml) >/dev/null 2>&1 || fail "promtool passes an alert that fires unexpected"

# a run where nothing is stale (every decode rewrites its buffers): no substitution alert at all
"$TTSIM" run --steps 400 --seed 3 --arm bare --slots 4 --audit "$T/b.jsonl" --json >"$T/b.json"
eq "$(jq .substitutions "$T/b.json")" 0 "substitutions in the clean run"
[ "$(jq .merges "$T/b.json")" -gt 10 ] || fail "the clean run has few merges"
scrapes "$T/b.jsonl"
eq "$(mktest "$T/test2.yml")" 0 "alerts expected on a clean run"
(cd "$T" && promtool test rules test2.yml) >"$T/ptest" 2>&1 || { cat "$T/ptest" >&2; fail "promtool test rules (clean run)"; }
