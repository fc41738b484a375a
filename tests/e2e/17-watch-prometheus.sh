#!/bin/sh
# Debian's Prometheus scrapes a ttaudit watch that follows a capture of
# `ttsim serve` (started after watch: a late file, read from its start) and
# the server's plain log, rotated by name during the run. Prometheus's HTTP
# API then holds ttaudit_substitutions_total{rule="bare"} equal to what
# `ttaudit replay` counts on the same capture, and on the log's two files
# (nothing lost to the rotation).
. tests/e2e/lib.sh
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh installs it)"
case "$BUILD" in *asan*) skip "the capture shim cannot be preloaded under sanitizers" ;; esac
[ -f "$BUILD/libttaudit-shim.so" ] || fail "no capture shim"
TTSIM="$PWD/$BUILD/ttsim"
[ -x "$TTSIM" ] || fail "$TTSIM is not built"

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_file() { n=0; while [ ! -s "$1" ]; do n=$((n + 1)); [ $n -lt 400 ] || fail "$1 never came"; sleep 0.05; done; }

# watch first: neither source exists yet
"$TTAUDIT" watch --listen 127.0.0.1:0 --port-file "$T/watch.port" --host e2e --poll-ms 10 \
	"$T/cap.jsonl" "$T/live.log" 2>"$T/watch.err" &
WPID=$!
E2E_PIDS="$E2E_PIDS $WPID"
wait_file "$T/watch.port"
WURL="http://127.0.0.1:$(cat "$T/watch.port")"
curl -sf "$WURL/health" >"$T/health" || fail "/health"
contains "$T/health" "ok: 0 of 2 sources up"

# the server under capture; its log lines go to live.log one append at a time
# (so a rename is a real rotation: the next line makes a new file)
( "$TTAUDIT" capture -o "$T/cap.jsonl" -- "$TTSIM" serve --port 0 --port-file "$T/sim.port" \
	--time-scale 0 --arm bare --host-sampling 0.1 2>&1 |
	while IFS= read -r l; do printf '%s\n' "$l" >>"$T/live.log"; done ) &
CPID=$!
wait_file "$T/sim.port"
SIMPID=$(pgrep -f -n "ttsim serve --port 0 --port-file $T/sim.port") || fail "no ttsim process"
E2E_PIDS="$E2E_PIDS $SIMPID"
URL="http://127.0.0.1:$(cat "$T/sim.port")"

PPORT=$(free_port)
cat >"$T/prom.yml" <<EOC
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: ttaudit
    static_configs:
      - targets: ['127.0.0.1:$(cat "$T/watch.port")']
EOC
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/prom" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T/prom.log" 2>&1 &
PPID_=$!
E2E_PIDS="$E2E_PIDS $PPID_"

load() {
	i=0; : >"$T/load.cfg"
	while [ $i -lt "$1" ]; do
		[ $i -eq 0 ] || echo next >>"$T/load.cfg"
		printf 'url = "%s/v1/completions"\nheader = "Content-Type: application/json"\ndata = "{\\"prompt\\":\\"ask %d %s\\",\\"max_tokens\\":%d}"\noutput = "/dev/null"\n' \
			"$URL" $i "$(seq 1 $((i % 23)) | tr '\n' ' ')" $((3 + i % 31)) >>"$T/load.cfg"
		i=$((i + 1))
	done
	curl -s -Z --parallel-max 32 -K "$T/load.cfg" >/dev/null 2>&1 || fail "load failed"
}
load 40
mv "$T/live.log" "$T/live.log.1"     # rotation while the server runs
load 40
kill "$SIMPID" 2>/dev/null || true
wait "$CPID" 2>/dev/null || true

for f in live.log.1 live.log; do
	grep -q MERGE_AUDIT "$T/$f" || fail "$f holds no audit line: the rotation was not during the run"
done
"$TTAUDIT" replay --json "$T/cap.jsonl" >"$T/cap.json" 2>/dev/null || true
"$TTAUDIT" replay --json "$T/live.log.1" "$T/live.log" >"$T/log.json" 2>/dev/null || true
want=$(jq .rules.bare.substitutions "$T/cap.json")
[ "$want" -gt 0 ] || fail "the run made no bare substitution to count"
eq "$(jq .rules.bare.substitutions "$T/log.json")" "$want" "the log's two files hold the capture's substitutions"

# Prometheus sees the same count (after a scrape that follows the last line)
q() { curl -sf "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // "none"'; }
n=0
while :; do
	got=$(q "sum(ttaudit_substitutions_total{rule=\"bare\",source=\"$T/cap.jsonl\"})" || echo none)
	glog=$(q "sum(ttaudit_substitutions_total{rule=\"bare\",source=\"$T/live.log\"})" || echo none)
	[ "$got" = "$want" ] && [ "$glog" = "$want" ] && break
	n=$((n + 1))
	[ $n -lt 300 ] || { cat "$T/prom.log" | tail -5 >&2; fail "Prometheus has capture $got, log $glog, want $want"; }
	sleep 0.1
done
eq "$(q "sum(ttaudit_merges_total{source=\"$T/cap.jsonl\"})")" "$(jq .rules.bare.merges "$T/cap.json")" "merges in Prometheus"
eq "$(q "ttaudit_source_up{source=\"$T/cap.jsonl\",host=\"e2e\"}")" 1 "the capture is up"
eq "$(q 'count(ttaudit_build_info)')" 1 "build info"
# the pid label is the engine process's, from the capture
[ "$(q "count(ttaudit_merges_total{source=\"$T/cap.jsonl\",pid=~\"[0-9]+\"})")" -ge 1 ] || fail "no pid label"
contains "$T/watch.err" "metrics on http://127.0.0.1:"
kill "$WPID"
wait "$WPID" || fail "watch did not exit 0 on SIGTERM"
