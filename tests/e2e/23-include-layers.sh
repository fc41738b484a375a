# scripts/check-includes.sh: the tree's includes go down the Makefile's
# LAYERS; in a small tree of its own, an include sideways, one up and one of
# a directory that is no part each fail naming file, line and the include,
# whether written root-relative, beside the file or as a bare name.
. tests/e2e/lib.sh
CHECK="$PWD/scripts/check-includes.sh"

expect_rc 0 sh "$CHECK" .

R="$T/tree"
mkdir -p "$R/top" "$R/mid1" "$R/mid2" "$R/low" "$R/tests" "$R/tools/sim"
cat >"$R/Makefile" <<'EOF'
LAYERS := top tools/sim | mid1 mid2 | \
	low
EOF
echo '#include "low/l.h"' >"$R/mid2/n.h"
printf '#include "mid1/m.h"\n#include "n.h"\n#include "../low/l.h"\n#include "config.h"\n' >"$R/top/a.c"
printf '#include "m.h"\n#include "../low/l.h"\n' >"$R/mid1/m.c"
echo '#include "l.h"' >"$R/mid1/m.h"
echo '/* low */' >"$R/low/l.h"
echo '#include "mid1/m.h"' >"$R/tools/sim/s.c"
echo '#include "top/t.h"' >"$R/tests/t.c"
echo '/* top */' >"$R/top/t.h"
echo '/* test helper */' >"$R/tests/x.h"
expect_rc 0 sh "$CHECK" "$R"

# sideways (root-relative), up (bare name), no part (beside), a program beside a program
printf '#include "m.h"\n#include "mid2/n.h"\n' >"$R/mid1/m.c"
printf '/* low */\n#include "t.h"\n' >"$R/low/l.h"
echo '#include "../tests/x.h"' >"$R/mid2/n.c"
echo '#include "../../top/t.h"' >"$R/tools/sim/s.c"
expect_rc 1 sh "$CHECK" "$R"
contains "$T/out" 'mid1/m.c:2: #include "mid2/n.h" is mid2/n.h: mid1 may not include mid2 (the same layer); it may include: low'
contains "$T/out" 'low/l.h:2: #include "t.h" is top/t.h: low may not include top (a layer above)'
contains "$T/out" 'mid2/n.c:1: #include "../tests/x.h" is tests/x.h: mid2 may not include tests/x.h (not a part)'
contains "$T/out" 'tools/sim/s.c:1: #include "../../top/t.h" is top/t.h: tools/sim may not include top (the same layer)'
contains "$T/out" 'check-includes: 4 include(s) go up or sideways'
[ "$(wc -l <"$T/out")" -eq 5 ] || { cat "$T/out"; fail "more than the four violations"; }

# the tree itself with pair/ reading run records through bench/ again
C="$T/copy"
mkdir -p "$C"
cp -R Makefile ab analyzer base bench capture cli host include pair probe record replay report shim tools watch "$C"/
sed -i '1a #include "bench/record.h"' "$C/pair/pair.c"
expect_rc 1 sh "$CHECK" "$C"
contains "$T/out" 'pair/pair.c:2: #include "bench/record.h" is bench/record.h: pair may not include bench (the same layer)'

rm "$R/Makefile"
expect_rc 2 sh "$CHECK" "$R"
contains "$T/err" 'has no LAYERS line'
echo "include layers: ok"
