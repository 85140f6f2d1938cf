#!/usr/bin/env python3
"""tests/mutate.py — mutation testing of the C sources (run by `make mutate`).

Plants one realistic bug at a time (universalmutator's C rules: operators,
constants, conditions, deleted statements) in a copy of the working tree,
rebuilds, runs the unit tests and then the CLI scripts of tests/cli (single-
and multi-rank; not the tmux and GPU-check ones) that reach the mutated file,
as `make test` would: without --full, not the full tier's suites (`# tier:
full`: the heavy mpirun scripts and test_cli_faults), and counts the mutant as killed when a test fails (or
hangs past its limit: 3 x its unmutated run time + 10 s, at least --timeout,
so a slow test is not a kill by its own run time) and as a survivor when
every test still passes. Prints the score and each survivor as file:line with the original and
the mutated line.

Which files: those the branch changes against a base revision (default main,
plus uncommitted changes), or every .c/.h under the folders named with --dir.
CUDA sources (*/cuda/*) are left out: no GPU runs their tests here.

What is sampled: all mutants of those files, minus the ones that only touch a
comment, shuffled with --seed and taken in that order until --count were
judged or --minutes ran out — so two runs with the same seed and sources judge
the same mutants. A mutant that does not compile is not counted; nor is one
whose object file is byte-identical to the original's after stripping debug
information (the compiler proved it equivalent) — for a header, every object
and test program built from it (found in the compiler's .d files) must be.

Which scripts reach a file: found once per run, when the first mutant
survives the unit tests, by a build with gcc's --coverage (build-cov/ in the
copy) running each script: a script reaches a file when gcov counts an
executed line in it. A file no script reaches runs none (no script can kill
its mutants); headers run them all. The reach is kept in reach.json in the
scratch folder under a digest of the copy's sources, the files and the
scripts, and read back by a run on the same ones.

With --san (make mutate MUTATE_SAN=1), a mutant that survives the plain build
is judged once more as .ci/run's second pass judges it: the unit tests that
hold its code, built with ASan+UBSan (build-san/ in the copy), killed on the
first report (an index out of bounds or a negative shift, say, that the plain
build happens to get away with). Such kills are counted apart in the summary.

The copy lives in build-mutate/ (ignored by git); the working tree is never
touched. Needs the `mutate` program of universalmutator (the Makefile installs
it into build-mutate/venv).
"""
import argparse
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

PROD_DIRS = ("util", "fp8", "planner", "catalog", "reports", "exec", "tui", "cli")

# Unit tests run first for a file in this folder (the rest follow): a killed
# mutant usually fails one of these, so most mutants cost one or two binaries.
FIRST = {
    "fp8": ("test_fp8_", "test_quant", "test_granularity", "test_scaling", "test_oracle_"),
    "planner": ("test_oracle_", "test_plan", "test_catalog", "test_report_plan"),
    "catalog": ("test_catalog", "test_oracle_catalog", "test_text", "test_report"),
    "exec": ("test_oracle_", "test_exec_", "test_run_", "test_cuda_math", "test_cuda_map"),
    "tui": ("test_oracle_tui", "test_tui"),
    "reports": ("test_report", "test_plan_seed"),
    "util": ("test_util", "test_catalog"),
}


def sh(cmd, cwd, timeout=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def git_files(root, base):
    """Production C files changed against base (committed since the merge base, or not yet committed)."""
    names = set()
    for args in (["git", "diff", "--name-only", "--diff-filter=AMR", base + "...HEAD"],
                 ["git", "diff", "--name-only", "--diff-filter=AMR", "HEAD"]):
        r = sh(args, root)
        if r.returncode:
            sys.exit("mutate: %s failed: %s" % (" ".join(args), r.stdout.decode(errors="replace").strip()))
        names.update(r.stdout.decode().split())
    return sorted(n for n in names if n.split("/")[0] in PROD_DIRS and "/cuda/" not in n and n.endswith((".c", ".h")))


def dir_files(root, dirs):
    out = []
    for d in dirs:
        d = d.rstrip("/")
        if not os.path.isdir(os.path.join(root, d)):
            sys.exit("mutate: --dir %s: no such folder" % d)
        for base, _, files in os.walk(os.path.join(root, d)):
            rel = os.path.relpath(base, root)
            if "cuda" in rel.split(os.sep):
                continue
            out += [os.path.join(rel, f) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


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


def same_file(a, b):
    if not os.path.isfile(b) or os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def copy_tree(root, dest, rev=None, skip=None):
    """The working tree as git sees it (tracked and untracked, not ignored, outside skip), or revision rev,
    into dest. A working-tree copy is brought up to date in place: files that differ are copied (with a new
    mtime, so make rebuilds what depends on them), files git no longer lists are removed, and the copy's build
    folders (build*/) stay, so a second run rebuilds only what changed."""
    if rev and os.path.exists(dest):
        shutil.rmtree(dest)
    if rev:
        os.makedirs(dest)
        archive = subprocess.Popen(["git", "archive", rev], cwd=root, stdout=subprocess.PIPE)
        if subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout).returncode or archive.wait():
            sys.exit("mutate: git archive %s failed" % rev)
        return
    r = sh(["git", "ls-files", "-co", "--exclude-standard", "-z"], root)
    if r.returncode:
        sys.exit("mutate: git ls-files failed")
    wanted = set()
    for rel in r.stdout.decode().split("\0"):
        if not rel or not os.path.isfile(os.path.join(root, rel)):
            continue
        if skip and os.path.abspath(os.path.join(root, rel)).startswith(skip + os.sep):
            continue  # the scratch folder itself, when .gitignore does not name it
        wanted.add(os.path.normpath(rel))
        if same_file(os.path.join(root, rel), os.path.join(dest, rel)):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        if os.path.lexists(os.path.join(dest, rel)):
            os.unlink(os.path.join(dest, rel))
        shutil.copyfile(os.path.join(root, rel), os.path.join(dest, rel))
        shutil.copymode(os.path.join(root, rel), os.path.join(dest, rel))
    for base, dirs, names in os.walk(dest):
        if base == dest:
            dirs[:] = [d for d in dirs if not d.startswith("build")]
        for n in names:
            rel = os.path.normpath(os.path.relpath(os.path.join(base, n), dest))
            if rel not in wanted:
                os.unlink(os.path.join(base, n))


# Folders whose behaviour the command-line scripts see better than the unit tests do: for their
def test_order(tests, src):
    first = FIRST.get(src.split("/")[0], ())
    head = [t for t in tests if t.startswith(first)] if first else []
    return head + [t for t in tests if t not in head]


def in_full_tier(path):
    """Whether a suite's head comment puts it in the full tier (tests/run.sh's in_full_tier: a line
    `# tier: full`), which `make test` leaves to `make test-full`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return re.search(r"^(#| \*) tier: full", f.read(), re.M) is not None


def cli_scripts(tree, full=False):
    """The scripts of tests/cli that `make test` runs (with full, `make test-full`'s too: the heavy mpirun ones,
    minutes each), but the tmux and GPU-check ones (slow, and they exercise no C the others miss): single-rank
    ones and those that start ranks under mpirun."""
    d = os.path.join(tree, "tests", "cli")
    return sorted(s for s in os.listdir(d) if s.endswith(".sh") and not s.startswith(("tui_tmux", "gpu_check"))
                  and (full or not in_full_tier(os.path.join(d, s))))


def mpi_programs(tree, build):
    d = os.path.join(tree, "tests", "mpi")
    if not os.path.isdir(d):
        return []
    return [os.path.join(build, "mpi", os.path.splitext(f)[0]) for f in sorted(os.listdir(d)) if f.endswith(".c")]


def script_targets(tree, build):
    """What the scripts run besides the unit tests: fp8plan, the MPI programs and the fuzz targets' replay
    binaries (fuzz_replay.sh)."""
    d = os.path.join(tree, "tests", "fuzz")
    replays = [os.path.join(build, "fuzz-replay", os.path.splitext(f)[0]) for f in sorted(os.listdir(d))
               if f.startswith("fuzz_") and f.endswith(".c")] if os.path.isdir(d) else []
    return [os.path.join(build, "fp8plan")] + mpi_programs(tree, build) + replays


def write(path, text):
    with open(path, "w", encoding="utf-8") as o:
        o.write(text)


def limit_for(took, floor):
    """A mutant's time limit for a test that took `took` seconds unmutated: 3 x that + 10 s, at least
    `floor` (--timeout), so a slow test is never "killed" by its own run time."""
    return max(floor, 3 * took + 10)


def run_units(tree, make, build, tests, limits, tag, scale=1):
    """Builds and runs the test programs in turn until one fails: its name (with `tag` and "timeout" in
    parentheses as they apply), None when all pass, False when one does not build. limits: {test: seconds}
    (times `scale`)."""
    for t in tests:
        prog = os.path.join(build, "tests", t)
        if sh(make + [prog], tree).returncode:
            return False
        notes = [tag] if tag else []
        try:
            r = sh([prog], tree, timeout=limits[t] * scale)
        except subprocess.TimeoutExpired:
            return "%s (%s)" % (t, ", ".join(notes + ["timeout"]))
        if r.returncode:
            return "%s (%s)" % (t, tag) if tag else t
    return None


def run_script(tree, build, script, timeout):
    """Exit status of one tests/cli script with the fp8plan of build ("timeout" when it hangs)."""
    env = dict(os.environ, FP8PLAN=os.path.join(tree, build, "fp8plan"), FP8PLAN_ROOT=tree)
    try:
        return subprocess.run(["sh", os.path.join("tests", "cli", script)], cwd=tree, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return "timeout"


def tree_key(tree, files, scripts):
    """A digest of what the reach depends on: every file of the copy outside its build folders, the files
    mutated and the scripts run."""
    h = hashlib.sha256(repr((files, scripts)).encode())
    for base, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not (base == tree and d.startswith("build")))
        for n in sorted(names):
            full = os.path.join(base, n)
            if os.path.isfile(full) and not os.path.islink(full):
                h.update(os.path.relpath(full, tree).encode() + b"\0")
                with open(full, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def cached_reach(cache, key, tree, make, files, scripts, timeout, took):
    """script_reach, kept in the file `cache` under key (tree_key): a run on the same sources, files and
    scripts (a second seed, a larger count) reads it back instead of running every script again."""
    try:
        with open(cache, encoding="utf-8") as f:
            got = json.load(f)
        if got.get("key") == key:
            took.update(got["took"])
            print("mutate: the scripts' reach read back from %s (same sources)" % os.path.basename(cache), flush=True)
            return {s: set(v) for s, v in got["reach"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    reach = script_reach(tree, make, files, scripts, timeout, took)
    if reach is not None:
        with open(cache, "w", encoding="utf-8") as f:
            json.dump({"key": key, "took": took, "reach": {s: sorted(v) for s, v in reach.items()}}, f)
    return reach


def script_reach(tree, make, files, scripts, timeout, took):
    """{script: set of the files among `files` it executes a line of}, from a --coverage build; None when
    that build or gcov fails (then every script runs for every file). A script that fails on the unmutated
    sources is left out (it cannot tell a mutant from the tree as it is) and said. took[script] = its run
    time in seconds (the --coverage build: slower than the mutants' build, so a generous base)."""
    cov = "build-cov"
    # WERROR=0: gcc's -Wmaybe-uninitialized follows the optimizer, and --coverage's counters change what it sees
    # (a store and a load through the same dtype switch read as "may be used uninitialized"); the plain build,
    # warnings as errors, is the gate, this one only measures
    mk = [m for m in make if not m.startswith("BUILD=")] + ["BUILD=" + cov, "SANFLAGS=--coverage", "WERROR=0"]
    r = sh(mk + script_targets(tree, cov), tree)
    if r.returncode:  # say why: a build that fails here in silence makes every run slow for nobody knows what
        print("mutate: the --coverage build failed; every script runs for every file:\n%s"
              % r.stdout.decode(errors="replace")[-2000:], flush=True)
        return None
    reach = {}
    for script in scripts:
        for base, _, names in os.walk(os.path.join(tree, cov)):
            for n in names:
                if n.endswith(".gcda"):
                    os.unlink(os.path.join(base, n))
        t0 = time.monotonic()
        rc = run_script(tree, cov, script, timeout)
        took[script] = time.monotonic() - t0
        if rc:
            print("mutate: %s fails on the unmutated sources (--coverage build, %s): left out" % (script, rc),
                  flush=True)
            reach[script] = set()
            continue
        reach[script] = set()
        for f in files:
            if not f.endswith(".c"):
                reach[script].add(f)
                continue
            obj = os.path.join(cov, "obj", os.path.splitext(f)[0] + ".o")
            if not os.path.exists(os.path.join(tree, os.path.splitext(obj)[0] + ".gcda")):
                continue
            r = sh(["gcov", "-n", "-o", os.path.dirname(obj), f], tree)
            m = re.search(r"File '%s'\s*\nLines executed:([0-9.]+)%%" % re.escape(f), r.stdout.decode(errors="replace"))
            if r.returncode or not m:
                return None
            if float(m.group(1)) > 0:
                reach[script].add(f)
        print("mutate: %s reaches %d of the %d file(s)" % (script, len(reach[script]), len(files)), flush=True)
    return reach


def run_scripts(tree, build, make, scripts, timeout, took):
    """Name of the first of `scripts` that fails (or hangs), None when all pass, False if a program does not
    build. A script's limit: limit_for its unmutated time (took, when measured), at least 5 x timeout."""
    if sh(make + script_targets(tree, build), tree).returncode:
        return False
    for script in scripts:
        rc = run_script(tree, build, script, limit_for(took.get(script, 0.0), timeout * 5))
        if rc:
            return "cli/" + script + (" (timeout)" if rc == "timeout" else "")
    return None


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main", help="revision the change is measured against (default main)")
    ap.add_argument("--dir", action="append", default=[], help="mutate every .c/.h under this folder instead")
    ap.add_argument("--count", type=int, default=60, help="mutants to judge (default 60)")
    ap.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    ap.add_argument("--minutes", type=float, default=30, help="stop sampling after this long (default 30)")
    ap.add_argument("--timeout", type=int, default=60, help="least seconds a test binary may take per mutant (default 60; slower tests get 3 x their time + 10)")
    ap.add_argument("--jobs", type=int, default=2, help="make -j (default 2)")
    ap.add_argument("--work", default="build-mutate", help="scratch folder (default build-mutate)")
    ap.add_argument("--mutate-bin", default=None, help="universalmutator's mutate program")
    ap.add_argument("--report", default=None, help="also write the judged mutants as CSV here")
    ap.add_argument("--san", action="store_true",
                    help="judge plain-build survivors again under ASan+UBSan, as .ci/run's second pass does")
    ap.add_argument("--full", action="store_true",
                    help="run the full tier's suites too (make test-full's: the heavy mpirun scripts, minutes each, "
                         "and test_cli_faults)")
    ap.add_argument("--tree-rev", default=None,
                    help="judge the sources and tests of this revision instead of the working tree")
    a = ap.parse_args()

    root = sh(["git", "rev-parse", "--show-toplevel"], ".").stdout.decode().strip() or os.getcwd()
    work = os.path.abspath(os.path.join(root, a.work))
    mutate_bin = os.path.abspath(a.mutate_bin) if a.mutate_bin else os.path.join(work, "venv", "bin", "mutate")
    if not os.path.exists(mutate_bin):
        sys.exit("mutate: %s not found (make mutate installs universalmutator into %s/venv)" % (mutate_bin, a.work))
    files = dir_files(root, a.dir) if a.dir else git_files(root, a.base)
    what = ("folder " + ", ".join(a.dir)) if a.dir else ("files changed against " + a.base)
    if not files:
        print("mutate: no C sources to mutate (%s)" % what)
        return 0
    print("mutate: %d file(s), %s; seed %d, up to %d mutants or %g min" % (len(files), what, a.seed, a.count,
                                                                          a.minutes))

    tree = os.path.join(work, "tree")
    copy_tree(root, tree, a.tree_rev, work)
    build = "build"
    make = ["make", "-j%d" % a.jobs, "--no-print-directory", "CUDA=0", "BUILD=" + build]
    unit = os.path.join(tree, "tests", "unit")
    tests = sorted(os.path.splitext(f)[0] for f in os.listdir(unit) if f.startswith("test_") and f.endswith(".c")
                   and (a.full or not in_full_tier(os.path.join(unit, f))))
    scripts = cli_scripts(tree, a.full)
    targets = [os.path.join(build, "tests", t) for t in tests]
    if scripts:
        targets += script_targets(tree, build)
    r = sh(make + targets, tree)
    if r.returncode:
        sys.exit("mutate: the unmutated tree does not build:\n" + r.stdout.decode(errors="replace")[-3000:])
    limits = {}  # {test: seconds a mutant may take}, from the unmutated run
    for t in tests:  # the suite must pass before a mutant can be judged by it
        t0 = time.monotonic()
        try:
            r = sh([os.path.join(build, "tests", t)], tree, timeout=a.timeout * 5)
        except subprocess.TimeoutExpired:  # was an uncaught traceback (test_cli_faults at load ~30)
            sys.exit("mutate: %s ran past %d s without any mutant (5 x --timeout; a loaded machine?): raise "
                     "MUTATE_TIMEOUT" % (t, a.timeout * 5))
        limits[t] = limit_for(time.monotonic() - t0, a.timeout)
        if r.returncode:
            sys.exit("mutate: %s fails without any mutant; fix the suite first:\n%s" %
                     (t, r.stdout.decode(errors="replace")[-2000:]))
    slow = max(tests, key=lambda t: limits[t]) if tests else None
    if slow:
        print("mutate: a unit test may take 3 x its unmutated time + 10 s, at least %d s (longest: %s, %.0f s)" %
              (a.timeout, slow, limits[slow]), flush=True)
    script_took = {}  # {script: seconds}, measured with the reach
    files = [f for f in files if os.path.exists(os.path.join(tree, f))]
    originals = {f: open(os.path.join(tree, f), encoding="utf-8").read() for f in files}
    obj_of = lambda f: os.path.join(build, "obj", os.path.splitext(f)[0] + ".o")
    base_obj = {f: stripped(tree, obj_of(f)) for f in files if f.endswith(".c")}
    # a header's dependants (objects, test and MPI programs) as built now, to recognise a header mutant
    # that changes no code
    deps = dep_map(tree, build)
    header_deps = {f: [t for t in deps.get(f, []) if os.path.exists(os.path.join(tree, t))]
                   for f in files if f.endswith(".h")}
    base_dep = {t: stripped(tree, t) for ts in header_deps.values() for t in ts}
    reach = False  # {script: files it reaches}, found when first needed
    make_san = ["make", "-j%d" % a.jobs, "--no-print-directory", "CUDA=0", "BUILD=build-san", "SAN=address,undefined"]
    san_ready = False  # the sanitized tree, built from the unmutated sources when first needed
    # A test program is linked from the static library, so it holds a source file's code only when it uses one
    # of the names the file defines; a program without it is the same program after a mutant of that file and
    # is not run for it. (Headers: every program runs.)
    prog_syms = {t: defined_symbols(tree, os.path.join(build, "tests", t)) for t in tests}
    file_syms = {f: defined_symbols(tree, obj_of(f), True) for f in files if f.endswith(".c")}

    def holds(t, f):
        return not file_syms.get(f) or bool(prog_syms[t] & file_syms[f])

    # every mutant of every file, minus the comment-only ones; a file's mutants are kept beside the digest of the
    # text they came from and made again only when it changed (universalmutator took ~17 min for 80 files at load 20)
    pool = []
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
                pool.append((f, os.path.join(out, name)))
    rng = random.Random(a.seed)
    rng.shuffle(pool)
    print("mutate: %d mutants generated (comment-only ones dropped); judging in seeded order" % len(pool))

    deadline = time.time() + a.minutes * 60
    killed, survived, invalid, equivalent = [], [], 0, 0
    rows = []
    for f, path in pool:
        if len(killed) + len(survived) >= a.count or time.time() > deadline:
            break
        text = open(path, encoding="utf-8", errors="replace").read()
        line, before, after = changed_line(originals[f].splitlines(True), text.splitlines(True))
        target = os.path.join(tree, f)
        try:
            write(target, text)
            # build lazily: the mutated object first, then each test binary just before it runs,
            # so a mutant the first tests kill costs one link, not one per test
            if f.endswith(".c"):
                if sh(make + [obj_of(f)], tree).returncode:
                    invalid += 1
                    continue
                same = base_obj.get(f) is not None and stripped(tree, obj_of(f)) == base_obj[f]
            else:  # the objects first: most header mutants change one, and then no program need be built here
                ts = header_deps.get(f, [])
                same = bool(ts)
                for group in ([t for t in ts if t.endswith(".o")], [t for t in ts if not t.endswith(".o")]):
                    if not same or not group:
                        continue
                    if sh(make + group, tree).returncode:
                        same = None
                        break
                    same = all(base_dep[t] is not None and stripped(tree, t) == base_dep[t] for t in group)
                if same is None:
                    invalid += 1
                    continue
            if same:
                equivalent += 1
                rows.append((f, line, "equivalent", "", before, after))
                continue
            verdict, by, broken = "survived", "", False
            mine_units = test_order([t for t in tests if holds(t, f)], f)
            hit = run_units(tree, make, build, mine_units, limits, "")
            if hit is False:
                broken = True
            elif hit:
                verdict, by = "killed", hit
            if not broken and verdict == "survived" and scripts:
                if reach is False:  # measured on the sources as they are, not with this mutant in them
                    write(target, originals[f])
                    # once per run, on the slower --coverage build: 10 x --timeout, so that a long script
                    # is measured, not left out (hostile_input.sh went past 5 x, 300 s, in exec seed 131)
                    reach = cached_reach(os.path.join(work, "reach.json"), tree_key(tree, files, scripts), tree,
                                         make, files, scripts, a.timeout * 10, script_took)
                    write(target, text)
                mine = [sc for sc in scripts if reach is None or f in reach.get(sc, ())]
                hit = run_scripts(tree, build, make, mine, a.timeout, script_took) if mine else None
                if hit is False:
                    broken = True
                elif hit:
                    verdict, by = "killed", hit
            if not broken and verdict == "survived" and a.san:
                if not san_ready:
                    write(target, originals[f])
                    r = sh(make_san + [os.path.join("build-san", "tests", t) for t in tests], tree)
                    if r.returncode:
                        sys.exit("mutate: the unmutated tree does not build with ASan+UBSan:\n" +
                                 r.stdout.decode(errors="replace")[-3000:])
                    san_ready = True
                    write(target, text)
                hit = run_units(tree, make_san, "build-san", mine_units, limits, "san", 4)
                if hit is False:
                    broken = True
                elif hit:
                    verdict, by = "killed", hit
            if broken:
                invalid += 1
                continue
            (killed if verdict == "killed" else survived).append((f, line, before, after, by))
            rows.append((f, line, verdict, by, before, after))
            mark = "K" if verdict == "killed" else "S"
            print("  %s %s:%d  %s  ->  %s%s" % (mark, f, line, before[:60], after[:60],
                                                 ("   [" + by + "]") if by else ""), flush=True)
        finally:
            write(target, originals[f])

    judged = len(killed) + len(survived)
    if a.report:
        import csv
        with open(a.report, "w", newline="") as o:
            w = csv.writer(o)
            w.writerow(["file", "line", "verdict", "killed_by", "original", "mutant"])
            w.writerows(rows)
    print()
    print("mutate: %d judged (%d did not compile, %d compiled to identical code: not counted)" % (judged, invalid,
                                                                                                  equivalent))
    if a.san:
        print("mutate: %d of the kills only under ASan+UBSan" % sum(1 for k in killed if "(san" in k[4]))
    print("mutate: %d of the kills by a timeout (a hang or a slowdown, not a failed check)" %
          sum(1 for k in killed if "timeout)" in k[4]))
    if judged:
        print("mutation score: %d of %d killed = %.1f %%" % (len(killed), judged, 100.0 * len(killed) / judged))
    for f, line, before, after, _ in survived:
        print("survivor %s:%d\n    was: %s\n    now: %s" % (f, line, before, after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
