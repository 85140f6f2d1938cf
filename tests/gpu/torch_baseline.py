#!/usr/bin/env python3
"""tests/gpu/torch_baseline.py -- a PyTorch peer for the GPU check, run in the same job.

    python3 tests/gpu/torch_baseline.py OUT_CSV [--layers L] [--tokens N] [--steps S]

PyTorch is on the GPU machine; it is not a dependency of fp8plan. Three parts:

1. The executor's layer stack in PyTorch: GPT-2 style pre-LN blocks of GPT-13B
   (hidden 5120, FFN 20480, 40 heads, GELU tanh, linear biases), learned
   positions, vocabulary 50257 padded to 50304 with a tied head, sequence 2048,
   N tokens per step. BF16 mixed precision as Megatron runs it: FP32 weights
   under torch.autocast(bfloat16), FP32 gradients, fused AdamW with FP32
   states. Attention twice: SDPA's default kernel (flash) and the math kernel
   (materialized scores, as fp8plan's executor runs it). Forward + backward +
   optimizer step, CUDA events, 2 warm-up steps then S timed, median; tokens/s,
   model TFLOP/s with llm.c's 6*N + 6*L*C*T FLOPs per token, peak memory.
2. The same fourteen GEMM shapes as gpu_bench (4096^3, 8192^3, the twelve GEMMs
   of one GPT-13B layer): torch.mm in BF16 and torch._scaled_mm in FP8 (E4M3 x
   E4M3 with fast accumulation for fprop; E5M2 x E4M3 with split accumulation
   for dgrad and wgrad, FP32 output for wgrad), per-tensor scales, TN operands
   (the second operand column-major, as _scaled_mm requires). Random data.
3. A device-to-device copy of 2 GiB: the memory-bandwidth ceiling (bytes read +
   bytes written).

Rows: part,name,shape,precision,median_ms,min_ms,max_ms,tflops,gbps,tokens_per_s,peak_mem_bytes,note

Each row is written (and flushed) as soon as it is measured, so a part that
fails, runs out of memory or is stopped at the stage's time limit loses
nothing measured before it; a part that fails adds an "error" row and the
others still run. Exit 0, 1 when a part failed, 69 when PyTorch is not
importable or sees no GPU (the GPU check reports the stage as skipped).
"""
import argparse
import csv
import statistics
import sys
import time

torch = None  # imported by load_torch(): the helpers below work without it
F = None

HEADER = ["part", "name", "shape", "precision", "median_ms", "min_ms", "max_ms", "tflops", "gbps", "tokens_per_s",
          "peak_mem_bytes", "note"]


def load_torch():
    """Import PyTorch; None (with the reason printed) when it is not importable."""
    global torch, F
    try:
        import torch as t
        import torch.nn.functional as f
    except ImportError as exc:
        print(f"torch_baseline: PyTorch is not importable here ({exc}); skipped", file=sys.stderr)
        return None
    torch, F = t, f
    return t


def oom_types(t):
    """The out-of-memory exception classes this PyTorch has (torch.OutOfMemoryError is 2.5+,
    torch.cuda.OutOfMemoryError 1.13+; older ones raise a RuntimeError saying so)."""
    found = []
    for owner in (t, getattr(t, "cuda", None)):
        e = getattr(owner, "OutOfMemoryError", None)
        if isinstance(e, type) and issubclass(e, BaseException) and e not in found:
            found.append(e)
    return tuple(found)


def is_oom(exc, t=None):
    t = t if t is not None else torch
    kinds = oom_types(t) if t is not None else ()
    return (kinds and isinstance(exc, kinds)) or "out of memory" in str(exc).lower()


class Rows:
    """The CSV, written row by row: header at open, each row flushed as it comes."""

    def __init__(self, path):
        self.f = open(path, "w", newline="", encoding="utf-8")
        self.w = csv.writer(self.f)
        self.n = 0
        self.append(HEADER, count=False)

    def append(self, row, count=True):
        self.w.writerow(row)
        self.f.flush()
        self.n += count

    def close(self):
        self.f.close()


def run_part(rows, name, fn):
    """Run one part; on an exception add an error row naming it and carry on. True when it succeeded."""
    try:
        fn()
        return True
    except Exception as exc:  # noqa: BLE001 - every failure becomes a row; the other parts still run
        what = "out of memory" if is_oom(exc) else "failed"
        note = f"{what}: {type(exc).__name__}: {exc}".replace("\n", " ")[:300]
        rows.append(["error", name, "", "", "", "", "", "", "", "", "", note])
        print(f"torch_baseline: {name}: {note}", file=sys.stderr)
        return False


def timed(fn, warm=3, min_reps=10, max_reps=50, budget_s=0.15):
    """Median/min/max seconds of fn() with CUDA events around each run."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    while len(times) < max_reps and (len(times) < min_reps or sum(times) < budget_s):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times), min(times), max(times)


def model_classes():
    """The layer stack's modules (defined once PyTorch is loaded)."""

    class Block(torch.nn.Module):
        def __init__(self, c, f, heads, attn):
            super().__init__()
            self.heads, self.attn = heads, attn
            self.ln1, self.ln2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
            self.qkv, self.proj = torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)
            self.fc1, self.fc2 = torch.nn.Linear(c, f), torch.nn.Linear(f, c)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            if self.attn == "math":
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class Gpt(torch.nn.Module):
        def __init__(self, layers, c, f, heads, vocab_padded, seq, attn):
            super().__init__()
            self.wte, self.wpe = torch.nn.Embedding(vocab_padded, c), torch.nn.Embedding(seq, c)
            self.blocks = torch.nn.ModuleList(Block(c, f, heads, attn) for _ in range(layers))
            self.lnf = torch.nn.LayerNorm(c)

        def forward(self, idx, tgt, vocab):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.lnf(x) @ self.wte.weight.t()  # tied head
            return F.cross_entropy(logits[..., :vocab].float().reshape(-1, vocab), tgt.reshape(-1))

    return Gpt


def layer_stack(rows, layers, tokens, steps):
    C, FF, H, V, VP, T = 5120, 20480, 40, 50257, 50304, 2048
    B = tokens // T
    for attn in ("flash", "math"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        with torch.device("cuda"):  # built on the GPU: no host-side init of billions of parameters
            model = model_classes()(layers, C, FF, H, VP, T, attn)
        for p in model.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
        n_params = sum(p.numel() for p in model.parameters())
        idx = torch.randint(0, V, (B, T), device="cuda")
        tgt = torch.randint(0, V, (B, T), device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(idx, tgt, V)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        try:
            med, lo, hi = timed(step, warm=2, min_reps=steps, max_reps=steps, budget_s=0.0)
        except Exception as exc:  # noqa: BLE001 - out of memory is a result here; anything else goes up
            if not is_oom(exc):
                raise
            rows.append(["stack", f"gpt13b-{layers}l-{attn}", f"{tokens} tokens", "bf16-amp", "", "", "", "", "", "",
                         "", f"out of memory: {exc}".replace("\n", " ")[:300]])
            del model, opt
            continue
        flops = (6.0 * n_params + 6.0 * layers * C * T) * tokens
        rows.append(["stack", f"gpt13b-{layers}l-{attn}", f"{tokens} tokens x {layers} layers", "bf16-amp",
                     f"{med * 1e3:.3f}", f"{lo * 1e3:.3f}", f"{hi * 1e3:.3f}", f"{flops / med * 1e-12:.1f}", "",
                     f"{tokens / med:.0f}", str(torch.cuda.max_memory_allocated()),
                     f"{n_params} params; fused AdamW; SDPA {attn}"])
        print(f"  torch stack {attn:5s}: {med * 1e3:8.2f} ms/step, {tokens / med:9.0f} tok/s, "
              f"{flops / med * 1e-12:6.1f} TFLOP/s, peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
        del model, opt


def gemm_sweep(rows, tokens):
    C, FF, M = 5120, 20480, tokens
    shapes = [("cube4096", "fprop", 4096, 4096, 4096), ("cube8192", "fprop", 8192, 8192, 8192)]
    for name, n_out, k_in in (("qkv", 3 * C, C), ("proj", C, C), ("fc1", FF, C), ("fc2", C, FF)):
        shapes += [(f"gpt13b.{name}", "fprop", M, n_out, k_in), (f"gpt13b.{name}", "dgrad", M, k_in, n_out),
                   (f"gpt13b.{name}", "wgrad", n_out, k_in, M)]
    one = torch.ones((), device="cuda", dtype=torch.float32)
    have_fp8 = hasattr(torch, "_scaled_mm") and torch.cuda.get_device_capability() >= (8, 9)
    for shape, role, m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        flop = 2.0 * m * n * k
        med, lo, hi = timed(lambda: torch.mm(a, b.t()))
        rows.append(["gemm", f"{shape}.{role}", f"{m}x{n}x{k}", "bf16", f"{med * 1e3:.4f}", f"{lo * 1e3:.4f}",
                     f"{hi * 1e3:.4f}", f"{flop / med * 1e-12:.1f}", "", "", "", "torch.mm, TN"])
        if not have_fp8:
            continue
        grad = role != "fprop"
        a8 = a.to(torch.float8_e5m2 if grad else torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn)
        out = torch.float32 if role == "wgrad" else torch.bfloat16
        try:
            med, lo, hi = timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=out,
                                                         use_fast_accum=not grad))
            prec = "e5m2xe4m3" if grad else "e4m3"
            rows.append(["gemm", f"{shape}.{role}", f"{m}x{n}x{k}", prec, f"{med * 1e3:.4f}", f"{lo * 1e3:.4f}",
                         f"{hi * 1e3:.4f}", f"{flop / med * 1e-12:.1f}", "", "", "",
                         f"torch._scaled_mm, {'split' if grad else 'fast'} accumulation, {out}"])
        except (RuntimeError, TypeError) as exc:
            rows.append(["gemm", f"{shape}.{role}", f"{m}x{n}x{k}", "fp8", "", "", "", "", "", "", "",
                         f"_scaled_mm refused: {exc}".replace("\n", " ")[:200]])
        del a8, b8
    del a, b


def copy_bandwidth(rows):
    n = 1 << 30  # 2 GiB of bf16
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    med, lo, hi = timed(lambda: dst.copy_(src))
    rows.append(["copy", "d2d", f"{2 * n} bytes", "bf16", f"{med * 1e3:.4f}", f"{lo * 1e3:.4f}", f"{hi * 1e3:.4f}",
                 "", f"{4 * n / med * 1e-9:.1f}", "", "", "read + write bytes"])
    print(f"  torch d2d copy: {4 * n / med * 1e-9:.0f} GB/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--skip-stack", action="store_true")
    args = ap.parse_args()
    if args.tokens % 2048 or args.tokens <= 0:
        print("torch_baseline: --tokens must be a positive multiple of 2048", file=sys.stderr)
        return 64
    if load_torch() is None:
        return 69
    if not torch.cuda.is_available():
        print("torch_baseline: torch sees no GPU", file=sys.stderr)
        return 69
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    try:
        nccl = torch.cuda.nccl.version()
        nccl = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    except Exception:  # noqa: BLE001 - only informative
        nccl = "unknown"
    print(f"torch_baseline: torch {torch.__version__}, {props.name}, {props.multi_processor_count} SMs, NCCL {nccl}")
    t0 = time.time()
    rows = Rows(args.out)
    ok = run_part(rows, "copy", lambda: copy_bandwidth(rows))
    ok &= run_part(rows, "gemm", lambda: gemm_sweep(rows, args.tokens))
    if not args.skip_stack:
        ok &= run_part(rows, "stack", lambda: layer_stack(rows, args.layers, args.tokens, args.steps))
    rows.close()
    print(f"torch_baseline: {rows.n} rows in {time.time() - t0:.0f} s -> {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
