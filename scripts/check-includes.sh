#!/bin/sh
# check-includes.sh - every #include "..." of a part goes down the layers.
#
# usage: scripts/check-includes.sh [ROOT]   (default: the current directory)
#
# The layers are the Makefile's LAYERS line (ROOT/Makefile), the top layer
# first, `|` between layers; docs/architecture.md draws them. A file of a
# part may include its own part's headers and those of the parts in the
# layers below its own; a header of a part of its own layer (sideways), of a
# layer above, or of a directory that is no part is a violation, printed as
#   FILE:LINE: #include "X" is PART/...: PART may not include it (...)
# Directories not in LAYERS (tests/, scripts/) are not checked: the tests
# reach every part. An include is found the way the compiler finds it: from
# ROOT (root-relative), beside the file, or, for the bare names of the old
# one-namespace rule, as the one header of the tree with that name; one that
# is in no part of the tree (build/gen/config.h, a system header) is skipped.
# Exit 0 when there is none, 1 when there is one, 2 when LAYERS is missing.
set -eu
ROOT=${1:-.}
cd "$ROOT"

# Temporary exceptions, one "FILE HEADER" a line. Each is a known violation
# on its way out; delete the line with the move that ends it. None today.
EXCEPTIONS='
'

LAYERS=$(awk '
	/^LAYERS[ \t]*:?=/ { on = 1; sub(/^LAYERS[ \t]*:?=[ \t]*/, "") }
	on { line = $0; more = sub(/\\$/, "", line); printf "%s ", line; if (!more) exit }
' Makefile 2>/dev/null || true)
case $LAYERS in
*[!\ ]*) ;;
*) echo "check-includes: $ROOT/Makefile has no LAYERS line" >&2; exit 2 ;;
esac

HEADERS=$(find . \( -name build -o -name '.?*' \) -prune -o -type f \( -name '*.h' -o -name '*.inc' \) -print |
	sed 's,^\./,,' | sort)
SOURCES=$(find . \( -name build -o -name '.?*' \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
	sed 's,^\./,,' | sort)

# shellcheck disable=SC2086
printf '%s\n' $SOURCES | awk -v layers="$LAYERS" -v headers="$HEADERS" -v exceptions="$EXCEPTIONS" '
function norm(p,   n, i, a, out, k, o) {
	n = split(p, a, "/"); k = 0
	for (i = 1; i <= n; i++) {
		if (a[i] == "" || a[i] == ".") continue
		if (a[i] == "..") { if (k > 0) k--; else return ""; continue }
		o[++k] = a[i]
	}
	out = o[1]
	for (i = 2; i <= k; i++) out = out "/" o[i]
	return out
}
function partof(p,   a, n) {
	n = split(p, a, "/")
	if (n >= 3 && ((a[1] "/" a[2]) in layer)) return a[1] "/" a[2]
	if (n >= 2 && (a[1] in layer)) return a[1]
	return ""
}
function below(p,   i, s) {
	s = ""
	for (i = 1; i <= np; i++) if (layer[order[i]] > layer[p]) s = s " " order[i]
	return s
}
BEGIN {
	n = split(layers, w, /[ \t]+/); lv = 0
	for (i = 1; i <= n; i++) {
		if (w[i] == "") continue
		if (w[i] == "|") { lv++; continue }
		layer[w[i]] = lv; order[++np] = w[i]
	}
	nh = split(headers, h, "\n")
	for (i = 1; i <= nh; i++) {
		if (h[i] == "") continue
		have[h[i]] = 1
		b = h[i]; sub(/.*\//, "", b)
		nbase[b]++; bybase[b] = h[i]
	}
	ne = split(exceptions, e, "\n")
	for (i = 1; i <= ne; i++) {
		split(e[i], f, /[ \t]+/)
		if (f[1] != "" && f[2] != "") { exc[f[1] " " f[2]] = 1; excused[f[1] " " f[2]] = 0 }
	}
	bad = 0
}
{
	file = $0; from = partof(file)
	if (from == "") next
	dir = file; sub(/\/[^\/]*$/, "", dir)
	ln = 0
	while ((getline line < file) > 0) {
		ln++
		if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
		inc = line; sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc); sub(/".*/, "", inc)
		r = norm(inc)
		if (!(r in have)) {
			r = norm(dir "/" inc)
			if (!(r in have)) {
				b = inc; sub(/.*\//, "", b)
				if (nbase[b] == 1 && inc !~ /\//) r = bybase[b]; else continue
			}
		}
		to = partof(r)
		if (to == from) continue
		if (to != "" && layer[to] > layer[from]) continue
		if ((file " " r) in exc) { excused[file " " r]++; continue }
		why = (to == "") ? "not a part" : (layer[to] == layer[from]) ? "the same layer" : "a layer above"
		printf "%s:%d: #include \"%s\" is %s: %s may not include %s (%s); it may include:%s\n", \
			file, ln, inc, r, from, (to == "" ? r : to), why, below(from)
		bad++
	}
	close(file)
}
END {
	for (k in excused) {
		split(k, f, " ")
		if (excused[k] == 0 && (getline junk < f[1]) >= 0)
			printf "check-includes: the exception \"%s\" matches nothing now: delete it\n", k
	}
	if (bad) { printf "check-includes: %d include(s) go up or sideways\n", bad; exit 1 }
}'
