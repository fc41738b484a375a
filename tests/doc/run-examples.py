#!/usr/bin/python3
"""Runs the command examples of markdown files and compares their output
with the text, in the manner of cram tests: an example is a fenced block
whose lines start with "$ " (the command; a line ending in a backslash goes
on) followed by the output the command prints (stdout and stderr together).

    usage: run-examples.py [--build DIR] [--list] FILE.md...

Every file runs in a fresh directory of its own, its examples in order in
that directory (so one example can use what an earlier one wrote), with
build/ first on PATH and fixtures/, scripts/, tools/, tests/ and build/ linked in, so
that commands read as they do in a checkout.

An HTML comment right before a block says more about it, one directive per
line:

    <!-- example
    setup: SHELL LINE      run first, output not compared; `bg CMD...` starts
                           a background process the runner stops at the end
    replace: TEXT => SHELL replace TEXT in commands and expected output by
                           what SHELL prints (a port chosen at run time)
    mask: NAME...          mask volatile values in both texts: time, t, pid,
                           port, date, id, host, num, or /REGEX/
    skip: REASON           not run, and the reason is reported
    -->

In expected output a line "..." matches any number of lines. A block
without "$ " lines is not an example. Exit status 0 when every example
matched; 1 with a diff of each one that did not.

A synopsis is generated, not written: a comment "<!-- synopsis CMD... -->"
right before a fenced block says that the block is what
`ttaudit help --synopsis CMD` prints for each CMD named (a sub-command as
"report timeline"; names separated by commas), in order; "ttsim CMD" is
what `ttsim help --synopsis CMD` prints. The runner checks
every such block; `--update-synopses` rewrites them from the binary instead
(make readme does), so the README's synopses come from the option tables.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

MASKS = {
    # durations and times printed by the commands: 2.7s, 0.251s, 19.4 ms
    "time": (r"\b\d+(\.\d+)?\s?(s|ms|us|µs)\b", "<TIME>"),
    # capture records: wall and monotonic clocks
    "t": (r'"(t|mono)":\d+(\.\d+)?', r'"\1":<T>'),
    "pid": (r'("(pid|ppid|tid)":|\bpid[ =]|pid=)\d+', r"\1<PID>"),
    "port": (r"127\.0\.0\.1:\d+", "127.0.0.1:<PORT>"),
    "date": (r"\b\d\d-\d\d \d\d:\d\d:\d\d\b", "<DATE>"),
    "id": (r"\b(cmpl|chatcmpl)-[0-9a-f]{8,}\b|fnv1a64:[0-9a-f]{16}|\bttaudit-\d+-ready-\d+\b",
           "<ID>"),
    "host": (r'("host":"|host=")[^"]*"', r'\1<HOST>"'),
    "num": (r"\b\d+\.\d+\b", "<N>"),
    # runs of spaces as one (table columns whose width follows masked numbers)
    "ws": (r" {2,}", " "),
}

PRELUDE = r'''
bg() { "$@" >/dev/null 2>&1 & echo $! >>"$EXAMPLES_DIR/.bgpids"; }
'''


class Example:
    def __init__(self, path, line, cmds, expected, directives, exp_start=None):
        self.path, self.line, self.exp_start = path, line, exp_start
        self.cmds, self.expected = cmds, expected
        self.setup = [v for k, v in directives if k == "setup"]
        self.replace = [v for k, v in directives if k == "replace"]
        # names, or /REGEX/ (which may hold spaces; a "/" inside is written "\\/")
        self.masks = [m for k, v in directives if k == "mask"
                      for m in re.findall(r"/(?:[^/\\]|\\.)+/|\S+", v)]
        self.skip = next((v for k, v in directives if k == "skip"), None)
        bad = [k for k, _ in directives if k not in ("setup", "replace", "mask", "skip")]
        if bad:
            raise SystemExit(f"{path}:{line}: unknown example directive '{bad[0]}'")
        for m in self.masks:
            if m not in MASKS and not (m.startswith("/") and m.endswith("/") and len(m) > 2):
                raise SystemExit(f"{path}:{line}: unknown mask '{m}'")


def parse(path):
    """The examples of one markdown file, with the directives before each."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, directives, i = [], [], 0
    while i < len(lines):
        s = lines[i]
        if s.startswith("<!-- example"):
            directives, body = [], s[len("<!-- example"):]
            while True:
                done = "-->" in body
                body = body.split("-->")[0]
                for part in [body]:
                    part = part.strip().lstrip(":").strip()
                    if part:
                        k, _, v = part.partition(":")
                        directives.append((k.strip(), v.strip()))
                if done:
                    break
                i += 1
                if i >= len(lines):
                    raise SystemExit(f"{path}:{i}: example comment not closed")
                body = lines[i]
            i += 1
            continue
        if s.startswith("```"):
            start, block = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            if any(b.startswith("$ ") for b in block):
                out.extend(split_block(path, start, block, directives))
            directives = []
        elif s.strip():
            directives = []
        i += 1
    return out


SYNOPSIS_RE = re.compile(r"^<!-- synopsis (.+?) -->$")


def synopses(path):
    """(line index of the block's first line, block lines, commands) for each synopsis block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    res = []
    for i, s in enumerate(lines):
        m = SYNOPSIS_RE.match(s)
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"{path}:{i + 1}: a synopsis comment must come right before a fenced block")
        j = i + 2
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j >= len(lines):
            raise SystemExit(f"{path}:{i + 2}: fenced block not closed")
        cmds = [c.strip() for c in m.group(1).split(",") if c.strip()]
        res.append((i + 2, j, cmds))
    return lines, res


def synopsis_text(build, root, cmds):
    out = []
    for c in cmds:
        words = c.split()
        prog = "ttsim" if words[0] == "ttsim" else "ttaudit"
        if prog == "ttsim":
            words = words[1:]
        p = subprocess.run([os.path.join(root, build, prog), "help", "--synopsis"] + words,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            raise SystemExit(f"{prog} help --synopsis {c}: exit {p.returncode}: {p.stdout.strip()}")
        out += p.stdout.rstrip("\n").split("\n")
    return out


def check_synopses(path, build, root, update):
    """Number of synopsis blocks that differ from the binary's (rewritten when update)."""
    lines, blocks = synopses(path)
    bad = 0
    for start, end, cmds in reversed(blocks):
        want = synopsis_text(build, root, cmds)
        if lines[start:end] != want:
            if update:
                lines[start:end] = want
            else:
                bad += 1
                print(f"FAIL {os.path.relpath(path, root)}:{start}: synopsis of {', '.join(cmds)} "
                      f"is not what the binary says (make readme rewrites it)")
                print("  text:")
                print("\n".join("    " + x for x in lines[start:end]))
                print("  binary:")
                print("\n".join("    " + x for x in want))
    if update:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(tmp, path)
    return len(blocks), bad


def split_block(path, start, block, directives):
    """One Example per "$ " command of the block."""
    res, j = [], 0
    if not block[0].startswith("$ "):
        raise SystemExit(f"{path}:{start + 1}: an example block must start with '$ '")
    while j < len(block):
        line0 = start + j + 1
        cmd = block[j][2:]
        while cmd.endswith("\\") and j + 1 < len(block):
            j += 1
            cmd = cmd + "\n" + block[j]
        j += 1
        exp, exp_at = [], start + j
        while j < len(block) and not block[j].startswith("$ "):
            exp.append(block[j])
            j += 1
        # the directives apply to the block: setup runs before its first command
        res.append(Example(path, line0, [cmd], exp,
                           directives if not res else [d for d in directives if d[0] != "setup"],
                           exp_at))
    return res


def mask(text, names):
    for n in names:
        if n in MASKS:
            pat, rep = MASKS[n]
        else:
            pat, rep = n[1:-1], "<M>"
        text = re.sub(pat, rep, text)
    return text


def matches(expected, got):
    """Line match with "..." lines matching any run of lines."""
    def rec(e, g):
        while e < len(expected):
            if expected[e] == "...":
                return any(rec(e + 1, k) for k in range(g, len(got) + 1))
            if g >= len(got) or expected[e] != got[g]:
                return False
            e, g = e + 1, g + 1
        return g == len(got)
    return rec(0, 0)


GROUPS = []


def shell(cmd, cwd, env, timeout=60):
    # A group of its own, so that a command that hangs is stopped whole, and
    # what an example leaves running (`server ... &`) is stopped with it at
    # the end of the file.
    p = subprocess.Popen(["bash", "-c", PRELUDE + cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    GROUPS.append(p.pid)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out.decode("utf-8", "replace") + f"\n[timed out after {timeout} s]"
    return p.returncode, out.decode("utf-8", "replace")


def run_file(path, build, root, accept=False):
    examples = parse(path)
    work = tempfile.mkdtemp(prefix="ttaudit-doc.")
    env = dict(os.environ)
    # A user's plain PATH, the build first: not the PATH of whoever runs the
    # tests (a pyenv shim there would answer for python3, and a capture
    # example would record its shell scripts)
    env["PATH"] = os.pathsep.join([os.path.join(root, build), "/usr/local/bin", "/usr/bin", "/bin",
                                   "/usr/sbin", "/sbin"])
    env.pop("PYTHONUNBUFFERED", None)
    env["EXAMPLES_DIR"] = work
    env["TTAUDIT_SRC"] = root
    env["LC_ALL"] = "C"
    env.pop("TTAUDIT_PROGRESS", None)
    for d in ("fixtures", "scripts", "tools", "tests", "build"):
        if os.path.exists(os.path.join(root, d)):
            os.symlink(os.path.join(root, d), os.path.join(work, d))
    failed, skipped, ran, accepted = 0, [], 0, []
    last_rc = 0   # `$ echo $?` says the previous command's status, as in a shell
    try:
        for ex in examples:
            where = f"{os.path.relpath(path, root)}:{ex.line}"
            if ex.skip:
                skipped.append(f"{where}: {ex.skip}")
                continue
            for s in ex.setup:
                rc, out = shell(s, work, env)
                if rc:
                    print(f"FAIL {where}: setup '{s}' exited {rc}:\n{out}")
                    failed += 1
            cmd, expected = ex.cmds[0], "\n".join(ex.expected)
            for r in ex.replace:
                text, _, sh = r.partition("=>")
                rc, val = shell(sh.strip(), work, env)
                val = val.strip()
                if rc or not val:
                    print(f"FAIL {where}: replace '{r}' gave nothing (exit {rc})")
                    failed += 1
                    continue
                cmd = cmd.replace(text.strip(), val)
                expected = expected.replace(text.strip(), val)
            rc, out = shell(f"(exit {last_rc}); " + cmd, work, env)
            last_rc = rc
            ran += 1
            want = mask(expected, ex.masks).split("\n") if ex.expected else []
            got = mask(out.rstrip("\n"), ex.masks).split("\n") if out.strip("\n") else []
            if not matches(want, got):
                failed += 1
                accepted.append((ex, out.rstrip("\n")))
                print(f"FAIL {where}: $ {cmd}")
                print("  expected:")
                print("\n".join("    " + w for w in want))
                print("  got (exit %d):" % rc)
                print("\n".join("    " + g for g in got))
    finally:
        for g in GROUPS:
            try:
                os.killpg(g, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        GROUPS.clear()
        pids = os.path.join(work, ".bgpids")
        if os.path.exists(pids):
            for p in open(pids).read().split():
                try:
                    os.kill(int(p), signal.SIGTERM)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(work, ignore_errors=True)
    if accept and accepted:
        # the output each failed example really printed becomes its text
        # (review the diff: that is the point of the option)
        lines = open(path, encoding="utf-8").read().split("\n")
        for ex, out in sorted(accepted, key=lambda a: -a[0].exp_start):
            lines[ex.exp_start:ex.exp_start + len(ex.expected)] = out.split("\n") if out else []
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(tmp, path)
        print(f"{os.path.relpath(path, root)}: {len(accepted)} example(s) rewritten with their output")
    return ran, failed, skipped


def main():
    ap = argparse.ArgumentParser(description="run the command examples of markdown files")
    ap.add_argument("--build", default="build")
    ap.add_argument("--list", action="store_true", help="list the examples, run nothing")
    ap.add_argument("--accept", action="store_true",
                    help="write each failing example's real output into the file (then review the diff)")
    ap.add_argument("--update-synopses", action="store_true",
                    help="rewrite the synopsis blocks from the binary, run nothing")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    root = os.getcwd()
    total = bad = 0
    skips = []
    if a.update_synopses:
        for f in a.files:
            check_synopses(f, a.build, root, True)
        return 0
    nsyn = 0
    for f in a.files:
        if not a.list:
            n, b = check_synopses(f, a.build, root, False)
            nsyn += n
            bad += b
        if a.list:
            for ex in parse(f):
                print(f"{f}:{ex.line}: {'skip: ' + ex.skip if ex.skip else '$ ' + ex.cmds[0]}")
            continue
        ran, failed, skipped = run_file(f, a.build, root, a.accept)
        total += ran
        bad += failed
        skips += skipped
    if a.list:
        return 0
    for s in skips:
        print(f"skipped {s}")
    print(f"doc examples: {total} run, {nsyn} synopses checked, {bad} failed, {len(skips)} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
