"""tests/cli/html_pages.py — the HTML reports the tests render, and how to make them.

Shared by html_check.py (structure and the CSV cross-checks, no browser) and
html_browser.py (rendering in headless Chromium). Each page: the fp8plan
arguments that write it, stdin, and the chart ids it must hold."""
import os
import subprocess
import sys

L175 = ["--model", "gpt-175b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "4", "--dp", "4", "--mbs", "1",
        "--seq", "2048", "--dist-opt"]
RECIPES = "megatron-bf16,te-fp8,fp8lm"
SWEEP = ["--model", "gpt-13b", "--gpu", "h100-sxm", "--gpus", "16", "--recipes", "megatron-bf16,fp8lm"]
RUN = ["run", "--backend", "cpu", "--model", "gpt2-124m", "--layers", "2", "--hidden", "64", "--heads", "4",
       "--seq", "32", "--vocab", "512", "--recipe", "te-fp8", "--steps", "12", "--quiet"]
QERR = ["quant-error", "--shape", "128x1024", "--dist", "outliers"]
SCALING = ["scaling", "--history", "4", "--algo", "max"]
# amax per step: steady, the spike to 640, a zero and an inf (which a log axis cannot draw)
SCALING_IN = "1\n1.1\n0.9\n1\n1.2\n640\n2\n1\n0\n1\ninf\n1\n"
PLAN_FIGS = ["mem", "comm-bytes", "comm-time", "time"]
SCALING_FIGS = ["scaling-bounds", "scaling-scale"]

# name: (arguments before -o, stdin, chart ids)
PAGES = {
    "plan": (["plan"] + L175 + ["--recipe", "te-fp8", "--format", "html"], None, PLAN_FIGS),
    "compare": (["compare"] + L175 + ["--recipes", RECIPES, "--format", "html"], None, PLAN_FIGS),
    "sweep": (["sweep"] + SWEEP + ["--format", "html"], None, ["sweep"]),
    "seed": (["report", "seed", "--format", "html"], None,
             ["t5-memory", "t5-comm", "t1a", "scales"] + SCALING_FIGS),
    "whatif": (["report", "html"], None, PLAN_FIGS + ["t1a", "scales"] + SCALING_FIGS),
    "fidelity": (["report", "fidelity", "--format", "html"], None, ["fid-tok", "fid-mae", "fid-mem"]),
    "run": (RUN + ["--format", "html"], None, ["run-memory", "run-time", "run-loss", "run-phases", "run-comm"]),
    "scaling": (SCALING + ["--format", "html"], SCALING_IN, SCALING_FIGS),
    "scales": (["scales", "--shape", "4096x4096", "--format", "html"], None, ["scales"]),
    "qerror": (QERR + ["--format", "html"], None, ["qerror-rel", "qerror-flushed"]),
    "models": (["models", "--format", "html"], None, []),
}


def fp8plan(args, stdin=None):
    """Run the binary under test; (exit status, stdout, stderr)."""
    p = subprocess.run([os.environ["FP8PLAN"]] + args, input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def generate(outdir):
    """Write every page into outdir; returns {name: (path, exit status, stderr)}."""
    done = {}
    for name, (args, stdin, _) in PAGES.items():
        path = os.path.join(outdir, name + ".html")
        rc, _, err = fp8plan(args + ["-o", path], stdin)
        done[name] = (path, rc, err)
    return done


def ok(name):
    print("ok - " + name)


def fail(name, *why):
    """A failed check: its name on stdout (the calling script counts the lines), why on stderr."""
    print("FAIL - " + name)
    for w in why:
        print("  " + str(w)[:600], file=sys.stderr)


def check(name, cond, *why):
    if cond:
        ok(name)
    else:
        fail(name, *why)
