"""tests/mutation/mutants.py — the mutants and whether one changes any code.

The pool: universalmutator's mutants of each file, minus those that only touch a comment, kept beside the
digest of the text they came from and made again only when it changed. Equivalence: a mutant whose object
file (for a header, every object and program built from it, found in the compiler's .d files) is
byte-identical to the original's after stripping debug information changes no code.
"""
import difflib
import hashlib
import os
import re
import shutil
import sys

from mutation.tree import sh, write


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def changed_line(orig_lines, mut_lines):
    """(1-based line in the original, original text, mutated text) of the first difference."""
    sm = difflib.SequenceMatcher(None, orig_lines, mut_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        before = orig_lines[i1].strip() if i1 < len(orig_lines) else ""
        after = " / ".join(l.strip() for l in mut_lines[j1:j2]) or "(line deleted)"
        if tag == "insert":
            before, after = "(before) " + before, "(inserted) " + after
        return i1 + 1, before, after
    return 0, "", ""


def pool(work, tree, mutate_bin, files, originals):
    """[(file, mutant path)] for every mutant of every file but the comment-only ones, in file and mutant
    order. A file's mutants are made again only when its text changed (universalmutator took ~17 min for 80
    files at load 20)."""
    out_pool = []
    mdir = os.path.join(work, "mutants")
    for f in files:
        out = os.path.join(mdir, f.replace("/", "__"))
        digest = hashlib.sha256(originals[f].encode()).hexdigest()
        stamp = os.path.join(mdir, f.replace("/", "__") + ".sha256")
        if not (os.path.isdir(out) and os.path.isfile(stamp) and open(stamp).read() == digest):
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            r = sh([mutate_bin, os.path.join(tree, f), "c", "--noCheck", "--mutantDir", out], work)
            if r.returncode:
                sys.exit("mutate: universalmutator failed on %s:\n%s" % (f, r.stdout.decode(errors="replace")[-1500:]))
            write(stamp, digest)
        plain = strip_comments(originals[f])
        for name in sorted(os.listdir(out), key=lambda n: int(re.findall(r"\.mutant\.(\d+)\.", n)[0])):
            text = open(os.path.join(out, name), encoding="utf-8", errors="replace").read()
            if strip_comments(text) != plain:
                out_pool.append((f, os.path.join(out, name)))
    return out_pool


def dep_map(tree, build):
    """{source or header: [targets built from it]} from the compiler's .d files under build."""
    deps = {}
    for base, _, names in os.walk(os.path.join(tree, build)):
        for n in names:
            if not n.endswith(".d"):
                continue
            text = open(os.path.join(base, n), encoding="utf-8", errors="replace").read().replace("\\\n", " ")
            for rule in text.splitlines():
                target, _, prereq = rule.partition(":")
                target = target.strip()
                if not prereq.strip() or not target.startswith(build + "/"):
                    continue
                for p in prereq.split():
                    deps.setdefault(os.path.normpath(p), []).append(target)
    return deps


def stripped(tree, path):
    """SHA-256 of an object file or program without debug information (None if not built). A program's
    build ID goes too: the linker hashes the debug information into it, so a header mutant that only moves
    line numbers would change it."""
    full = os.path.join(tree, path)
    if not os.path.exists(full):
        return None
    tmp = full + ".strip"
    if sh(["objcopy", "--strip-debug", "--remove-section=.note.gnu.build-id", full, tmp], tree).returncode:
        return None
    with open(tmp, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    os.unlink(tmp)
    return digest


def defined_symbols(tree, path, only_global=False):
    """Names an object file or program defines (nm), an empty set if nm fails."""
    r = sh(["nm", "--defined-only"] + (["-g"] if only_global else []) + [os.path.join(tree, path)], tree)
    if r.returncode:
        return set()
    return {l.split()[-1] for l in r.stdout.decode(errors="replace").splitlines() if len(l.split()) == 3}


def compiles_same(tree, make, f, obj, base_obj, header_deps, base_dep):
    """Builds what mutant file f changes: None when it does not compile, True when the code is the original's
    (stripped objects, for a header every dependant, byte-identical), False otherwise. obj: f's object file
    (a .c); header_deps / base_dep: a header's dependants and their original digests."""
    if f.endswith(".c"):
        if sh(make + [obj], tree).returncode:
            return None
        return base_obj.get(f) is not None and stripped(tree, obj) == base_obj[f]
    # the objects first: most header mutants change one, and then no program need be built here
    ts = header_deps.get(f, [])
    same = bool(ts)
    for group in ([t for t in ts if t.endswith(".o")], [t for t in ts if not t.endswith(".o")]):
        if not same or not group:
            continue
        if sh(make + group, tree).returncode:
            return None
        same = all(base_dep[t] is not None and stripped(tree, t) == base_dep[t] for t in group)
    return same
