#!/bin/sh
# ttaudit passthrough: the env_passthrough patterns and values a tt-run launch
# needs. A rank started the way the TT plugin's launcher starts one (only the
# variables matching env_passthrough, MPI rank 1) is captured and instrumented
# with the printed patterns, and is neither with the plugin's default ones.
. tests/e2e/lib.sh

KIT="$PWD/tools/instrument/ttaudit_emit"

# the command-line contract (as tests/e2e/12 checks it for the others)
expect_rc 0 "$TTAUDIT" passthrough --help
cp "$T/out" "$T/help"
contains "$T/help" "usage: ttaudit passthrough"
expect_rc 0 "$TTAUDIT" passthrough -h
cmp -s "$T/out" "$T/help" || fail "-h and --help differ"
expect_rc 0 "$TTAUDIT" help passthrough
cmp -s "$T/out" "$T/help" || fail "help passthrough and --help differ"
expect_rc 2 "$TTAUDIT" passthrough --no-such-option
contains "$T/err" "ttaudit passthrough: unknown option '--no-such-option'"
expect_rc 2 "$TTAUDIT" passthrough --kit
contains "$T/err" "ttaudit passthrough: option '--kit' needs a value"

# usage and input errors
expect_rc 2 "$TTAUDIT" passthrough --guard nope
contains "$T/err" "--guard 'nope' is not an arm"
expect_rc 2 "$TTAUDIT" passthrough extra
printf 'arm:x (\n' >"$T/bad.rules"
expect_rc 2 "$TTAUDIT" passthrough --rules "$T/bad.rules"
contains "$T/err" "bad.rules"

expect_rc 0 "$TTAUDIT" passthrough --json --guard batch --kit "$KIT" --per-pid \
	--all-lines -o "$T/rank.cap.jsonl"
cp "$T/out" "$T/pt.json"
[ ! -e "$T/rank.cap.jsonl" ] || fail "passthrough created the capture file"
eq "$(jget "$T/pt.json" '.env_passthrough | join(",")')" \
	"VLLM_*,MESH_DEVICE,LD_PRELOAD,PYTHONPATH,TTAUDIT_*,QWEN36_*" patterns
eq "$(jget "$T/pt.json" '.additional_config.tt.env_passthrough == .env_passthrough')" true config
eq "$(jget "$T/pt.json" '.env.TTAUDIT_CAPTURE')" "$T/rank.cap.jsonl" capture
eq "$(jget "$T/pt.json" '.env.TTAUDIT_PER_PID')" 1 per-pid
eq "$(jget "$T/pt.json" '.env.TTAUDIT_ALL_LINES')" 1 all-lines
eq "$(jget "$T/pt.json" '.env.QWEN36_MERGE_BATCH_GUARD')" 1 guard
# no override variable: tt-metal's generator reads none
expect_rc 2 "$TTAUDIT" passthrough --force-keep
contains "$T/err" "unknown option '--force-keep'"
eq "$(jget "$T/pt.json" '.env.TTAUDIT_EMIT')" 1 kit
eq "$(jget "$T/pt.json" '.env.PYTHONPATH')" "$KIT/boot:$PWD/tools/instrument" pythonpath
case "$(jget "$T/pt.json" '.env.LD_PRELOAD')" in
*/libttaudit-shim.so*) ;;
*) fail "LD_PRELOAD is not the shim" ;;
esac

# the text form names the same values
expect_rc 0 "$TTAUDIT" passthrough --guard batch -o "$T/rank.cap.jsonl"
contains "$T/out" "--additional-config '{\"tt\":{\"env_passthrough\":[\"VLLM_*\""
contains "$T/out" "  QWEN36_MERGE_BATCH_GUARD=1"
contains "$T/out" "  TTAUDIT_CAPTURE=$T/rank.cap.jsonl"

case "$BUILD" in
*asan*) echo "the capture shim is not preloaded into python under sanitizers"; exit 0 ;;
esac
[ -x "$PYTHON" ] || skip "python not found at $PYTHON"
"$PYTHON" -c 'import loguru' 2>/dev/null || skip "python3-loguru is not installed for $PYTHON"

# One rank as the plugin's launcher starts it: its global_env holds the
# variables of the launching process that match env_passthrough (fnmatch),
# and nothing else reaches it but what MPI adds.
cat >"$T/rank.py" <<'PY'
import fnmatch, json, os, subprocess, sys
pt = json.load(open(sys.argv[1]))
patterns = pt["env_passthrough"] if sys.argv[2] == "ours" else ["VLLM_*", "MESH_DEVICE"]
launcher_env = dict(os.environ, **pt["env"])      # what capture and the kit gave the server
rank_env = {k: v for k, v in launcher_env.items()
            if any(fnmatch.fnmatch(k, p) for p in patterns)}
rank_env.update(PATH=os.environ["PATH"], OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2",
                STANDIN_CAPS="true")
sys.exit(subprocess.call([sys.executable] + sys.argv[3:], env=rank_env))
PY
expect_rc 0 "$PYTHON" "$T/rank.py" "$T/pt.json" default tests/standin/standin_engine.py \
	tests/standin/scenario.json
lacks "$T/err" "ttaudit:"
ls "$T"/rank.cap.jsonl.* >/dev/null 2>&1 && fail "the default patterns forwarded the capture"

expect_rc 0 "$PYTHON" "$T/rank.py" "$T/pt.json" ours tests/standin/standin_engine.py \
	tests/standin/scenario.json
set -- "$T"/rank.cap.jsonl.*
[ -f "$1" ] || fail "the rank wrote no capture file"
cat "$@" >"$T/rank.all.jsonl"
merges=$(jq -c 'select(.src == "audit" and .event.ev == "merge")' "$T/rank.all.jsonl" | wc -l)
[ "$merges" -gt 0 ] || fail "the rank's capture holds no merge"
eq "$(jq -r 'select(.src == "audit" and .event.ev == "merge") | .event.rank' "$T/rank.all.jsonl" | sort -u)" 1 rank
jq -r 'select(.src == "banner" or .src == "line") | .text' "$T/rank.all.jsonl" >"$T/rank.lines"
contains "$T/rank.lines" "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)"
contains "$T/rank.lines" "ttaudit: keep: inline in Generator.decode_forward at generator.py:"
contains "$T/rank.lines" "ttaudit: instrumentation on (pid "
eq "$(jq -r 'select(.src == "start") | .env.QWEN36_MERGE_BATCH_GUARD' "$T/rank.all.jsonl" | sort -u)" 1 \
	"the rank's recorded environment"
