"""Count ATen op dispatches of one Megatron-Core (local, non-TE spec) transformer layer
per micro-batch, forward and backward, on CPU, as a function of local experts E.

Usage: venv/bin/python count_ops.py [--dispatcher alltoall|allgather] [--experts 1,2,4,...]
                                    [--time] [--json out.json]
"""
import argparse
import collections
import contextlib
import json
import os
import socket
import sys
import time
import warnings

warnings.filterwarnings("ignore")
import torch
import torch.utils.cpp_extension as _cppext
from torch.utils._python_dispatch import TorchDispatchMode

# --- CPU work-arounds (applied before importing megatron) ---------------------------------
# megatron.core.inference.unified_memory JIT-compiles a CUDA allocator on import; make it fail
# cleanly (it catches RuntimeError) instead of crashing with no CUDA arch list.
def _no_jit(*a, **k):
    raise RuntimeError("no CUDA on this host")
_cppext.load_inline = _no_jit


class _DummyEvent:
    def synchronize(self):
        pass


class _DummyStream:
    def wait_stream(self, other):
        pass

    def record_event(self, *a):
        return _DummyEvent()


_STREAM = _DummyStream()
torch.cuda.current_device = lambda: "cpu"
torch.cuda.Stream = lambda *a, **k: _DummyStream()
torch.cuda.current_stream = lambda *a, **k: _STREAM
torch.cuda.stream = lambda s: contextlib.nullcontext()

from megatron.core import parallel_state  # noqa: E402
from megatron.core import tensor_parallel  # noqa: E402
from megatron.core.tensor_parallel import random as mrandom  # noqa: E402
from megatron.core.transformer import utils as tutils  # noqa: E402
from megatron.core.fusions import fused_softmax  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec  # noqa: E402
from megatron.core.transformer.spec_utils import build_module  # noqa: E402
from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding  # noqa
import megatron.core  # noqa: E402
from megatron.core.transformer.moe import moe_utils as _moe_utils  # noqa: E402

# mcore 0.15.3 without Transformer Engine leaves te_general_gemm undefined (NameError in
# RouterGatingLinearFunction); define it as None so the torch.mm fallback is taken.
if not hasattr(_moe_utils, "te_general_gemm"):
    _moe_utils.te_general_gemm = None

# causal mask helper hard-codes device="cuda": CPU copy (same lru-cached semantics).
import functools


@functools.lru_cache(maxsize=None)
def _cpu_causal_mask(sq):
    return torch.triu(torch.ones(sq, sq), diagonal=1).bool()


tutils.get_default_causal_mask = _cpu_causal_mask
fused_softmax.get_default_causal_mask = _cpu_causal_mask

# RNG tracker: keep Megatron's real CudaRNGStatesTracker.fork() (its CPU-side ops are part of
# the GPU path too), but back the "cuda" generator state by a private CPU torch.Generator.
_GEN = torch.Generator()
mrandom._get_cuda_rng_state = lambda *a, **k: _GEN.get_state()
mrandom._set_cuda_rng_state = lambda s, *a, **k: _GEN.set_state(s)


def setup_dist():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    os.environ["MASTER_PORT"] = str(port)
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    mrandom.initialize_rng_tracker()
    tr = mrandom.get_cuda_rng_tracker()
    for i, name in enumerate(["data-parallel-rng", mrandom._MODEL_PARALLEL_RNG_TRACKER_NAME,
                              mrandom._EXPERT_PARALLEL_RNG_TRACKER_NAME]):
        _GEN.manual_seed(1234 + i)
        tr.states_[name] = _GEN.get_state()
        tr.seeds_.add(1234 + i)
    torch.manual_seed(1234)


# --- op classification ----------------------------------------------------------------------
# Ops that never launch a device kernel: views / metadata / pure allocation.
NO_KERNEL = {
    "aten.view", "aten.t", "aten._unsafe_view", "aten.expand", "aten.as_strided", "aten.slice",
    "aten.select", "aten.detach", "aten.split", "aten.split_with_sizes", "aten.alias",
    "aten.permute", "aten.transpose", "aten.unsqueeze", "aten.squeeze", "aten.reshape",
    "aten.unbind", "aten.chunk", "aten.narrow", "aten.lift_fresh", "aten._reshape_alias",
    "aten.empty", "aten.empty_like", "aten.empty_strided", "aten.new_empty",
    "aten.new_empty_strided", "aten.view_as", "aten.expand_as", "aten.unfold",
    "aten.diagonal", "aten.movedim", "aten.sym_size", "aten.sym_stride", "aten.sym_numel",
    "aten.is_same_size", "aten.set_", "aten.resize_", "aten.record_stream",
}
# Ops that force a device->host sync on CUDA (data-dependent output shape or scalar read).
SYNC_OPS = {"aten._local_scalar_dense", "aten.nonzero", "aten.masked_select",
            "aten.unique", "aten._unique2", "aten.item"}


def packet_name(func):
    return f"{func.namespace}.{func._schema.name.split('::')[-1]}"


def launches_kernel(func):
    name = packet_name(func)
    if name in NO_KERNEL:
        return False
    if getattr(func, "is_view", False):
        return False
    return True


class Counter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.phase = "other"
        self.ops = collections.Counter()          # (phase, name) -> n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[(self.phase, packet_name(func))] += 1
        return func(*args, **(kwargs or {}))


def summarize(ops, phase=None):
    allc = kern = sync = 0
    for (ph, name), n in ops.items():
        if phase is not None and not ph.startswith(phase):
            continue
        allc += n
        if name in SYNC_OPS:
            sync += n
        if name not in NO_KERNEL and not _IS_VIEW.get(name, False):
            kern += n
    return allc, kern, sync


_IS_VIEW = {}   # name -> is_view, filled while counting


class Counter2(Counter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = packet_name(func)
        if name not in _IS_VIEW:
            _IS_VIEW[name] = bool(getattr(func, "is_view", False))
        self.ops[(self.phase, name)] += 1
        return func(*args, **(kwargs or {}))


# --- model ------------------------------------------------------------------------------
def make_config(E, dispatcher, hidden=256, heads=8, groups=4, moe_ffn=64, ffn=512):
    kw = dict(
        num_layers=1, hidden_size=hidden, num_attention_heads=heads, num_query_groups=groups,
        ffn_hidden_size=ffn, qk_layernorm=True, normalization="RMSNorm",
        gated_linear_unit=True, activation_func=torch.nn.functional.silu,
        add_bias_linear=False, add_qkv_bias=False, bias_activation_fusion=False,
        masked_softmax_fusion=False, persist_layer_norm=False, bias_dropout_fusion=False,
        apply_rope_fusion=False, gradient_accumulation_fusion=False,
        hidden_dropout=0.0, attention_dropout=0.0, layernorm_epsilon=1e-6,
        use_cpu_initialization=True, perform_initialization=True,
        bf16=False, params_dtype=torch.float32, pipeline_dtype=torch.float32,
    )
    if E:
        kw.update(num_moe_experts=E, moe_router_topk=min(8, E), moe_ffn_hidden_size=moe_ffn,
                  moe_token_dispatcher_type=dispatcher, moe_router_load_balancing_type="aux_loss",
                  moe_aux_loss_coeff=1e-3, moe_grouped_gemm=False, moe_permute_fusion=False,
                  moe_router_dtype=None,
                  # mcore requires pre-softmax routing when topk == 1 (only E=1 here)
                  moe_router_pre_softmax=(min(8, E) == 1))
    return TransformerConfig(**kw)


def build(E, dispatcher, **sz):
    cfg = make_config(E, dispatcher, **sz)
    spec = get_gpt_layer_local_spec(num_experts=E or None, moe_grouped_gemm=False,
                                    qk_layernorm=True, normalization="RMSNorm")
    layer = build_module(spec, config=cfg, layer_number=1)
    rope = RotaryEmbedding(kv_channels=cfg.kv_channels, rotary_percent=1.0,
                           use_cpu_initialization=True)
    return cfg, layer, rope


def step(layer, x, rpe, counter=None):
    """One micro-batch: forward, scalar loss, backward. Returns nothing."""
    for p in layer.parameters():
        p.grad = None
    ctx = counter if counter is not None else contextlib.nullcontext()
    with ctx:
        if counter is not None:
            counter.phase = "fwd"
        out, _ = layer(x, attention_mask=None, rotary_pos_emb=rpe)
        if counter is not None:
            counter.phase = "loss"
        loss = out.sum()
        if counter is not None:
            counter.phase = "bwd"
        loss.backward()


def instrument(layer, counter, moe):
    """Attribute ops to attn / moe sub-phases (fwd: method wrappers; bwd: grad hooks on the
    phase-boundary tensors, which fire when that tensor's gradient is complete)."""
    def bwd_mark(t, label):
        if torch.is_tensor(t) and t.requires_grad:
            def h(g):
                counter.phase = "bwd:" + label
            t.register_hook(h)

    orig_mlp = layer._forward_mlp

    def fwd_mlp(hidden_states, *a, **k):
        counter.phase = "fwd:moe_router" if moe else "fwd:mlp"
        bwd_mark(hidden_states, "attn")
        out = orig_mlp(hidden_states, *a, **k)
        bwd_mark(out if torch.is_tensor(out) else out[0], "moe_combine" if moe else "mlp")
        return out
    layer._forward_mlp = fwd_mlp
    if not moe:
        return
    m = layer.mlp

    def wrap(name, label, mark_in):
        orig = getattr(m, name)

        def f(*a, **k):
            counter.phase = "fwd:" + label
            out = orig(*a, **k)
            first = out[0] if isinstance(out, tuple) else out
            # grad of this method's output being complete = start of the *next* phase's bwd
            # is handled by marking the output with the label of this phase
            bwd_mark(first, label)
            return out
        setattr(m, name, f)
    wrap("dispatch", "moe_dispatch", None)
    wrap("routed_experts_compute", "moe_experts", None)
    wrap("combine", "moe_combine", None)
    # router_and_preprocess: forward label set in fwd_mlp (pre-mlp norm + router + preprocess)
    orig_rp = m.router_and_preprocess

    def rp(*a, **k):
        out = orig_rp(*a, **k)
        bwd_mark(out[0], "moe_router")
        bwd_mark(out[1], "moe_router")
        return out
    m.router_and_preprocess = rp


def count_case(E, dispatcher, breakdown=True, **sz):
    torch.manual_seed(0)
    cfg, layer, rope = build(E, dispatcher, **sz)
    s, b = 128 if "seq" not in sz else sz["seq"], 1
    x = torch.randn(s, b, cfg.hidden_size, requires_grad=True)
    rpe = rope(s)
    for _ in range(2):  # warm-up (lru caches, lazy init)
        step(layer, x, rpe)
    c = Counter2()
    step(layer, x, rpe, c)
    res = {"E": E, "n_param_tensors": sum(1 for _ in layer.parameters()),
           "fwd": summarize(c.ops, "fwd"), "loss": summarize(c.ops, "loss"),
           "bwd": summarize(c.ops, "bwd"),
           "ops_fwd": sorted(((n, k[1]) for k, n in c.ops.items() if k[0] == "fwd"),
                             reverse=True),
           "ops_bwd": sorted(((n, k[1]) for k, n in c.ops.items() if k[0] == "bwd"),
                             reverse=True)}
    if breakdown:
        c2 = Counter2()
        instrument(layer, c2, moe=bool(E))
        step(layer, x, rpe, c2)
        phases = sorted({k[0] for k in c2.ops})
        res["phases"] = {ph: summarize({k: v for k, v in c2.ops.items() if k[0] == ph})
                         for ph in phases}
        res["phase_ops"] = {ph: sorted(((n, k[1]) for k, n in c2.ops.items() if k[0] == ph),
                                       reverse=True) for ph in phases}
        # sanity: instrumented totals must equal clean totals
        res["instr_total_ok"] = (summarize(c2.ops)[0] == summarize(c.ops)[0])
    return res


def time_case(E, dispatcher, iters=30, **sz):
    torch.manual_seed(0)
    cfg, layer, rope = build(E, dispatcher, **sz)
    s = sz.get("seq", 128)
    x = torch.randn(s, 1, cfg.hidden_size, requires_grad=True)
    rpe = rope(s)
    for _ in range(3):
        step(layer, x, rpe)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step(layer, x, rpe)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], sum(ts) / len(ts)


def fit(xs, ys):
    n = len(xs)
    if n < 2:
        return float(ys[0]), 0.0, 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    resid = max(abs(y - (a + b * x)) for x, y in zip(xs, ys))
    return a, b, resid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dispatcher", default="alltoall")
    ap.add_argument("--experts", default="1,2,4,8,16,32")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    setup_dist()
    print(f"torch {torch.__version__}  megatron-core {megatron.core.__version__}  "
          f"dispatcher {a.dispatcher}", flush=True)
    out = {"torch": torch.__version__, "mcore": megatron.core.__version__,
           "dispatcher": a.dispatcher, "cases": []}
    Es = [int(e) for e in a.experts.split(",")]
    for E in [0] + Es:
        r = count_case(E, a.dispatcher)
        out["cases"].append(r)
        f, l, bw = r["fwd"], r["loss"], r["bwd"]
        print(f"E={E:3d} params={r['n_param_tensors']:3d}  fwd all/kern/sync={f}  "
              f"loss={l}  bwd={bw}  instr_ok={r.get('instr_total_ok')}", flush=True)
        for ph, v in r.get("phases", {}).items():
            print(f"      {ph:18s} all={v[0]:5d} kern={v[1]:5d} sync={v[2]}")
    allmoe = [r for r in out["cases"] if r["E"]]
    for title, moe in [("all E", allmoe), ("E>=2 (top-k>=2)", [r for r in allmoe if r["E"] >= 2])]:
        print_fits(title, moe)
    _timing(a, out)


def print_fits(title, moe):
    xs = [r["E"] for r in moe]
    print(f"\nFits count = a + b*E over {title} (max |resid|):")
    for key, idx, lab in [("fwd", 0, "fwd all"), ("fwd", 1, "fwd kern"),
                          ("bwd", 0, "bwd all"), ("bwd", 1, "bwd kern")]:
        a_, b_, rr = fit(xs, [r[key][idx] for r in moe])
        print(f"  {lab:9s}: a={a_:8.1f} b={b_:7.2f} resid={rr:.1f}")
    for idx, lab in [(0, "tot all"), (1, "tot kern")]:
        ys = [r["fwd"][idx] + r["loss"][idx] + r["bwd"][idx] for r in moe]
        a_, b_, rr = fit(xs, ys)
        print(f"  {lab:9s}: a={a_:8.1f} b={b_:7.2f} resid={rr:.1f}")


def _timing(a, out):
    if a.time:
        print("\nHost time per op (CPU tensors, 1 thread, tiny sizes: hidden 32, seq 8):")
        tiny = dict(hidden=32, heads=8, groups=4, moe_ffn=8, ffn=64)
        for E in [0, 1, 8, 32]:
            rc = _count_sz(E, a.dispatcher, tiny, seq=8)
            med, mean = time_case_tiny(E, a.dispatcher, tiny)
            n_all = rc["fwd"][0] + rc["loss"][0] + rc["bwd"][0]
            n_k = rc["fwd"][1] + rc["loss"][1] + rc["bwd"][1]
            print(f"  E={E:2d}: fwd+bwd median {med*1e3:.2f} ms mean {mean*1e3:.2f} ms, "
                  f"ops all={n_all} kern={n_k} -> {med/n_all*1e6:.1f} us/op(all), "
                  f"{med/n_k*1e6:.1f} us/kern-op", flush=True)
            out.setdefault("timing", []).append(dict(E=E, median_s=med, mean_s=mean,
                                                     ops_all=n_all, ops_kern=n_k))
        print("Full-size reference (hidden 256, seq 128, 1 thread):")
        for E in [0, 8, 32]:
            med, mean = time_case(E, a.dispatcher)
            print(f"  E={E:2d}: fwd+bwd median {med*1e3:.2f} ms mean {mean*1e3:.2f} ms", flush=True)
        t = torch.ones(8)
        for _ in range(1000):
            torch.add(t, t)
        t0 = time.perf_counter()
        for _ in range(20000):
            torch.add(t, t)
        us = (time.perf_counter() - t0) / 20000 * 1e6
        print(f"Micro: torch.add on an 8-element CPU tensor, no autograd: {us:.2f} us/op")
        out["micro_add_us"] = us
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


def _count_sz(E, dispatcher, tiny, seq):
    torch.manual_seed(0)
    cfg, layer, rope = build(E, dispatcher, **tiny)
    x = torch.randn(seq, 1, cfg.hidden_size, requires_grad=True)
    rpe = rope(seq)
    for _ in range(2):
        step(layer, x, rpe)
    c = Counter2()
    step(layer, x, rpe, c)
    return {"fwd": summarize(c.ops, "fwd"), "loss": summarize(c.ops, "loss"),
            "bwd": summarize(c.ops, "bwd")}


def time_case_tiny(E, dispatcher, tiny, iters=40):
    torch.manual_seed(0)
    cfg, layer, rope = build(E, dispatcher, **tiny)
    x = torch.randn(8, 1, cfg.hidden_size, requires_grad=True)
    rpe = rope(8)
    for _ in range(5):
        step(layer, x, rpe)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step(layer, x, rpe)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], sum(ts) / len(ts)


if __name__ == "__main__":
    main()
