# make install into a DESTDIR with PREFIX=/usr, after a build made with the
# default PREFIX, then run what was installed from there: capture must find
# the installed shim (not /usr/local/lib), replay and ttsim must run, the man
# page must render, the pkg-config file must build a program against the
# installed library, and uninstall must leave nothing behind.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "the install test runs on the normal build";; esac
D="$T/dest"
# A build tree of its own, so that the PREFIX=/usr build does not touch $BUILD.
B="$T/build"
make --no-print-directory -s BUILD="$B" PREFIX=/usr DESTDIR="$D" install >"$T/make.log" 2>&1 ||
	{ tail -n 30 "$T/make.log" >&2; fail "make install failed"; }
bin="$D/usr/bin/ttaudit"
[ -x "$bin" ] || fail "no $bin"
[ -f "$D/usr/lib/libttaudit-shim.so" ] || fail "no installed shim"
contains "$B/gen/config.h" '#define TTAUDIT_LIBDIR "/usr/lib"'

# capture from the installed tree: the shim is found relative to the binary.
cat >"$T/gen.py" <<'PY'
print('MERGE_AUDIT {"ev":"merge","step":41,"host_pos":[22,27],"dev_pos":[29,28]}', flush=True)
PY
env -u TTAUDIT_SHIM "$bin" capture -o "$T/run.cap" -- "$PYTHON" "$T/gen.py" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "installed capture failed"; }
eq "$(jq -c 'select(.src=="audit") | .event.step' "$T/run.cap")" 41 "audit captured by the installed shim"
expect_rc 0 "$bin" replay "$T/run.cap"
contains "$T/out" "1 merge events"
expect_rc 0 "$D/usr/bin/ttsim" run --steps 200 --seed 1
expect_rc 0 "$bin" help replay

# the man page
[ -f "$D/usr/share/man/man1/ttaudit.1" ] || fail "no man page"
if command -v man >/dev/null 2>&1; then
	MANWIDTH=80 man -l "$D/usr/share/man/man1/ttaudit.1" >"$T/man.txt" 2>"$T/man.err" ||
		{ cat "$T/man.err" >&2; fail "man page does not render"; }
	contains "$T/man.txt" "ttaudit preflight"
	contains "$T/man.txt" "--mem-floor"
fi

# pkg-config and the installed library: a program linked from the install alone.
export PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
pkg-config --exists ttaudit || fail "pkg-config does not find ttaudit.pc"
cat >"$T/use.c" <<'C'
#include <ttaudit/ttaudit.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct ttaudit_options o = { .rules = "bare,batch" };
	struct ttaudit_replay *r;
	struct ttaudit_counts c;
	char err[512];
	size_t i;

	if (argc < 2 || ttaudit_replay_new(&o, &r, err, sizeof(err)))
		return 2;
	if (ttaudit_replay_file(r, argv[1], err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	for (i = 0; i < ttaudit_replay_n_rules(r); i++) {
		ttaudit_replay_counts(r, i, &c);
		printf("%s %llu %llu\n", ttaudit_replay_rule(r, i), (unsigned long long)c.merges,
		       (unsigned long long)c.substitutions);
	}
	ttaudit_replay_free(r);
	puts(ttaudit_strerror(TTAUDIT_PARSE));
	return 0;
}
C
# shellcheck disable=SC2046
cc -o "$T/use" "$T/use.c" $(pkg-config --cflags ttaudit) $(pkg-config --static --libs ttaudit) ||
	fail "a program does not build against the installed library"
"$T/use" "$FIX/audit/incident-confirmed.jsonl" >"$T/use.out" || fail "the program on the installed library failed"
eq "$(sed -n 1p "$T/use.out")" "bare 2 1" "bare's counts through the public interface"
eq "$(sed -n 2p "$T/use.out")" "batch 2 0" "batch's counts through the public interface"
eq "$(sed -n 3p "$T/use.out")" "malformed input" "ttaudit_strerror"
# only the public header is installed, with every symbol it declares prefixed
eq "$(ls "$D/usr/include/ttaudit")" "ttaudit.h" "installed headers"
! grep -E '^(int|void|const|struct [a-z_]+ \*|uint64_t|size_t) +[a-z]' "$D/usr/include/ttaudit/ttaudit.h" | grep -v ' \*\?ttaudit_' ||
	fail "a public function without the ttaudit_ prefix"

make --no-print-directory -s BUILD="$B" PREFIX=/usr DESTDIR="$D" uninstall >"$T/make.log" 2>&1 ||
	{ tail -n 30 "$T/make.log" >&2; fail "make uninstall failed"; }
left=$(find "$D" -type f | head -n 5)
[ -z "$left" ] || fail "uninstall left: $left"
