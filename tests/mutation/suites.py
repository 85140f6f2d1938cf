"""tests/mutation/suites.py — the suites that judge a mutant and how they run.

The unit tests (those that hold the mutated file's code, the mutated folder's likeliest killers first) and
the scripts of tests/cli, as `make test` runs them (with full, `make test-full`'s too), each under a time
limit from its unmutated run so that a slow test is not a kill by its own run time.
"""
import os
import re
import subprocess
import sys
import time

from mutation.tree import sh

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


def test_order(tests, src):
    first = FIRST.get(src.split("/")[0], ())
    head = [t for t in tests if t.startswith(first)] if first else []
    return head + [t for t in tests if t not in head]


def in_full_tier(path):
    """Whether a suite's head comment puts it in the full tier (tests/run.sh's in_full_tier: a line
    `# tier: full`), which `make test` leaves to `make test-full`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return re.search(r"^(#| \*) tier: full", f.read(), re.M) is not None


def unit_tests(tree, full=False):
    """The test programs of tests/unit that `make test` runs (with full, `make test-full`'s too)."""
    unit = os.path.join(tree, "tests", "unit")
    return sorted(os.path.splitext(f)[0] for f in os.listdir(unit) if f.startswith("test_") and f.endswith(".c")
                  and (full or not in_full_tier(os.path.join(unit, f))))


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


def limit_for(took, floor):
    """A mutant's time limit for a test that took `took` seconds unmutated: 3 x that + 10 s, at least
    `floor` (--timeout), so a slow test is never "killed" by its own run time."""
    return max(floor, 3 * took + 10)


def unit_limits(tree, build, tests, timeout):
    """{test: seconds a mutant may take}, from a run of each test on the unmutated tree; the run ends, naming
    the test, when one fails or runs past 5 x timeout there (no mutant could be judged by it)."""
    limits = {}
    for t in tests:  # the suite must pass before a mutant can be judged by it
        t0 = time.monotonic()
        try:
            r = sh([os.path.join(build, "tests", t)], tree, timeout=timeout * 5)
        except subprocess.TimeoutExpired:  # was an uncaught traceback (test_cli_faults at load ~30)
            sys.exit("mutate: %s ran past %d s without any mutant (5 x --timeout; a loaded machine?): raise "
                     "MUTATE_TIMEOUT" % (t, timeout * 5))
        limits[t] = limit_for(time.monotonic() - t0, timeout)
        if r.returncode:
            sys.exit("mutate: %s fails without any mutant; fix the suite first:\n%s" %
                     (t, r.stdout.decode(errors="replace")[-2000:]))
    return limits


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
