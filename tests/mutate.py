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

This file parses the options, samples and judges (Judge); the parts live in
tests/mutation/: tree.py (the files and the copy), mutants.py (the pool and
equivalence), suites.py (the unit tests and scripts, their time limits) and
reach.py (which scripts reach which files).
"""
import argparse
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in tests/mutation/
# tests/ is on sys.path (this script's folder): the modules of tests/mutation/
from mutation import mutants, suites  # noqa: E402
from mutation.reach import cached_reach  # noqa: E402
from mutation.tree import copy_tree, dir_files, git_files, sh, tree_key, write  # noqa: E402


def parse_args():
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
    return ap.parse_args()


class Judge:
    """The copy of the tree, built and its suites timed unmutated, and what a mutant is judged against."""

    def __init__(self, a, root, work, files):
        self.a, self.work = a, work
        self.tree = os.path.join(work, "tree")
        copy_tree(root, self.tree, a.tree_rev, work)
        self.build = build = "build"
        self.make = ["make", "-j%d" % a.jobs, "--no-print-directory", "CUDA=0", "BUILD=" + build]
        self.make_san = ["make", "-j%d" % a.jobs, "--no-print-directory", "CUDA=0", "BUILD=build-san",
                         "SAN=address,undefined"]
        self.tests = suites.unit_tests(self.tree, a.full)
        self.scripts = suites.cli_scripts(self.tree, a.full)
        targets = [os.path.join(build, "tests", t) for t in self.tests]
        if self.scripts:
            targets += suites.script_targets(self.tree, build)
        r = sh(self.make + targets, self.tree)
        if r.returncode:
            sys.exit("mutate: the unmutated tree does not build:\n" + r.stdout.decode(errors="replace")[-3000:])
        self.limits = suites.unit_limits(self.tree, build, self.tests, a.timeout)
        slow = max(self.tests, key=lambda t: self.limits[t]) if self.tests else None
        if slow:
            print("mutate: a unit test may take 3 x its unmutated time + 10 s, at least %d s (longest: %s, %.0f s)" %
                  (a.timeout, slow, self.limits[slow]), flush=True)
        self.script_took = {}  # {script: seconds}, measured with the reach
        self.files = [f for f in files if os.path.exists(os.path.join(self.tree, f))]
        self.originals = {f: open(os.path.join(self.tree, f), encoding="utf-8").read() for f in self.files}
        self.base_obj = {f: mutants.stripped(self.tree, self.obj_of(f)) for f in self.files if f.endswith(".c")}
        # a header's dependants (objects, test and MPI programs) as built now, to recognise a header mutant
        # that changes no code
        deps = mutants.dep_map(self.tree, build)
        self.header_deps = {f: [t for t in deps.get(f, []) if os.path.exists(os.path.join(self.tree, t))]
                            for f in self.files if f.endswith(".h")}
        self.base_dep = {t: mutants.stripped(self.tree, t) for ts in self.header_deps.values() for t in ts}
        self.reach = False  # {script: files it reaches}, found when first needed
        self.san_ready = False  # the sanitized tree, built from the unmutated sources when first needed
        # A test program is linked from the static library, so it holds a source file's code only when it uses
        # one of the names the file defines; a program without it is the same program after a mutant of that
        # file and is not run for it. (Headers: every program runs.)
        self.prog_syms = {t: mutants.defined_symbols(self.tree, os.path.join(build, "tests", t)) for t in self.tests}
        self.file_syms = {f: mutants.defined_symbols(self.tree, self.obj_of(f), True)
                          for f in self.files if f.endswith(".c")}

    def obj_of(self, f):
        return os.path.join(self.build, "obj", os.path.splitext(f)[0] + ".o")

    def holds(self, t, f):
        return not self.file_syms.get(f) or bool(self.prog_syms[t] & self.file_syms[f])

    def with_original(self, f, text, action):
        """action() run with f's original text in the copy (what is measured once per run must not see the
        mutant), then the mutant's text put back."""
        target = os.path.join(self.tree, f)
        write(target, self.originals[f])
        try:
            return action()
        finally:
            write(target, text)

    def by_scripts(self, f, text):
        """The scripts' verdict on the mutant in place: as run_scripts."""
        if self.reach is False:  # measured on the sources as they are, not with this mutant in them
            # once per run, on the slower --coverage build: 10 x --timeout, so that a long script is measured,
            # not left out (hostile_input.sh went past 5 x, 300 s, in exec seed 131)
            self.reach = self.with_original(f, text, lambda: cached_reach(
                os.path.join(self.work, "reach.json"), tree_key(self.tree, self.files, self.scripts), self.tree,
                self.make, self.files, self.scripts, self.a.timeout * 10, self.script_took))
        mine = [sc for sc in self.scripts if self.reach is None or f in self.reach.get(sc, ())]
        return suites.run_scripts(self.tree, self.build, self.make, mine, self.a.timeout,
                                  self.script_took) if mine else None

    def by_san(self, f, text, units):
        """The sanitized unit tests' verdict on the mutant in place: as run_units."""
        if not self.san_ready:
            def build_san():
                r = sh(self.make_san + [os.path.join("build-san", "tests", t) for t in self.tests], self.tree)
                if r.returncode:
                    sys.exit("mutate: the unmutated tree does not build with ASan+UBSan:\n" +
                             r.stdout.decode(errors="replace")[-3000:])
            self.with_original(f, text, build_san)
            self.san_ready = True
        return suites.run_units(self.tree, self.make_san, "build-san", units, self.limits, "san", 4)

    def verdict(self, f, text):
        """("killed", by) or ("survived", "") for the mutant in place, None when a test does not build. The unit
        tests that hold f's code first, then the scripts that reach it, then (--san) the sanitized units."""
        units = suites.test_order([t for t in self.tests if self.holds(t, f)], f)
        steps = [lambda: suites.run_units(self.tree, self.make, self.build, units, self.limits, "")]
        if self.scripts:
            steps.append(lambda: self.by_scripts(f, text))
        if self.a.san:
            steps.append(lambda: self.by_san(f, text, units))
        for step in steps:
            hit = step()
            if hit is False:
                return None
            if hit:
                return "killed", hit
        return "survived", ""

    def judge(self, f, path):
        """(file, line, verdict, killed_by, original, mutant) of one mutant: verdict killed, survived or
        equivalent (its code the original's), or "invalid" (it or a test does not compile)."""
        text = open(path, encoding="utf-8", errors="replace").read()
        line, before, after = mutants.changed_line(self.originals[f].splitlines(True), text.splitlines(True))
        target = os.path.join(self.tree, f)
        try:
            write(target, text)
            # build lazily: the mutated object first, then each test binary just before it runs, so a mutant
            # the first tests kill costs one link, not one per test
            same = mutants.compiles_same(self.tree, self.make, f, self.obj_of(f) if f.endswith(".c") else None,
                                         self.base_obj, self.header_deps, self.base_dep)
            if same is None:
                return f, line, "invalid", "", before, after
            if same:
                return f, line, "equivalent", "", before, after
            v = self.verdict(f, text)
            if v is None:
                return f, line, "invalid", "", before, after
            return f, line, v[0], v[1], before, after
        finally:
            write(target, self.originals[f])


def summary(a, rows, invalid, equivalent):
    killed = [r for r in rows if r[2] == "killed"]
    survived = [r for r in rows if r[2] == "survived"]
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
        print("mutate: %d of the kills only under ASan+UBSan" % sum(1 for k in killed if "(san" in k[3]))
    print("mutate: %d of the kills by a timeout (a hang or a slowdown, not a failed check)" %
          sum(1 for k in killed if "timeout)" in k[3]))
    if judged:
        print("mutation score: %d of %d killed = %.1f %%" % (len(killed), judged, 100.0 * len(killed) / judged))
    for f, line, _, _, before, after in survived:
        print("survivor %s:%d\n    was: %s\n    now: %s" % (f, line, before, after))


def main():
    a = parse_args()
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
    j = Judge(a, root, work, files)
    pool = mutants.pool(work, j.tree, mutate_bin, j.files, j.originals)
    random.Random(a.seed).shuffle(pool)
    print("mutate: %d mutants generated (comment-only ones dropped); judging in seeded order" % len(pool))

    deadline = time.time() + a.minutes * 60
    rows, invalid, equivalent, judged = [], 0, 0, 0
    for f, path in pool:
        if judged >= a.count or time.time() > deadline:
            break
        row = j.judge(f, path)
        if row[2] == "invalid":
            invalid += 1
            continue
        rows.append(row)
        if row[2] == "equivalent":
            equivalent += 1
            continue
        judged += 1
        _, line, verdict, by, before, after = row
        print("  %s %s:%d  %s  ->  %s%s" % ("K" if verdict == "killed" else "S", f, line, before[:60], after[:60],
                                             ("   [" + by + "]") if by else ""), flush=True)
    summary(a, rows, invalid, equivalent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
