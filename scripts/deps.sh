#!/bin/sh
# Installs the Debian packages ttaudit needs to build and test, and nothing
# else. Idempotent and quiet when everything is present, so `make demo` and
# `make check` can call it on every run.
#
# usage: scripts/deps.sh [build|check]
#   build  what `make` and `make demo` need
#   check  also what `make check` needs (cmocka, clang for libFuzzer, strace, python3,
#          SciPy for the statistics' reference values (tests/e2e/15), chromium to
#          open the report figures in a browser: tests/e2e/74, prometheus and promtool for
#          the watch tests: tests/e2e/17, 18; g++, libspdlog-dev, libfmt-dev for the C++
#          capture hosts: tests/progs/*.cpp; python3-uvicorn and python3-fastapi for the
#          real ASGI server under the capture: tests/e2e/49; python3-loguru for the
#          emitter's loguru sink: tests/python/test_emit.py; python3-torch for the
#          kit over the stand-in generator, which passes torch tensors as tt-metal does)
set -eu

want="pkg-config make gcc libc6-dev zlib1g-dev libcurl4-openssl-dev libcjson-dev \
libpcre2-dev libhwloc-dev libmicrohttpd-dev"
if [ "${1:-build}" = check ]; then
	want="$want libcmocka-dev clang libclang-rt-dev python3 python3-scipy strace jq curl chromium prometheus \
g++ libspdlog-dev libfmt-dev python3-uvicorn python3-fastapi python3-loguru python3-torch"
fi

missing=""
for p in $want; do
	# dpkg-query prints "install ok installed" only for a fully installed package.
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	"install ok installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "ttaudit: missing Debian packages:$missing" >&2
	echo "ttaudit: run as root, or: sudo apt-get install$missing" >&2
	exit 2
fi
echo "ttaudit: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
