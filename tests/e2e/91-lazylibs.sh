#!/bin/sh
# ttaudit does not link libcurl, libmicrohttpd or hwloc: it loads each when
# a command first needs it (base/dynlib.h). None is a NEEDED entry of the
# executable; with the three unloadable, the commands that need none run,
# and each command that needs one exits 2 naming the library, dlerror's
# reason and the package to install, at once, never as a verdict on the
# server (a rung not passed, a source unreachable) after its timeout.
. tests/e2e/lib.sh
command -v readelf >/dev/null 2>&1 || skip "readelf (binutils) is not installed"
PF="$FIX/preflight"

readelf -d "$TTAUDIT" >"$T/dyn"
contains "$T/dyn" "(NEEDED)"
for lib in libcurl libmicrohttpd libhwloc; do
	! grep -q "NEEDED.*\[$lib" "$T/dyn" || { cat "$T/dyn" >&2; fail "$lib is a NEEDED entry of ttaudit"; }
done
ldd "$TTAUDIT" >"$T/ldd"
for lib in libgnutls libkrb5 libssl libudev libnghttp2 libldap; do lacks "$T/ldd" "$lib"; done
# the executable's recv (cli/recv.c) is exported for libcurl's calls to bind to
nm -D --defined-only "$TTAUDIT" | grep -q ' T recv$' || fail "ttaudit does not export recv"

# The three made unloadable: an empty file of each soname, found first
# through LD_LIBRARY_PATH; in "wrong", a real library without their symbols.
zlib=$(awk '$1 == "libz.so.1" { print $3 }' "$T/ldd")
[ -f "$zlib" ] || fail "no libz.so.1 in ldd's list"
mkdir "$T/empty" "$T/wrong"
for so in libcurl.so.4 libmicrohttpd.so.12 libhwloc.so.15; do
	: >"$T/empty/$so"
	cp "$zlib" "$T/wrong/$so"
done
none() { want=$1; shift; expect_rc "$want" env LD_LIBRARY_PATH="$T/empty" "$TTAUDIT" "$@"; }

# commands that need none of them
none 0 --version
none 0 replay "$FIX/audit/incident-confirmed.jsonl"
contains "$T/out" "merge events"
none 0 watch --once "$FIX/audit/incident-confirmed.jsonl"
none 0 preflight --vendor-neutral --no-docker --root "$PF/root-ok"
case "$BUILD" in
*asan*) ;;   # the shim is not preloaded under sanitizers (40-48 skip)
*)	none 0 capture -o "$T/cap.jsonl" -- /bin/true
	eq "$(jq -r 'select(.src == "end") | .how' "$T/cap.jsonl")" exit "capture's end record" ;;
esac

# ready: refused before the first rung, not after --timeout 30
start=$(date +%s)
none 2 ready --url http://127.0.0.1:9 --timeout 30
[ $(( $(date +%s) - start )) -le 10 ] || fail "ready waited for its timeout"
contains "$T/err" "ttaudit ready: libcurl.so.4 cannot be loaded: $T/empty/libcurl.so.4: file too short; install libcurl4 (Debian)"
lacks "$T/err" "not ready"
# bench: before its ready gate
none 2 bench --url http://127.0.0.1:9 --no-progress --input-tokens 16 --output-tokens 8 --prompts 2 \
	--requests 2 --ready-timeout 30 -o "$T/run.jsonl"
contains "$T/err" "ttaudit bench: libcurl.so.4 cannot be loaded: "
contains "$T/err" "; install libcurl4 (Debian)"
[ ! -e "$T/run.jsonl" ] || fail "bench wrote a run file without libcurl"
# arm: a metrics item and a url need libcurl; without a url nothing is fetched
cat >"$T/metrics.json" <<'JSON'
{"arms": {"batch": {"requires": [{"metrics": "vllm:cache_config_info", "labels": {"enable_prefix_caching": "True"}}]}}}
JSON
none 2 arm --spec "$T/metrics.json" --arm batch --url http://127.0.0.1:9
contains "$T/err" "ttaudit arm: libcurl.so.4 cannot be loaded: "
none 1 arm --spec "$T/metrics.json" --arm batch
contains "$T/out" "FAIL"
# preflight's device checks need hwloc
none 2 preflight --topology "$PF/topo-2dev.xml" --docker "$PF/docker-none.sh" --root "$PF/root-ok"
contains "$T/err" "ttaudit preflight: libhwloc.so.15 cannot be loaded: $T/empty/libhwloc.so.15: file too short; install libhwloc15 (Debian)"
# watch serves with libmicrohttpd
none 2 watch --listen 127.0.0.1:0 "$FIX/audit/incident-confirmed.jsonl"
contains "$T/err" "ttaudit watch: libmicrohttpd.so.12 cannot be loaded: $T/empty/libmicrohttpd.so.12: file too short; install libmicrohttpd12 (Debian)"

# a library of the right name without the functions: the first one missing is named
expect_rc 2 env LD_LIBRARY_PATH="$T/wrong" "$TTAUDIT" ready --url http://127.0.0.1:9 --timeout 30
contains "$T/err" "libcurl.so.4 cannot be loaded: $T/wrong/libcurl.so.4: undefined symbol: curl_global_init"
expect_rc 2 env LD_LIBRARY_PATH="$T/wrong" "$TTAUDIT" preflight --topology "$PF/topo-2dev.xml" \
	--docker "$PF/docker-none.sh" --root "$PF/root-ok"
contains "$T/err" "undefined symbol: hwloc_topology_init"
