#!/bin/sh
# tests/doc/run-examples.py, which make check runs over README.md and docs/:
# an example whose output differs, a synopsis that is not the binary's, an
# unknown directive and a failing setup make it fail; masks, "...", setup,
# replace and `$?` carried to the next command make it pass; --accept and
# --update-synopses write what the binary says.
. tests/e2e/lib.sh
RUN="$PYTHON $PWD/tests/doc/run-examples.py --build $BUILD"

cat >"$T/good.md" <<'MD'
<!-- synopsis combine -->
```
ttaudit combine [--json] REPORT.json...
```

<!-- example
setup: printf 'a\nb\nc\n' >three.txt
replace: NAME => echo three.txt
mask: /\d+ms/
-->
```
$ cat NAME
a
...
$ echo "took 12ms"; false
took 99ms
$ echo $?
1
```
MD
expect_rc 0 $RUN "$T/good.md"
contains "$T/out" "doc examples: 3 run, 1 synopses checked, 0 failed"

# the same with a wrong output line: exit 1 and the diff named by file:line
sed 's/^took 99ms$/took 99s/' "$T/good.md" >"$T/bad-out.md"
expect_rc 1 $RUN "$T/bad-out.md"
contains "$T/out" "bad-out.md:15: \$ echo \"took 12ms\"; false"
# $? is the previous command's: a wrong status is caught
sed 's/^1$/0/' "$T/good.md" >"$T/bad-rc.md"
expect_rc 1 $RUN "$T/bad-rc.md"
# a synopsis the option table does not have
sed 's/REPORT.json\.\.\./REPORTS/' "$T/good.md" >"$T/bad-syn.md"
expect_rc 1 $RUN "$T/bad-syn.md"
contains "$T/out" "synopsis of combine is not what the binary says"
# --update-synopses puts the binary's back, and the file passes again
expect_rc 0 $RUN --update-synopses "$T/bad-syn.md"
cmp "$T/good.md" "$T/bad-syn.md" || fail "--update-synopses did not restore the synopsis"
# --accept writes the real output; the file then passes
expect_rc 1 $RUN --accept "$T/bad-out.md"
grep -qx 'took 12ms' "$T/bad-out.md" || fail "--accept did not write the output"
expect_rc 0 $RUN "$T/bad-out.md"
# a failing setup and an unknown directive
sed 's/^setup: .*/setup: exit 3/' "$T/good.md" >"$T/bad-setup.md"
expect_rc 1 $RUN "$T/bad-setup.md"
contains "$T/out" "setup 'exit 3' exited 3"
sed 's/^setup: /stetup: /' "$T/good.md" >"$T/bad-dir.md"
expect_rc 1 $RUN "$T/bad-dir.md"
contains "$T/err" "unknown example directive 'stetup'"
echo "doc runner: passes good examples, fails wrong output, status, synopsis, setup, directive"
