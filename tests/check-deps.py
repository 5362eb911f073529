#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check-deps.py -- is every external program pctor's scripts and tests run,
and every strongSwan plugin they rely on, provided by a Debian package that
scripts/install-deps installs?

Why: CI runs on a machine where packages once installed by hand stay, so a
missing line in install-deps only shows on a fresh machine (it happened with
ping and strongSwan's OpenSSL plugin). This test finds the programs from the
sources themselves and asks dpkg who provides them.

How:
  - The package list is read from `scripts/install-deps --list` (the single
    source). A program counts as provided when dpkg -S names a package that
    is in that list, in the closure of its Depends/Pre-Depends, or Essential or
    of Priority required (present on every Debian system).
  - Shell scripts (scripts/*, tests/**/*.sh, ipsec-conf/pctor-updown, .ci/run,
    debian/ maintainer and test scripts when present) are lexed with a small
    shell tokenizer that knows quotes, comments, here-documents, $( ), case
    patterns and the usual prefixes (exec, timeout N, ip netns exec NS, ...):
    every word in command position is a program, a builtin, a function
    defined in the script or a sourced lib, a variable (a few well-known ones
    map to programs: $TOR, $PYTHON3, $CHARON, $SWANCTL) or one of pctor's own
    programs. A command-position word that is none of these and is not
    installed is reported: either a missing package or a word the tokenizer
    misread (add it to NOT_COMMANDS with the reason).
  - Python scripts: the first string of a list literal, and bins["..."]
    keys, that name an installed program (subprocess argv lists).
  - strongSwan: the plugins named in ipsec-conf/*.conf.in plus REQUIRED_PLUGINS
    (loaded through load_modular, which the tests need) must exist as
    /usr/lib/ipsec/plugins/libstrongswan-NAME.so in a listed package.
  - Python modules imported by the scripts (and by scripts/pctor_lab and
    tests/python) must come from a listed package, the standard library or
    the scripts' own package.

Usage: check-deps.py [--self-test]   (exit 0 ok, 1 missing, 77 no dpkg)
"""
import os
import re
import shutil
import subprocess
import sys

TOP = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TOP = os.path.abspath(TOP)

BUILTINS = set("""
. : [ [[ ]] alias bg bind break builtin caller case cd command compgen complete
continue declare dirs disown do done echo elif else enable esac eval exec exit
export false fc fg fi for function getopts hash help history if in jobs kill let
local logout mapfile popd printf pushd pwd read readarray readonly return select
set shift shopt source suspend test then time times trap true type typeset ulimit
umask unalias unset until wait while { } ! coproc
""".split())

# Prefix words after which the next word is again in command position.
PREFIXES = {"exec", "command", "nohup", "setsid", "env", "time", "builtin",
            "then", "do", "else", "elif", "if", "while", "until", "!", "{", "xargs"}
# Prefixes that take arguments before the command: (name, number of args).
PREFIX_ARGS = {"timeout": 1, "chroot": 1}

# Programs that need no package from install-deps, with the reason.
NOT_COMMANDS = {
    "apt-get": "install-deps's own installer (apt is on every Debian system)",
    "systemctl": "install-deps uses it only when systemd runs the machine",
    "dpkg-query": "install-deps's own check (dpkg is Essential)",
    "perf": "bench-ipsec's optional profile (PERF=1), which names linux-perf when missing",
}

# Programs named through well-known variables.
VAR_COMMANDS = {"TOR": "tor", "PYTHON3": "python3", "CHARON": "/usr/lib/ipsec/charon",
                "SWANCTL": "swanctl", "py": "python3", "PY": "python3"}

# Programs run in ways the tokenizer cannot follow (a variable handed to
# another program), with where.
INDIRECT = {"/usr/lib/ipsec/charon": "scripts/pctor-charon:144 (unshare -m sh -c ... \"$CHARON\")"}

# Plugins the tests rely on beyond those the templates name: openssl (Ed25519
# IKE keys), and the ones charon needs to read keys and run IKE at all.
REQUIRED_PLUGINS = ["openssl", "vici", "kernel-libipsec", "kernel-netlink",
                    "socket-default", "nonce", "pem", "pkcs1", "pkcs8", "random"]

PLUGIN_DIR = "/usr/lib/ipsec/plugins"


# ---------------------------------------------------------------------------
# shell lexing

def match_close(text, j, close=")"):
    """Index just after the CLOSE that ends a group opened before J,
    honouring quotes, escapes and nested groups."""
    n, depth = len(text), 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
            k = text.find("'", j + 1)
            j = n if k < 0 else k + 1
            continue
        if c == '"':
            k = j + 1
            while k < n and text[k] != '"':
                if text[k] == "\\":
                    k += 1
                elif text.startswith("$(", k):
                    k = match_close(text, k + 2) - 1
                k += 1
            j = k + 1
            continue
        if c == "(" if close == ")" else c == "{":
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n

def skip_word(text, i):
    """Index just after the shell word starting at I (quotes, $( ), ${ })."""
    n = len(text)
    while i < n and text[i] not in " \t\n;&|)<>":
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "'":
            k = text.find("'", i + 1)
            i = n if k < 0 else k + 1
        elif c == '"':
            k = i + 1
            while k < n and text[k] != '"':
                if text[k] == "\\":
                    k += 1
                elif text.startswith("$(", k):
                    k = match_close(text, k + 2) - 1
                k += 1
            i = k + 1
        elif text.startswith("$(", i):
            i = match_close(text, i + 2)
        elif text.startswith("${", i):
            i = match_close(text, i + 2, "}")
        else:
            i += 1
    return i


def shell_commands(text):
    """Yield (line, word) for every word in command position in shell TEXT."""
    out = []
    i, n, line = 0, len(text), 1
    heredocs = []          # pending here-document terminators
    words = []             # (line, word) of the current simple command
    expect_cmd = True
    paren = [0]            # open '(' per nesting level of $( )
    skip_args = 0
    cases = []             # per open `case`: "word" (before in), "pat", "body"

    def flush_word(w, ln):
        nonlocal expect_cmd, skip_args
        if w == "":
            return
        if cases and cases[-1] == "word":
            if w == "in":
                cases[-1] = "pat"
            return
        if cases and cases[-1] == "pat":
            if w == "esac":
                cases.pop()
                expect_cmd = False
            return
        if expect_cmd and w == "esac" and cases:
            cases.pop()
            expect_cmd = False
            return
        if expect_cmd and w == "case":
            cases.append("word")
            return
        if not expect_cmd:
            words.append((ln, w))
            if [x for _, x in words[:3]] == ["ip", "netns", "exec"] and len(words) == 4:
                expect_cmd = True          # ip netns exec NS COMMAND
            return
        if expect_cmd:
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
                return              # VAR=value prefix: command follows
            if skip_args > 0:
                skip_args -= 1
                if skip_args == 0:
                    pass
                return
            if words and words[-1][1] == "command" and w.startswith("-"):
                expect_cmd = False          # command -v NAME: a lookup
                return
            words.append((ln, w))
            out.append((ln, w))
            if w in PREFIXES:
                return
            if w in PREFIX_ARGS:
                skip_args = PREFIX_ARGS[w]
                # timeout's options (-s KILL, -k 5) are skipped as words
                return
            expect_cmd = False

    cur, cur_line = "", 1
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                line += 1
                i += 2
                continue
            cur += text[i + 1]
            i += 2
            continue
        if c == "'" :
            j = text.find("'", i + 1)
            if j < 0:
                j = n
            line += text.count("\n", i, j)
            cur += "Q"
            i = j + 1
            continue
        if c == '"':
            # double quotes: the contents are one word; commands inside $( )
            # are lexed recursively.
            j = i + 1
            depth = 0
            start = j
            while j < n:
                if text[j] == "\\":
                    j += 2
                    continue
                if text.startswith("$(", j) and not text.startswith("$((", j):
                    k = match_close(text, j + 2)
                    for ln, w in shell_commands(text[j + 2:k - 1]):
                        out.append((line + text.count("\n", i, j) + ln - 1, w))
                    j = k
                    continue
                if text[j] == '"':
                    break
                j += 1
            line += text.count("\n", i, j)
            inner = text[i + 1:j]
            cur += inner if re.fullmatch(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", inner) else "Q"
            i = j + 1
            continue
        if c == "`":
            j = text.find("`", i + 1)
            if j < 0:
                j = n
            for ln, w in shell_commands(text[i + 1:j]):
                out.append((line + ln - 1, w))
            line += text.count("\n", i, j)
            cur += "Q"
            i = j + 1
            continue
        if c == "#" and cur == "":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("$((", i):
            j = text.find("))", i)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            cur += "N"
            i = j
            continue
        if text.startswith("${", i):
            j = match_close(text, i + 2, "}")
            cur += "$V"
            i = j
            continue
        if text.startswith("$(", i):
            j = match_close(text, i + 2)
            for ln, w in shell_commands(text[i + 2:j - 1]):
                out.append((line + ln - 1, w))
            line += text.count("\n", i, j)
            cur += "S"
            i = j
            continue
        if text.startswith("<<", i) and not text.startswith("<<<", i):
            m = re.match(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1", text[i:])
            if m:
                heredocs.append(m.group(2))
                i += m.end()
                continue
        if c in " \t":
            flush_word(cur, cur_line)
            cur = ""
            i += 1
            continue
        if c == "\n":
            flush_word(cur, cur_line)
            cur = ""
            line += 1
            i += 1
            while heredocs:
                term = heredocs.pop(0)
                # skip to the line that is exactly the terminator
                while i < n:
                    j = text.find("\n", i)
                    j = n if j < 0 else j
                    ln_txt = text[i:j].strip()
                    i = j + 1
                    line += 1
                    if ln_txt == term:
                        break
            expect_cmd, skip_args = True, 0
            words.clear()
            continue
        if c in ";&|":
            flush_word(cur, cur_line)
            cur = ""
            if cases and cases[-1] == "pat":
                i += 1              # pattern alternatives: a|b)
                continue
            j = i
            while i < n and text[i] in ";&|":
                i += 1
            if cases and text[j:i].startswith(";;"):
                cases[-1] = "pat"
            expect_cmd, skip_args = True, 0
            words.clear()
            continue
        if c == "(" and cur.endswith("="):
            j = match_close(text, i + 1)       # array assignment x=(...)
            line += text.count("\n", i, j)
            cur = ""
            i = j
            continue
        if text.startswith("((", i) and cur == "":
            j = text.find("))", i)             # arithmetic command (( ))
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            expect_cmd = False
            continue
        if c == "(":
            flush_word(cur, cur_line)
            cur = ""
            if cases and cases[-1] == "pat":
                i += 1              # (pattern) form
                continue
            if expect_cmd or not words:
                paren[-1] += 1
            i += 1
            expect_cmd = True
            continue
        if c == ")":
            flush_word(cur, cur_line)
            cur = ""
            if cases and cases[-1] == "pat":
                cases[-1] = "body"
            elif paren[-1] > 0:
                paren[-1] -= 1
            words.clear()
            expect_cmd = True
            i += 1
            continue
        if c in "<>":
            if not cur.isdigit():          # 2>&1: the digits are a descriptor
                flush_word(cur, cur_line)
            cur = ""
            while i < n and text[i] in "<>&":
                i += 1
            # the redirection target is not a command
            while i < n and text[i] in " \t":
                i += 1
            j = skip_word(text, i)
            line += text.count("\n", i, j)
            i = j
            continue
        if cur == "":
            cur_line = line
        cur += c
        i += 1
    flush_word(cur, cur_line)
    return out


def shell_functions(text):
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)", text, re.M))


def sourced_files(path, text):
    res = []
    for m in re.finditer(r'^\s*(?:\.|source)\s+(\S.*)$', text, re.M):
        name = os.path.basename(m.group(1).strip().strip('"'))
        for d in (os.path.dirname(path), os.path.join(TOP, "tests/integration"), os.path.join(TOP, "scripts")):
            if os.path.exists(os.path.join(d, name)):
                res.append(os.path.join(d, name))
                break
    return res


# ---------------------------------------------------------------------------
# dpkg

def dpkg_owner(path):
    real = os.path.realpath(path)
    for p in (path, real, real.replace("/usr/bin/", "/bin/", 1), real.replace("/usr/sbin/", "/sbin/", 1),
              path.replace("/usr/bin/", "/bin/", 1), path.replace("/usr/sbin/", "/sbin/", 1)):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            line = r.stdout.splitlines()[0]
            if line.startswith("diversion"):
                continue
            return [x.strip().split(":")[0] for x in line.split(":", 1)[0].split(",")]
    # alternatives (/etc/alternatives/x -> /usr/bin/x.real)
    return None


def pkg_field(pkg, field):
    r = subprocess.run(["dpkg-query", "-W", "-f=${" + field + "}", pkg], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else ""


def depends_closure(pkgs):
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        deps = pkg_field(p, "Depends") + "," + pkg_field(p, "Pre-Depends")
        for alt in deps.split(","):
            for d in alt.split("|"):
                d = d.strip().split(" ")[0].split(":")[0]
                if d and d not in seen:
                    # a virtual package: take its installed providers
                    if pkg_field(d, "Status").endswith("installed"):
                        todo.append(d)
                    else:
                        r = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Provides}\n"],
                                           capture_output=True, text=True)
                        for ln in r.stdout.splitlines():
                            name, _, prov = ln.partition(" ")
                            if re.search(r"(^|[ ,])" + re.escape(d) + r"([ ,(]|$)", prov):
                                todo.append(name)
    return seen


def essential(pkg):
    """On every Debian system: Essential, or Priority required (debootstrap's
    minbase installs exactly those)."""
    return pkg_field(pkg, "Essential").strip() == "yes" or pkg_field(pkg, "Priority").strip() == "required"


def listed_packages():
    r = subprocess.run(["sh", os.path.join(TOP, "scripts/install-deps"), "--list"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("check-deps: scripts/install-deps --list failed: " + r.stderr.strip())
    return r.stdout.split()


# ---------------------------------------------------------------------------

def source_files():
    shell, python = [], []
    cands = []
    for d in ("scripts", "scripts/pctor_lab", "tests", "tests/integration", "tests/python",
              "ipsec-conf", ".ci", "debian", "debian/tests"):
        p = os.path.join(TOP, d)
        if os.path.isdir(p):
            cands += [os.path.join(p, f) for f in sorted(os.listdir(p))]
    for f in cands:
        if not os.path.isfile(f):
            continue
        try:
            head = open(f, encoding="utf-8").readline()
        except (UnicodeDecodeError, OSError):
            continue
        if f.endswith(".sh") or re.match(r"#!.*\b(ba)?sh\b", head) or \
           os.path.basename(f) in ("postinst", "postrm", "preinst", "prerm", "config"):
            shell.append(f)
        elif f.endswith(".py") or re.match(r"#!.*python", head):
            python.append(f)
    return shell, python


def own_programs():
    names = {"pctor", "check_pctor"}
    for d in ("scripts", "src/tools"):
        for root, _, files in os.walk(os.path.join(TOP, d)):
            for f in files:
                names.add(f)
                if f.endswith(".c"):
                    names.add(f[:-2])
    return names


def resolve(word):
    """Return the path of an installed program WORD, or None."""
    if word.startswith("/"):
        return word if os.access(word, os.X_OK) else None
    p = shutil.which(word, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return p


def check(pkg_list, shell, python, plugins_from, report):
    own = own_programs()
    listed = set(pkg_list)
    closure = depends_closure([p for p in pkg_list if pkg_field(p, "Status").endswith("installed")])
    problems = []
    programs = {}   # program -> first "file:line"

    for f in shell:
        text = open(f, encoding="utf-8").read()
        funcs = shell_functions(text)
        for s in sourced_files(f, text):
            funcs |= shell_functions(open(s, encoding="utf-8").read())
        rel = os.path.relpath(f, TOP)
        for ln, w in shell_commands(text):
            if w in BUILTINS or w in funcs or w in own or w in NOT_COMMANDS:
                continue
            if w.startswith("/") and os.path.basename(w) in own:
                continue      # pctor itself, installed (/usr/bin/pctor)
            m = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?Q?|Q", w)
            if w.startswith("$") or w.startswith("Q") or w in ("S", "$V", "N"):
                v = m.group(1) if m and m.group(1) else None
                if v in VAR_COMMANDS:
                    programs.setdefault(VAR_COMMANDS[v], "%s:%d" % (rel, ln))
                continue
            if "/" in w and not w.startswith("/"):
                continue      # a path relative to the tree (./foo, $top/...)
            if not re.fullmatch(r"[A-Za-z0-9_./+-]+", w):
                continue
            programs.setdefault(w, "%s:%d" % (rel, ln))

    for prog, where in INDIRECT.items():
        programs.setdefault(prog, where)

    for f in python:
        text = open(f, encoding="utf-8").read()
        rel = os.path.relpath(f, TOP)
        for m in re.finditer(r'(?<![\w\]\)"])\[\s*"([A-Za-z0-9_.+-]+)"|bins\["([A-Za-z0-9_.+-]+)"\]', text):
            w = m.group(1) or m.group(2)
            if w in own or w in NOT_COMMANDS:
                continue
            if resolve(w):
                programs.setdefault(w, "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1))
        for m in re.finditer(r"^[ \t]*(?:import[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:$|,|\.|[ \t]as[ \t])"
                             r"|from[ \t]+([A-Za-z_][A-Za-z0-9_]*)\S*[ \t]+import[ \t])", text, re.M):
            mod = m.group(1) or m.group(2)
            if mod in sys.stdlib_module_names or mod == "__future__":
                continue
            r = subprocess.run(["/usr/bin/python3", "-c", "import %s, sys; print(%s.__file__)" % (mod, mod)],
                               capture_output=True, text=True)
            where = "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1)
            if r.returncode != 0:
                if os.path.exists(os.path.join(os.path.dirname(f), mod + ".py")):
                    continue
                if os.path.exists(os.path.join(TOP, "scripts", mod, "__init__.py")):
                    continue      # the scripts' own package (scripts/pctor_lab)
                problems.append("%s: imports Python module %s, which is not installed" % (where, mod))
                continue
            owner = dpkg_owner(r.stdout.strip())
            if not owner or not (set(owner) & (listed | closure)):
                problems.append("%s: Python module %s comes from %s, not from a package install-deps installs"
                                % (where, mod, owner or "no package"))

    for prog, where in sorted(programs.items()):
        path = resolve(prog)
        if not path:
            problems.append("%s: runs '%s', which is not installed (missing from scripts/install-deps?)"
                            % (where, prog))
            continue
        owner = dpkg_owner(path)
        if owner is None:
            problems.append("%s: runs '%s' (%s), which no Debian package provides" % (where, prog, path))
            continue
        if set(owner) & listed or set(owner) & closure or any(essential(o) for o in owner):
            report.append("%-22s %-40s %s" % (prog, ",".join(owner), where))
            continue
        problems.append("%s: runs '%s' from package %s, which scripts/install-deps does not install"
                        % (where, prog, ",".join(owner)))

    plugins = set(REQUIRED_PLUGINS)
    for f in plugins_from:
        text = open(f, encoding="utf-8").read()
        m = re.search(r"plugins\s*\{(.*?)\n  \}", text, re.S)
        if m:
            plugins |= set(re.findall(r"^\s{4}([a-z0-9-]+)\s*\{", m.group(1), re.M))
    for pl in sorted(plugins):
        so = os.path.join(PLUGIN_DIR, "libstrongswan-%s.so" % pl)
        if not os.path.exists(so):
            problems.append("strongSwan plugin %s (%s) is not installed" % (pl, so))
            continue
        owner = dpkg_owner(so) or []
        if set(owner) & listed or set(owner) & closure:
            report.append("%-22s %-40s %s" % ("plugin " + pl, ",".join(owner), "ipsec-conf"))
        else:
            problems.append("strongSwan plugin %s comes from %s, which scripts/install-deps does not install"
                            % (pl, ",".join(owner) or "no package"))
    return problems


def self_test(pkg_list):
    """The check must fail for a script that runs ping when iputils-ping is
    not listed, and pass once it is."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "t.sh")
        with open(f, "w") as fh:
            fh.write("#!/bin/bash\nfoo() { :; }\n# ping in a comment\ncat <<EOF\nnot_a_command here\nEOF\n"
                     "case $x in\n  pat1|pat2) foo ;;\nesac\nx=$(ip netns exec ns1 ping -c1 127.0.0.1 | grep -q ttl)\n")
        without = [p for p in pkg_list if p != "iputils-ping"]
        found = [w for _, w in shell_commands(open(f).read())]
        if "not_a_command" in found or "pat1" in found or "ping" not in found or "grep" not in found:
            print("check-deps: self-test: tokenizer found %s" % found)
            return 1
        if not resolve("ping"):
            print("check-deps: self-test: ping is not installed")
            return 1
        p1 = check(without, [f], [], [], [])
        p2 = check(without + ["iputils-ping"], [f], [], [], [])
        if not any("ping" in p for p in p1) or p2:
            print("check-deps: self-test failed: without iputils-ping: %s; with: %s" % (p1, p2))
            return 1
    print("check-deps: self-test passed (a script running ping fails the check until iputils-ping is listed)")
    return 0


def main():
    if not shutil.which("dpkg"):
        print("check-deps: no dpkg here; skipped")
        return 77
    pkgs = listed_packages()
    if self_test(pkgs):
        return 1
    shell, python = source_files()
    confs = [os.path.join(TOP, "ipsec-conf", f) for f in sorted(os.listdir(os.path.join(TOP, "ipsec-conf")))
             if f.endswith(".conf.in")]
    report = []
    problems = check(pkgs, shell, python, confs, report)
    for r in report:
        print("ok  " + r)
    for p in problems:
        print("FAIL " + p)
    print("check-deps: %d programs and plugins checked in %d shell and %d Python files, %d problems"
          % (len(report) + len(problems), len(shell), len(python), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(self_test(listed_packages()) if sys.argv[1:] == ["--self-test"] else main())
