"""tests/mutation/reach.py — which scripts of tests/cli reach which mutated files.

Found once per run, when the first mutant survives the unit tests, by a build with gcc's --coverage
(build-cov/ in the copy) running each script: a script reaches a file when gcov counts an executed line in
it. Kept in a JSON file under a digest of the copy's sources, the files and the scripts (tree.tree_key), and
read back by a run on the same ones.
"""
import json
import os
import re
import time

from mutation.suites import run_script, script_targets
from mutation.tree import sh


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


def covered(tree, cov, f):
    """Whether gcov counts an executed line of f in the --coverage build cov (a header: always); None when gcov
    cannot say."""
    if not f.endswith(".c"):
        return True
    obj = os.path.join(cov, "obj", os.path.splitext(f)[0] + ".o")
    if not os.path.exists(os.path.join(tree, os.path.splitext(obj)[0] + ".gcda")):
        return False
    r = sh(["gcov", "-n", "-o", os.path.dirname(obj), f], tree)
    m = re.search(r"File '%s'\s*\nLines executed:([0-9.]+)%%" % re.escape(f), r.stdout.decode(errors="replace"))
    if r.returncode or not m:
        return None
    return float(m.group(1)) > 0


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
        reach[script] = set()
        if rc:
            print("mutate: %s fails on the unmutated sources (--coverage build, %s): left out" % (script, rc),
                  flush=True)
            continue
        for f in files:
            hit = covered(tree, cov, f)
            if hit is None:
                return None
            if hit:
                reach[script].add(f)
        print("mutate: %s reaches %d of the %d file(s)" % (script, len(reach[script]), len(files)), flush=True)
    return reach
