/* planner/plan_kernels.c — the memory-bound kernels one layer launches.
 *
 * Each op of a layer moves bytes through HBM and launches some kernels; it takes
 * max(bytes / (HBM x eff_hbm), kernels x launch floor): a kernel that moves
 * little still pays its launch (the stack's launch_us), which is what makes
 * small models slower than their FLOPs. Per token of one micro-batch, with
 * H = hidden elements on this rank (split by SP), Hf = hidden elements of the
 * whole sequence chunk (after an SP all-gather), Q, K = query and key elements
 * per TP rank, F = FFN elements per TP rank, kF = FC1 outputs (2F for SwiGLU):
 *
 * te (Megatron-Core + Transformer Engine; megatron/core/models/gpt
 *     gpt_layer_specs with TE modules, fused bias-dropout-add, fused SwiGLU, fused
 *     RoPE; TE casts to FP8 inside its norm+linear kernels and writes the row-wise
 *     and the transposed copy in one pass, cast_transpose):
 *   forward  norm1(+cast) 4H, RoPE 4(Q+K) in 2 kernels, proj-input cast 4Q,
 *            bias-dropout-add 6H, norm2(+cast) 4H, activation 6F (GeLU 4F),
 *            FC2-input cast 4F, bias-dropout-add 6H
 *   backward FC2 dY cast 4Hf, activation backward 10F (GeLU 6F), FC1 dY cast 4kF,
 *            norm2 backward 6H in 2 kernels (dx, dgamma), residual 6H, proj dY cast
 *            4Hf, RoPE 4(Q+K) in 2, QKV dY cast 4(Q+2K), norm1 backward 6H in 2,
 *            residual 6H; weight gradients accumulate in the GEMM epilogue.
 *   Query/key norms (models.csv qk_norm: Qwen3, Llama 4): Megatron-Core normalizes each query and key head
 *   with a norm of its own beside RoPE (Qwen3's q_layernorm, k_layernorm before it: TENorm; Llama 4's L2Norm
 *   under jit_fuser), one kernel each way per tensor: forward 4(Q+K) in 2 (read 2 B, write 2 B), backward
 *   6(Q+K) in 4 (read x and dY, write dx; the weight gradient's partial sums and their reduction).
 *   With sequence parallelism on a TN-only GPU (per-tensor scales, FP8 gather: te_sp_transpose) the norms
 *   write the row-wise FP8 copy only, 3H each, and the backward transposes FC1's and QKV's re-gathered
 *   FP8 input, 2Hf in 1 kernel each.
 * compile (torch.compile / inductor, torchao float8: the amax is fused into the
 *     producer, casts write the row-wise copy only, the high-precision input is
 *     saved and recast for the weight gradient):
 *   forward  norm1 4H, x cast 3H, RoPE 4(Q+K), proj cast 3Q, residual+norm2 8H,
 *            x cast 3H, activation 6F, FC2 cast 3F, residual 6H (one kernel each);
 *            q/k norms not apart: a head's norm is a reduction over the head_dim
 *            values the RoPE kernel reads and writes anyway, which inductor fuses
 *            into it (an assumption: no trace of these runs' kernels was read)
 *   backward dY casts 4Hf, 4kF, 4Hf, 4(Q+2K) (row-wise + transposed), activation
 *            backward 10F, norm+residual backward 10H in 2 kernels (twice), RoPE
 *            4(Q+K), input recasts for wgrad 3(2Hf + Q + F) in 4 kernels, and the
 *            weight-gradient accumulation when micro-batches accumulate.
 * eager (one kernel per PyTorch op: an RMSNorm is 6 kernels moving 36 bytes per
 *     element in fp32 — to(float32), pow, mean, rsqrt, mul, to(bf16), mul(weight) —
 *     a LayerNorm 1 kernel of 4; HF-style RoPE 5 kernels, 20 bytes per element,
 *     for q and for k (q/k norms: an RMSNorm each, 36(Q+K) in 12 kernels, beside it);
 *     SwiGLU silu + mul 2 kernels, 10F; casts as TE's separate
 *     ones): backward launches twice the forward's kernels and moves twice its
 *     bytes, but for the input casts (a cast has no backward kernel: Transformer
 *     Engine's linear casts dY instead), plus the dY casts and the accumulation.
 * fp8plan (this project's executor, exec/model/model_pass.c block_fwd/block_bwd: one fused
 *     backend kernel per step, BF16 in and out, FP32 inside, no dropout):
 *   forward  norm1 4H (norm_fwd: read x, write y), x cast, RoPE in place 4(Q+K) in 1 (rope), proj cast,
 *            residual add 6H (add), norm2 4H, x cast, activation 6F (SwiGLU: read 2F, write F; GeLU 4F)
 *            (act_fwd), FC2 cast, residual add 6H: one kernel each;
 *   backward FC2 dY cast 4Hf, activation backward 10F (GeLU 6F) (act_bwd), FC1 dY cast 4kF, norm2 backward
 *            12H (norm_bwd: read x, dy and the residual's gradient, write it back added, 8H; the weight's
 *            column sums read x, dy again, 4H) in 3 kernels on a GPU (dx, column partials, final sum) or 2 on a
 *            host (row and column passes), proj dY cast 4Hf, RoPE inverse 4(Q+K) in 1, QKV dY cast 4(Q+2K),
 *            norm1 backward 12H in 3 (2); the residual adds are the norms' `din +=`; inputs saved in BF16
 *            recast transposed for wgrad 3(2Hf+Q+F) in 4 (model_linear.c model_linear_bwd); FP32 main
 *            gradients accumulate in the wgrad GEMM (beta 1: model_grad.c), nothing apart; with linear
 *            biases each linear's bias gradient reads its dY, 2(Q+2K+2Hf+kF), in 4 kernels (8 on a GPU).
 *   Its casts (model_linear.c cast): one cast_transpose writing the row-wise copy and, saved in FP8, the
 *   transposed one; current scaling memset0 + amax + scaling_from_amax before it: 4 kernels, 2 B more.
 * Current scaling reads each cast's input once more for its amax (one more
 * kernel); dropout adds its masks. Bytes: BF16 activations 2 B, FP8 1 B.
 * The attention part (fwd_attn, bwd_attn: norm1 to the attention's residual, and
 * their backward) is what MoE layers keep; the gradient accumulation (acc_b) and
 * the recipe's FP8 linear extras (lin_f, lin_b) are apart; the rest is the FFN's
 * (a fused residual + norm2 counts to the FFN; compile's recasts to the
 * attention). */
#include "planner/plan_internal.h"

typedef struct {
    double t; /* accumulated seconds */
    double inv_bw, launch;
    double kinv[ELEM_KINDS]; /* s per byte of each kind of kernel (gpu_kind_bw) */
    int amax_apart;          /* the profile rates current scaling's amax read apart (ELEM_AMAX measured) */
    int mx;                  /* casts are MXFP8 quantizes (mx_cast): 0 none, 1 both layouts in one pass, 2 one each */
} Acc;

static void op(Acc *a, double bytes, double kernels)
{
    double tb = bytes * a->inv_bw, tl = kernels * a->launch;
    a->t += tb > tl ? tb : tl;
}

/* op for a kernel of kind k, at the kind's rate where the profile measured it apart. */
static void opk(Acc *a, ElemKind k, double bytes, double kernels)
{
    double tb = bytes * a->kinv[k], tl = kernels * a->launch;
    a->t += tb > tl ? tb : tl;
}

/* One E8M0 scale byte per 32 elements of each MXFP8 layout (OCP MX v1.0 block size 32). */
static const double MX_SCALE_B = 1.0 / 32.0;

/* An MXFP8 quantize of x elements into w layouts (2: row-wise and column-wise, 1: row-wise): each layout 1 B an
 * element and one E8M0 scale per 32 (MX_SCALE_B); the block amax is taken in registers, so no amax pass. Transformer
 * Engine (a->mx 1) writes both layouts from one read of the BF16 input (cast_mxfp8_2D_kernel with ROWWISE_SCALING and
 * COLWISE_SCALING: transformer_engine/common/util/cast_kernels.cuh, v2.7-v2.12); torchao (a->mx 2) casts along dim 0
 * in the compiled graph and along dim 1 in a kernel of its own (torchao/prototype/mx_formats mx_linear.py,
 * MXFP8Dim1CastKernelChoice), each reading the input. */
static void mx_cast(Acc *a, double x, double w)
{
    double out = w * (1.0 + MX_SCALE_B);
    if (a->mx == 1)
        op(a, (2.0 + out) * x, 1.0);
    else
        op(a, (2.0 * w + out) * x, w);
}

/* An FP8 cast of x elements when `on`: read 2 B, write the copies (w = 2: row-wise + transposed; 1: row-wise);
 * current scaling reads the input once more for its amax, in one more kernel. MXFP8: mx_cast. */
static void cast(Acc *a, double x, double w, int on, int cur)
{
    if (on && a->mx)
        mx_cast(a, x, w);
    else if (on)
        op(a, (2.0 + w + 2.0 * cur) * x, 1.0 + cur);
}

/* A Transformer Engine norm over x elements that feeds an FP8 GEMM when `on`: per-tensor scaling writes the FP8
 * copies in place of the BF16 output (current scaling one kernel more); MXFP8 is not fused into TE's norm kernels
 * unless NVTE_NORM_FWD_USE_CUDNN is set (transformer_engine/pytorch/csrc/extensions/normalization.cpp, rmsnorm_fwd and
 * layernorm_fwd: force_unfused_kernel for MXFP8 quantizers, v2.7-v2.12), so the norm writes BF16 and the quantize
 * reads it again (mx_cast). w: the bytes a per-tensor-scaled norm moves per element (4: read 2 B, write the
 * row-wise and transposed FP8 copies; 3 when only the row-wise copy is gathered, te_sp_transpose). */
static void te_norm(Acc *a, double x, int on, int cur, double w)
{
    if (on && a->mx) {
        op(a, 4 * x, 1);
        mx_cast(a, x, 2);
    } else {
        op(a, w * x, 1 + (on && cur));
    }
}

/* An FP8 cast by the executor (exec/model/model_linear.c cast): delayed scaling one cast_transpose (read 2 B,
 * write w copies of 1 B); current scaling first memset0, amax (read 2 B), scaling_from_amax: 3 kernels more. At the
 * cast's rate (ElemKind); where the profile rates the amax apart (ELEM_AMAX: a host's amax is a streaming max, its
 * cast bound by the rounding of every element) the amax read at its own rate, memset0 and scaling_from_amax a
 * launch each. */
static void xcast(Acc *a, double x, double w, int on, int cur)
{
    if (!on) return;
    if (!cur || !a->amax_apart) {
        opk(a, ELEM_CAST, (2.0 + w + 2.0 * cur) * x, 1.0 + 3.0 * cur);
        return;
    }
    opk(a, ELEM_CAST, (2.0 + w) * x, 1.0);
    opk(a, ELEM_AMAX, 2.0 * x, 1.0);
    op(a, 0.0, 2.0);
}

/* What a recipe's FP8 linear code moves beyond the stack's kernel list, per layer and micro-batch (recipe.h):
 * torchao-rowwise: every backward GEMM's output rescaled by its own kernel (read + write BF16: 4 B per element of
 *   the four dgrad outputs Hf + Q + Hf + F and the layer's weight gradients), and each output gradient read once
 *   more to quantize it along its other axis (2 B per element of Q + 2K, Hf, kF, Hf);
 * msamp: each linear input read once more for its amax before the cast (2 B per element of H, Q, H, F); in the
 *   backward the FP8 weight and the gathered FP8 input transposed (read + write 1 B each: 2 B per weight element,
 *   2 B per element of Hf, Q, Hf, F), and the FP8 gradient updated per weight element as
 *   (main_grad.to(bf16) + grad).cast(e4m3) then copied: read 1 + write 2, read 2 + 2 + write 2, amax read 2,
 *   cast read 2 + write 1, copy read 1 + write 1 = 16 B in 5 kernels. */
static void fp8_linear_extra(const Recipe *rc, const Geo *g, double Hf, double H, double Q, double K, double F,
                             double kF, Acc *f, Acc *b)
{
    double w = (double)g->gemm_layer;
    switch (rc->linear) {
    case LIN_TORCHAO_ROWWISE:
        op(b, 4.0 * (2 * Hf + Q + F + w), 8);
        op(b, 2.0 * (Q + 2 * K + 2 * Hf + kF), 4);
        break;
    case LIN_MSAMP:
        op(f, 2.0 * (2 * H + Q + F), 4);
        op(b, 2.0 * w, 4);
        op(b, 2.0 * (2 * Hf + Q + F), 4);
        op(b, 16.0 * w, 20);
        break;
    default: break;
    }
}

/* Transformer Engine's column-parallel norm + linear (LayerNormLinear for QKV, LayerNormMLP for FC1) under sequence
 * parallelism, per-tensor FP8 scales, gathered in FP8, on a TN-only GPU: the all-gather carries the row-wise FP8 copy
 * only, so the norm writes that one (1 B per element, not the row-wise and transposed 2 B), and the backward transposes
 * the re-gathered input for the wgrad GEMM, 2 B per gathered element in one kernel. TE 2.x: Float8Quantizer and
 * Float8CurrentScalingQuantizer supports_only_rowwise_all_gather() is True, so layernorm_linear.py / layernorm_mlp.py
 * set the norm output's columnwise usage off "with_input_all_gather" / under sequence_parallel, and the backward's
 * update_usage(columnwise_usage=True) makes the transpose; TE 1.x (2023): ln_out_total_t =
 * tex.fp8_transpose(ln_out_total) before the wgrad fp8_gemm. MS-AMP's linear counts its own (fp8_linear_extra). */
static int te_sp_transpose(const PlanInput *in, int f8)
{
    const Recipe *rc = in->recipe;
    return f8 && rc->linear == LIN_TE && in->sp && in->tp > 1 && rc->act_gran == GRAN_TENSOR &&
           dt_fp8(rc->comm_tp_ag) && plan_fp8_tn_only(in);
}

/* Transformer Engine's scale swizzles for MXFP8 GEMMs, per layer and micro-batch: before every cuBLAS GEMM it
 * rewrites both operands' E8M0 scales into the 128x4 tiled layout the block-scaled tensor cores read, one kernel per
 * operand (transformer_engine/pytorch/csrc/extensions/gemm.cpp generic_gemm: swizzle_scaling_factors(A) and (B) ->
 * nvte_swizzle_scaling_factors, v2.7-v2.12), reading and writing each scale byte. Linear i with T tokens, N = rows,
 * K = cols: fprop swizzles x's and w's row-wise scales (T K + N K) / 32; dgrad dY's row-wise and w's column-wise
 * (T N + N K) / 32; wgrad x's and dY's column-wise (K T + N T) / 32. Forward 2 kernels a linear, backward 4. The
 * attention's linears (QKV, proj) into *fa, *ba as well. */
static void mx_swizzle(const Geo *g, Acc *f, Acc *b, double *fa, double *ba)
{
    double T = (double)g->tok;
    for (int i = 0; i < LIN_COUNT; i++) {
        double N = (double)g->lin_rows[i], K = (double)g->lin_cols[i], f0 = f->t, b0 = b->t;
        op(f, 2.0 * MX_SCALE_B * (T * K + N * K), 2);
        op(b, 2.0 * MX_SCALE_B * (2.0 * T * N + N * K + K * T), 4);
        if (i == LIN_QKV || i == LIN_PROJ) *fa += f->t - f0, *ba += b->t - b0;
    }
}

void plan_layer_elem(const PlanInput *in, const Geo *g, LayerElem *out)
{
    const Recipe *rc = in->recipe;
    double tok = (double)g->tok, H = (double)g->tok_r * (double)g->h, Hf = tok * (double)g->h;
    double Q = tok * (double)g->q_t, K = tok * (double)g->kv_t, F = tok * (double)g->F_t, kF = (double)g->k * F;
    int f8 = dt_fp8(rc->gemm_fwd), b8 = dt_fp8(rc->gemm_bwd), cur = rc->scaling == SCALING_CURRENT;
    int rope = in->model->pos == POS_ROPE, swiglu = g->k == 2, rms = in->model->norm == NORM_RMSNORM;
    int qkn = in->model->qk_norm; /* query/key norms beside RoPE (header: te, eager) */
    int saved8 = dt_fp8(rc->saved_input);
    double drop = in->dropout ? 1.0 : 0.0;
    double act_f = swiglu ? 6 * F : 4 * F, act_b = swiglu ? 10 * F : 6 * F;
    double acc_k = g->m > 1 ? 4.0 : 0.0; /* separate gradient accumulation: one kernel per linear weight */
    double acc_b =
        g->m > 1 ? (double)g->gemm_layer * (2.0 + 2.0 * dt_bytes(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]))) : 0.0;
    Acc f = {0, 1.0 / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s, {0}, in->gpu->elem_kind_bw[ELEM_AMAX] > 0, 0};
    for (int k = 0; k < ELEM_KINDS; k++) f.kinv[k] = kind_inv(in->gpu, (ElemKind)k, f.inv_bw);
    /* MXFP8 (1x32 E8M0 scales): TE quantizes both layouts in one pass, other stacks one layout a kernel */
    f.mx = rc->act_gran == GRAN_1X32 && (f8 || b8) ? (in->fusion == FUSE_TE ? 1 : 2) : 0;
    Acc b = f;
    double fa = 0, bm = 0; /* the forward's attention part, the backward's FFN part */
    switch (in->fusion) {
    case FUSE_TE: {
        /* the norm writes the FP8 copies (2 B) in place of BF16 (2 B); gathered for sequence parallelism, the
         * row-wise copy only (1 B), and QKV's and FC1's backward transposes the re-gathered input (sp_t) */
        int sp_t = te_sp_transpose(in, f8);
        double nw = sp_t ? 3.0 : 4.0;
        te_norm(&f, H, f8, cur, nw);
        if (qkn) op(&f, 4 * (Q + K), 2);
        if (rope) op(&f, 4 * (Q + K), 2);
        cast(&f, Q, 2, f8, cur);
        op(&f, (6 + drop) * H, 1);
        fa = f.t;
        te_norm(&f, H, f8, cur, nw);
        op(&f, act_f, 1);
        cast(&f, F, 2, f8, cur);
        op(&f, (6 + drop) * H, 1);
        cast(&b, Hf, 2, b8, cur);
        op(&b, act_b, 1);
        cast(&b, kF, 2, b8, cur);
        if (sp_t) op(&b, 2 * Hf, 1); /* FC1's gathered FP8 input transposed for its wgrad (read 1 B, write 1 B) */
        op(&b, 6 * H, 2), op(&b, 6 * H, 1);
        bm = b.t;
        cast(&b, Hf, 2, b8, cur);
        if (rope) op(&b, 4 * (Q + K), 2);
        if (qkn) op(&b, 6 * (Q + K), 4);
        cast(&b, Q + 2 * K, 2, b8, cur);
        if (sp_t) op(&b, 2 * Hf, 1); /* QKV's */
        op(&b, 6 * H, 2), op(&b, 6 * H, 1);
        break;
    }
    case FUSE_COMPILE:
        op(&f, 4 * H, 1), cast(&f, H, saved8 ? 2 : 1, f8, cur);
        if (rope) op(&f, 4 * (Q + K), 1);
        cast(&f, Q, saved8 ? 2 : 1, f8, cur);
        fa = f.t;
        op(&f, (8 + drop) * H, 1), cast(&f, H, saved8 ? 2 : 1, f8, cur);
        op(&f, act_f, 1), cast(&f, F, saved8 ? 2 : 1, f8, cur);
        op(&f, (6 + drop) * H, 1);
        cast(&b, Hf, 2, b8, cur), op(&b, act_b, 1), cast(&b, kF, 2, b8, cur);
        op(&b, 10 * H, 2);
        bm = b.t;
        cast(&b, Hf, 2, b8, cur);
        if (rope) op(&b, 4 * (Q + K), 1);
        cast(&b, Q + 2 * K, 2, b8, cur), op(&b, 10 * H, 2);
        if (f8 && !saved8) op(&b, 3 * (2 * Hf + Q + F), 4);
        break;
    case FUSE_FP8PLAN: { /* exec/model/model_pass.c block_fwd, block_bwd; the kernels named in the header */
        double w1 = saved8 ? 2 : 1, nk = in->gpu->host ? 2 : 3; /* norm_bwd: cpu_nn.c 2 passes, k_norm.cu 3 */
        /* the kinds calibrate rates apart (ElemKind): norm_fwd, act_fwd, add, the casts; the rest at elem_bw */
        opk(&f, ELEM_NORM, 4 * H, 1), xcast(&f, H, w1, f8, cur); /* norm_fwd; QKV input cast */
        if (rope) op(&f, 4 * (Q + K), 1);                        /* rope (k_rope.cu / cpu_attn.c), in place */
        xcast(&f, Q, w1, f8, cur), opk(&f, ELEM_ADD, 6 * H, 1);  /* proj input cast; add (cpu_nn.c cpu_add) */
        fa = f.t;
        opk(&f, ELEM_NORM, 4 * H, 1), xcast(&f, H, w1, f8, cur); /* norm_fwd; FC1 input cast */
        opk(&f, ELEM_ACT, act_f, 1), xcast(&f, F, w1, f8, cur);  /* act_fwd (swiglu_fwd_rows / k_swiglu_fwd); FC2 */
        opk(&f, ELEM_ADD, 6 * H, 1);                             /* add */
        xcast(&b, Hf, 2, b8, cur), op(&b, act_b, 1);             /* FC2 dY cast; act_bwd */
        xcast(&b, kF, 2, b8, cur), op(&b, 12 * H, nk);           /* FC1 dY cast; norm_bwd (din += : the residual) */
        bm = b.t;
        xcast(&b, Hf, 2, b8, cur);                            /* proj dY cast */
        if (rope) op(&b, 4 * (Q + K), 1);                     /* rope inverse on d(q, k) */
        xcast(&b, Q + 2 * K, 2, b8, cur), op(&b, 12 * H, nk); /* QKV dY cast; norm_bwd */
        if (f8 && !saved8) op(&b, 3 * (2 * Hf + Q + F), 4);   /* model_linear_bwd's transposed recasts */
        if (in->model->linear_bias) /* bias_grad: column sums of each dY (read 2 B), cpu_nn.c one pass, k_norm.cu 2 */
            op(&b, 2 * (Q + 2 * K + 2 * Hf + kF), in->gpu->host ? 4 : 8);
        break;
    }
    default: { /* FUSE_EAGER */
        double nb = rms ? 36 : 4, nk = rms ? 6 : 1;
        /* the forward's input casts apart (c): they have no backward kernel of their own (a Transformer Engine
         * linear casts its input inside its autograd function, whose backward casts dY, below) */
        Acc c = f;
        op(&f, nb * H, nk), cast(&c, H, saved8 ? 2 : 1, f8, cur);
        if (qkn && rms) op(&f, nb * (Q + K), 2 * nk);
        if (rope) op(&f, 20 * (Q + K), 10);
        cast(&c, Q, saved8 ? 2 : 1, f8, cur);
        op(&f, (6 + 3 * drop) * H, 1 + drop);
        fa = f.t;
        double ca = c.t;
        op(&f, nb * H, nk), cast(&c, H, saved8 ? 2 : 1, f8, cur);
        op(&f, swiglu ? 10 * F : 4 * F, swiglu ? 2 : 1), cast(&c, F, saved8 ? 2 : 1, f8, cur);
        op(&f, (6 + 3 * drop) * H, 1 + drop);
        /* backward: twice the forward's pointwise work (not its casts), plus dY casts and the accumulation */
        double fw = f.t;
        b.t += 2 * fw;
        cast(&b, Hf, 2, b8, cur), cast(&b, kF, 2, b8, cur);
        bm = b.t - 2 * fa;
        cast(&b, Hf, 2, b8, cur), cast(&b, Q + 2 * K, 2, b8, cur);
        if (f8 && !saved8) op(&b, 3 * (2 * Hf + Q + F), 4);
        f.t += c.t, fa += ca;
        break;
    }
    }
    double fx = f.t, bx = b.t;
    /* fp8plan: an FP32 main gradient is the wgrad GEMM's own output (beta 1); one kept in BF16/FP8 is staged and
     * stored back per micro-batch (model_grad.c), counted here as the others' separate accumulation */
    int fused_acc = in->fusion == FUSE_FP8PLAN && plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]) == DT_FP32;
    if (in->fusion != FUSE_TE && !fused_acc) op(&b, acc_b, acc_k);
    /* Megatron without --gradient-accumulation-fusion: main_grad.add_(grad) after every micro-batch's wgrad */
    if (in->fusion == FUSE_TE && !in->grad_acc_fusion && rc->linear != LIN_MSAMP)
        op(&b, (double)g->gemm_layer * (2.0 + 2.0 * dt_bytes(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]))), 4);
    double ba = b.t;
    fp8_linear_extra(rc, g, Hf, H, Q, K, F, kF, &f, &b);
    double sa_f = 0, sa_b = 0; /* the attention linears' scale swizzles */
    if (f.mx && in->fusion == FUSE_TE) mx_swizzle(g, &f, &b, &sa_f, &sa_b);
    out->fwd = f.t;
    out->bwd = b.t;
    out->fwd_attn = fa + sa_f;
    out->bwd_attn = bx - bm + sa_b;
    out->acc_b = ba - bx;
    out->lin_f = f.t - fx, out->lin_b = b.t - ba;
}
