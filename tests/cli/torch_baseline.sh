#!/bin/sh
# tests/cli/torch_baseline.sh — the PyTorch baseline's own plumbing without
# PyTorch or a GPU: it is skipped (exit 69) where torch is missing; its rows
# are written as they are measured (a stopped run keeps them); a part that
# fails or runs out of memory becomes an error row and the others still run;
# out-of-memory is recognised on every PyTorch version (torch.OutOfMemoryError,
# torch.cuda.OutOfMemoryError, or an older RuntimeError saying so).
. "$(dirname "$0")/../lib.sh"
root=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - no python3"
    finish
    exit $?
fi
gpu=$root/tests/gpu

# a PyTorch stand-in with only what the helpers look at: torch.cuda.OutOfMemoryError (1.13+), no torch.OutOfMemoryError
mkdir -p "$TMP/fake/torch"
cat >"$TMP/fake/torch/__init__.py" <<'PY'
class _Oom(RuntimeError):
    pass


class cuda:  # noqa: N801 - a stand-in for the torch.cuda module
    OutOfMemoryError = _Oom
PY

if PYTHONPATH=$gpu:$TMP/fake python3 - "$TMP/rows.csv" >"$TMP/out" 2>"$TMP/err" <<'PY'
import sys
import torch
import torch_baseline as tb

path = sys.argv[1]
checks = []
checks.append(("oom: torch.cuda.OutOfMemoryError", tb.is_oom(torch.cuda.OutOfMemoryError("Tried to allocate 2 GiB"), torch)))
checks.append(("oom: an old RuntimeError message", tb.is_oom(RuntimeError("CUDA error: out of memory"), None)))
checks.append(("not oom: another error", not tb.is_oom(ValueError("shape mismatch"), torch)))
checks.append(("oom types without torch.OutOfMemoryError", tb.oom_types(torch) == (torch.cuda.OutOfMemoryError,)))
rows = tb.Rows(path)
rows.append(["gemm", "a", "1x1x1", "bf16", "1", "1", "1", "1", "", "", "", "first"])
with open(path) as f:
    checks.append(("a row is on disk as soon as it is measured", len(f.read().splitlines()) == 2))


def boom():
    raise RuntimeError("boom")


def oom():
    raise torch.cuda.OutOfMemoryError("CUDA out of memory")


checks.append(("a failing part returns False", tb.run_part(rows, "gemm", boom) is False))
checks.append(("an out-of-memory part returns False", tb.run_part(rows, "stack", oom) is False))
checks.append(("a good part still runs", tb.run_part(rows, "copy", lambda: rows.append(["copy"] + [""] * 11))))
rows.close()
lines = open(path).read().splitlines()
checks.append(("header + 4 rows", len(lines) == 5 and lines[0].startswith("part,name,shape")))
checks.append(("the failure is a row naming it", lines[2].startswith("error,gemm,") and "failed: RuntimeError: boom" in lines[2]))
checks.append(("out of memory is said", lines[3].startswith("error,stack,") and "out of memory" in lines[3]))
for name, ok in checks:
    print(("  ok: " if ok else "  FAIL: ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
then
    pass "torch_baseline helpers"
else
    fail "torch_baseline helpers" "$(grep -v ' ok: ' "$TMP/out")" "$(tail -n 5 "$TMP/err")"
fi

# stopped (SIGTERM, the stage's time limit) after two rows: both are in the file
PYTHONPATH=$gpu:$TMP/fake python3 -c "
import time, torch_baseline as tb
r = tb.Rows('$TMP/stop.csv')
r.append(['copy'] + [''] * 11)
r.append(['gemm'] + [''] * 11)
time.sleep(60)
" &
pid=$!
i=0
lines() { { wc -l <"$1"; } 2>/dev/null || echo 0; }
while [ "$(lines "$TMP/stop.csv")" -lt 3 ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -TERM $pid 2>/dev/null
wait $pid 2>/dev/null
expect_eq "a stopped run keeps its rows" "$(lines "$TMP/stop.csv")" 3

# without PyTorch (or without a GPU it can see): skipped, exit 69, no CSV
PYTHONPATH=$gpu python3 -c "import torch" >/dev/null 2>&1 && have_torch=1 || have_torch=0
python3 "$gpu/torch_baseline.py" "$TMP/none.csv" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "no PyTorch or no GPU for it: exit 69" 69
if [ "$have_torch" = 0 ]; then expect_err "it says it is skipped" "PyTorch is not importable here"; fi
if [ -f "$TMP/none.csv" ]; then fail "a skipped run left a CSV"; else pass "a skipped run leaves no CSV"; fi
finish
