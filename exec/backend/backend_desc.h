/* exec/backend/backend_desc.h — what the backend operations take: the descriptors of
 * the GEMM, the fused cast, the scaling banks, attention, the rotary
 * embedding, the norms, the MLP's activation and the optimizers, with their
 * semantics (the mixture-of-experts layer's pieces: backend_desc_moe.h, included
 * at the end of this file). The operations
 * themselves, and the conventions every backend follows (memory, layout,
 * scales, amax, ordering, errors), are exec/backend/backend.h's. */
#ifndef FP8PLAN_EXEC_BACKEND_DESC_H
#define FP8PLAN_EXEC_BACKEND_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/delayed.h"
#include "fp8/dtype.h"
#include "fp8/granularity.h"
#include "planner/spec.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- GEMM ------------------------------------------------------------------
 *
 *   D (M, N) = A (M, K) · B (N, K)ᵀ  [+ D if accumulate]  [+ bias (N) on every row]
 *
 * Each operand is described by how it is stored:
 *   GEMM_K_INNER  A stored (M, K), B stored (N, K): K is the contiguous dimension.
 *   GEMM_K_OUTER  A stored (K, M), B stored (K, N): K is the outer dimension.
 * In cuBLAS (column-major) terms, row-major D = A·Bᵀ is Dᶜ (N×M) = B·Aᵀ; with both
 * operands K_INNER that is transa = T (on B), transb = N (on A): the "TN" layout,
 * the only one Hopper's FP8 tensor cores take. So for a Linear layer with
 * activations X (M, K) and weights W (N, K):
 *   fprop  Y  = X · Wᵀ     A = X  (M,K) K_INNER,  B = W  (N,K) K_INNER
 *   dgrad  dX = dY · W     A = dY (M,N) K_INNER,  B = Wᵀ (K,N) K_INNER  (transposed copy)
 *   wgrad  dW = dYᵀ · X    A = dYᵀ(N,M) K_INNER,  B = Xᵀ (K,M) K_INNER  (transposed copies)
 * BF16/FP32 operands may use either layout.
 *
 * FP8 operands carry scale_inv (dequantization) pointers. The product is
 * accumulated in FP32 from the raw FP8 values and the sum rescaled once by
 * scale_inv(A)·scale_inv(B) (per tensor), or per 128-wide K block with block
 * scales (GRAN_1X128 / GRAN_128X128, DeepSeek-V3 style promotion). */

typedef enum {
    GEMM_K_INNER = 0, /* K contiguous: A (M,K), B (N,K) */
    GEMM_K_OUTER = 1, /* K outer:      A (K,M), B (K,N) */
} GemmLayout;

typedef enum {
    GEMM_OVERWRITE = 0,  /* D = A·Bᵀ (+bias)        (beta = 0) */
    GEMM_ACCUMULATE = 1, /* D = D + A·Bᵀ (+bias)    (beta = 1; gradient accumulation) */
} GemmAccum;

typedef enum {
    GEMM_ACC_SPLIT = 0, /* partial sums promoted to full FP32 (TE: dgrad, wgrad) */
    GEMM_ACC_FAST = 1,  /* FP8 fast accumulation allowed (TE: fprop); no effect on non-FP8 GEMMs or the CPU */
    /* Block-scaled FP8 operands only (DeepSeek-V3): the H800 tensor core's limited accumulation as
     * fp8/blockgemm.h models it — within each 128-wide K block a 14-significant-bit partial sum,
     * truncated after every product added, promoted to FP32 at the block's end. The CPU computes
     * exactly that; the cuBLASLt mapping (exec/backend/lt_map.c) refuses block scales so far. */
    GEMM_ACC_TC14 = 2,
} GemmAccPrecision;

typedef struct {
    const void *ptr;
    Dtype dtype;       /* DT_BF16, DT_FP16, DT_FP32, DT_E4M3, DT_E5M2 */
    GemmLayout layout; /* see above; FP8 operands must be GEMM_K_INNER */
    uint64_t ld;       /* elements between consecutive stored rows; 0 = packed (K or M/N) */
    /* FP8 only (NULL otherwise): dequantization factors in backend memory.
     * GRAN_TENSOR: 1 float. GRAN_1X128: one per 128 K-elements of each row of the
     * operand as (rows, ceil(K/128)). GRAN_128X128: one per 128x128 tile. */
    const float *scale_inv;
    Granularity scale_gran;
} GemmOperand;

typedef struct {
    void *ptr;
    Dtype dtype; /* DT_BF16, DT_FP16, DT_FP32, or DT_E4M3/DT_E5M2 (FP8 output, not with accumulate) */
    uint64_t ld; /* elements between rows of D; 0 = N */
    /* FP8 output only: quantization multiplier applied before the cast (1 float). */
    const float *scale;
    /* Optional: max |D| over the output, computed in FP32 before any output
     * scaling or rounding, max-combined into *amax. */
    float *amax;
} GemmOutput;

typedef struct {
    uint64_t m, n, k;
    GemmOperand a; /* (M, K) */
    GemmOperand b; /* (N, K) */
    GemmOutput d;  /* (M, N) */
    GemmAccum accum;
    GemmAccPrecision acc_precision;
    const void *bias; /* optional (N) vector added to every row of D */
    Dtype bias_dtype; /* DT_BF16/DT_FP16/DT_FP32 */
} GemmDesc;

/* Validate a descriptor: shapes non-zero, dtypes legal, leading dimensions not
 * smaller than the packed extent, FP8 operands K_INNER with a scale_inv, no
 * E5M2 x E5M2 (cuBLASLt refuses it), FP8 output has a scale and does not
 * accumulate. ST_USAGE naming the field when not. */
Status gemm_desc_check(const GemmDesc *g, Err *e);

/* ---- fused cast + transpose + amax ------------------------------------------
 * One read of `in` (rows, cols) produces the row-wise FP8 copy (rows, cols), the
 * transposed FP8 copy (cols, rows), or both, quantized with one per-tensor
 * scale: x = in · in_scale_inv, q = sat_fp8(x · scale), round to nearest even,
 * saturating at the format's max (TE's casts saturate). The amax of x (before
 * `scale`) is max-combined into *amax; scale_inv = 1/scale is written so the
 * FP8 data and its dequantization factor always travel together. in_scale_inv
 * dequantizes a scaled input (FP8-LM's FP16 master: x = stored / master scale). */
typedef struct {
    const void *in;
    Dtype in_dtype;            /* DT_BF16, DT_FP16 or DT_FP32 */
    const float *in_scale_inv; /* 1 float, or NULL (= 1) */
    uint64_t rows, cols;
    Dtype out_dtype;    /* DT_E4M3 or DT_E5M2 */
    void *out_row;      /* (rows, cols) or NULL */
    void *out_col;      /* (cols, rows) or NULL */
    const float *scale; /* 1 float; NULL only for an amax-only call (no output), which leaves scale_inv as it is */
    float *scale_inv;   /* 1 float written, or NULL */
    float *amax;        /* 1 float max-combined, or NULL */
    uint64_t col_ld;    /* elements between rows of out_col; 0 = rows (packed). A larger one writes the
                           columns of a slice of a taller matrix: a MoE layer's experts, each its own scale */
    /* Block scaling (DeepSeek-V3; gran GRAN_1X128 or GRAN_128X128, GRAN_TENSOR = 0 above): each copy is
     * quantized on its own, block by block, with the block's own amax (current scaling, computed online):
     * scale = fmax / amax in FP32 (1 for an all-zero block), as fp8/quant.h's quant_tensor does without
     * power-of-two rounding. The row-wise copy's blocks tile (rows, cols), its dequantization factors go
     * to row_scale_inv (gran_scale_count(rows, cols) of them, fp8/quant.h's order); the transposed copy is
     * tiled as the (cols, rows) tensor it is (1x128 activations re-tiled 128x1, as the report does for
     * the backward), into col_scale_inv; with col_ld its rows go col_ld apart as above, its tiles starting at
     * its own first column (a MoE layer's expert). scale, scale_inv, amax and in_scale_inv are unused
     * (NULL); the input is 16/32-bit. */
    Granularity gran;
    float *row_scale_inv; /* with out_row */
    float *col_scale_inv; /* with out_col */
} CastDesc;

/* ---- scaling state ------------------------------------------------------------
 * A bank holds the scaling state of n FP8 tensors of one format: FP32
 * amax_history (history_len, n) — row 0 is the current step's amax, written by
 * the casts — scale (n) and scale_inv (n). */
typedef struct {
    uint32_t n;           /* tensors in the bank */
    uint32_t history_len; /* ≥ 1 */
    AmaxAlgo algo;
    int margin;          /* scale = fmax / amax / 2^margin */
    Dtype fmt;           /* DT_E4M3 (fmax 448) or DT_E5M2 (fmax 57344) */
    float *amax_history; /* (history_len, n) */
    float *scale;        /* (n) quantization multipliers */
    float *scale_inv;    /* (n) */
} ScalingBank;

/* ---- attention ---------------------------------------------------------------
 * Causal self-attention with the scores materialized (no flash), multi-head or
 * grouped-query: heads H query heads share KV = kv_heads key/value heads (KV
 * divides H; query head h reads KV head h / (H/KV); KV = H is multi-head).
 *   qkv (B, T, W), W = (H + 2·KV)·D: per token q | k | v, q head h in columns
 *   [h·D, (h+1)·D), k head g at H·D + g·D, v head g at (H + KV)·D + g·D.
 *   probs (B, H, T, T) = softmax(q·kᵀ/√D) over keys ≤ query (entries above the
 *   diagonal are written as 0); out (B, T, H·D) = probs · v. The softmax is
 *   computed in FP32; probs and out are stored in `dtype`. probs is saved for
 *   the backward pass.
 * v_head_dim Dv (0: D) gives the value heads a width of their own, as latent
 * attention's (q and k of qk_nope + qk_rope, v of v_head_dim): W = (H + KV)·D
 * + KV·Dv, v head g at (H + KV)·D + g·Dv, out and dout (B, T, H·Dv); the
 * scores' scale stays 1/√D. */
typedef struct {
    uint32_t batch, seq, heads, kv_heads, head_dim;
    Dtype dtype;     /* of qkv, out, probs, dqkv, dout */
    const void *qkv; /* (B, T, W) */
    void *probs;     /* (B, H, T, T) */
    void *out;       /* (B, T, H·D) */
    /* Optional FP32 workspace for the raw scores of one sequence, (H, T, T)
     * at least (the executor carves it from the arena's forward phase). NULL: a
     * backend that needs one uses private memory of its own (the CUDA backend:
     * a few heads at a time). The CPU backend ignores it. */
    float *scratch;
    uint32_t v_head_dim; /* Dv, 0: head_dim */
} AttnFwdDesc;

typedef struct {
    uint32_t batch, seq, heads, kv_heads, head_dim;
    Dtype dtype;
    const void *qkv;     /* (B, T, W) as in the forward */
    const void *probs;   /* (B, H, T, T) from the forward */
    const void *dout;    /* (B, T, H·D) */
    void *dqkv;          /* (B, T, W), overwritten (dk, dv summed over the query heads sharing them) */
    float *scratch;      /* (B, H, T, T) FP32 workspace for d(probs) / d(scores) */
    uint32_t v_head_dim; /* Dv, 0: head_dim */
} AttnBwdDesc;

/* ---- rotary position embedding -------------------------------------------------
 * In place on the q and k heads of qkv (B, T, W) laid out as for attention (v
 * untouched): for token t of every sequence, each head's pairs (x_i, x_{i+D/2}),
 * i < D/2 ("rotate half", Megatron's and TE's non-interleaved layout) become
 *   (x_i·c − x_{i+D/2}·s,  x_{i+D/2}·c + x_i·s),   c, s = cos, sin(t·θ_i),
 *   θ_i = base^(−2i/D),
 * with c, s read from the table cos_sin (T, D/2, 2) in backend memory, so every
 * backend rotates by the same floats. inverse = 1 rotates by −θ: the backward
 * of the forward rotation (its transpose), applied to dq and dk.
 * Latent attention's decoupled RoPE: rope_dim R (0: D) rotates only the last R
 * columns of each q and k head, as a head of R (pairs (x_i, x_{i+R/2}) there,
 * θ_i = base^(−2i/R), the table (T, R/2, 2)); v_head_dim Dv (0: D) is the value
 * heads' width in the row, W = (H + KV)·D + KV·Dv (as AttnFwdDesc's).
 * With q/k norms (Qwen3's per-head RMSNorm before the rotation; qnorm_w set):
 * the forward first replaces each q and k head's D values x by x·rstd·w (rstd
 * = 1/√(mean(x²) + eps) in FP32, written to norm_rstd; w the q heads' or the k
 * heads' D weights), then rotates. The inverse first undoes the rotation on
 * dq, dk (= dy, the norm's output gradient), adds dy·x̂ to the weights' FP32
 * gradients (x̂ = x·rstd with x read from norm_raw, the forward's input, and
 * rstd the forward's; summed over tokens and heads in order) and replaces dy
 * by the norm's input gradient (dx̂ − x̂·mean(dx̂·x̂))·rstd, dx̂ = w·dy. */
typedef struct {
    uint32_t batch, seq, heads, kv_heads, head_dim; /* head_dim even */
    Dtype dtype;
    void *qkv;            /* (B, T, W), rotated in place */
    const float *cos_sin; /* (T, R/2, 2) */
    int inverse;
    uint32_t rope_dim, v_head_dim; /* R (even, at most D) and Dv; 0: head_dim */
    /* q/k norms, or all NULL */
    const void *qnorm_w, *knorm_w; /* (D) each, dtype norm_wdt */
    Dtype norm_wdt;
    float eps;
    const void *norm_raw;       /* inverse: (B, T, W) the forward's input laid out as qkv (its q, k heads read) */
    float *norm_rstd;           /* (B·T, H + KV): the forward writes, the inverse reads */
    float *qnorm_dw, *knorm_dw; /* (D) each, FP32, accumulated by the inverse */
} RopeDesc;

/* ---- strided block copies: latent attention's q/k/v assembly ---------------------
 * reps blocks of rows x cols elements, block b of row i read at src[i·src_ld + b·src_step + j]
 * and written to dst[i·dst_ld + b·dst_step + j] (j < cols; lds and steps in elements):
 *   dst_step > 0  block b to its own place: dst = src, or dst += src (accumulate);
 *   dst_step = 0  every block summed into one: dst = Σ_b src_b, or dst += Σ_b src_b (the
 *                 sum in FP32 in b order, from dst's value when accumulating, rounded once).
 * src_step 0 reads the same block every time (a broadcast; its backward is dst_step 0).
 * Latent attention (DeepSeek-V2/V3) builds the attention's rows (B·T, H·D + H·D + H·Dv) of
 * q, k, v (D = nope + rope) from kv_up's output (B·T, H·(nope + Dv)) and kv_down's (B·T,
 * kv_lora + rope): k's nope columns per head (reps H, src_step nope + Dv, dst_step D), its
 * rope columns shared by the heads (src_step 0), v per head; and copies kv_down's latent
 * columns out for their norm. src and dst must not overlap. */
typedef struct {
    uint64_t rows, cols, reps;
    Dtype dtype; /* fp32, fp16 or bf16, of both */
    const void *src;
    uint64_t src_ld, src_step;
    void *dst;
    uint64_t dst_ld, dst_step;
    int accumulate;
} StridedCopyDesc;

/* ---- normalization ----------------------------------------------------------
 * Over the last dimension C, statistics in FP32, by the planner's NormType:
 *   NORM_LAYERNORM  y = (x − mean)·rstd·weight + bias, rstd = 1/√(var + eps)
 *                   (biased variance); mean and rstd saved;
 *   NORM_RMSNORM    y = x·rstd·weight, rstd = 1/√(mean(x²) + eps); no mean, no
 *                   bias (both NULL), rstd saved. */
typedef struct {
    NormType norm;
    uint64_t rows, cols; /* N tokens, C channels */
    float eps;
    Dtype act_dtype;    /* of in, out */
    Dtype weight_dtype; /* of weight, bias (the working copy) */
    const void *in;     /* (N, C) */
    const void *weight; /* (C) */
    const void *bias;   /* (C), LayerNorm only */
    void *out;          /* (N, C) */
    float *mean;        /* (N) saved for backward, LayerNorm only */
    float *rstd;        /* (N) saved for backward */
} NormFwdDesc;

typedef struct {
    NormType norm;
    uint64_t rows, cols;
    Dtype act_dtype, weight_dtype;
    const void *in, *weight;
    const float *mean, *rstd; /* mean: LayerNorm only */
    const void *dout;         /* (N, C) */
    void *din;                /* (N, C), dinput ADDED to it (residual-stream gradient accumulates) */
    float *dweight;           /* (C) FP32, accumulated */
    float *dbias;             /* (C) FP32, accumulated; LayerNorm only */
} NormBwdDesc;

/* ---- the MLP's activation ----------------------------------------------------
 * By the planner's MlpType, on rows tokens and cols = F outputs per token:
 *   MLP_GELU    in (rows, F) → out (rows, F), GELU with the tanh approximation
 *               (GPT-2): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³)));
 *   MLP_SWIGLU  in (rows, 2F) = [gate | up] per row (FC1's fused output, gate
 *               first as Megatron and TE chunk it) → out (rows, F) =
 *               silu(gate)·up, silu(x) = x/(1 + e^−x). */
typedef struct {
    MlpType mlp;
    uint64_t rows, cols; /* cols = F, the output width */
    Dtype dtype;
    const void *in; /* (rows, k·F), k = 2 for SwiGLU */
    void *out;      /* (rows, F) */
} ActFwdDesc;

typedef struct {
    MlpType mlp;
    uint64_t rows, cols;
    Dtype dtype;
    const void *in;   /* (rows, k·F) the forward's input */
    const void *dout; /* (rows, F) */
    void *din;        /* (rows, k·F), overwritten; GELU only: may be dout (element-wise in place) */
} ActBwdDesc;

/* ---- optimizers ---------------------------------------------------------------
 * Hyper-parameters shared by both optimizers; `step` is 1-based (bias
 * correction 1 − beta^step). Decoupled weight decay (AdamW):
 *   m = b1·m + (1−b1)·g;  v = b2·v + (1−b2)·g²
 *   w = w − lr · ( (m/(1−b1^t)) / (sqrt(v/(1−b2^t)) + eps) + wd·w )          */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    uint32_t step;
    float grad_scale; /* gradients are multiplied by this first (e.g. 1/micro-batches) */
} AdamHyper;

/* AdamW with FP32 master and FP32 m and v (the BF16 recipes and TE's FP8
 * recipes), or BF16 m and v (DeepSeek-V3's: moment_dtype DT_BF16; each moment
 * is read to FP32, updated in FP32 as km_adamw does, stored back RNE). The
 * gradient is FP32/BF16, or FP8 with its scale_inv. After the update the
 * working copy (BF16/FP16) is rewritten from the new master (RNE) when `weight`
 * is set. Without a master (NULL) the FP32 working copy itself is updated. */
typedef struct {
    uint64_t n;
    AdamHyper h;
    float *master; /* (n) FP32, or NULL: then weight must be FP32 and is the master */
    void *m, *v;   /* (n) in moment_dtype */
    const void *grad;
    Dtype grad_dtype;            /* DT_FP32, DT_BF16, DT_E4M3, DT_E5M2 */
    const float *grad_scale_inv; /* FP8 grads: 1 float */
    void *weight;                /* working copy (n), or NULL */
    Dtype weight_dtype;
    Dtype moment_dtype; /* DT_FP32, or DT_BF16; DT_NONE (0) reads as DT_FP32 */
} AdamWDesc;

/* AdamW over many tensors at once (the multi-tensor optimizer: one update launch
 * for a whole list, plus one that lays the tensors end to end). `list` and
 * `list_dev` hold the same `count` AdamWDescs, the first in host memory (the
 * shared check and the CPU backend read it), the second in backend memory (the
 * GPU reads it; the caller copies it there once, as the arena's pointers do not
 * move), or NULL: then the backend copies `list` itself, in stream order, before
 * it returns (the caller may reuse `list` at once). Every entry is a valid AdamWDesc whose lr, betas, eps and step equal
 * the first's (the bias corrections are computed once); weight_decay,
 * grad_scale, dtypes and pointers are each tensor's own. The result is each
 * entry's adamw(), bit for bit. */
typedef struct {
    uint32_t count;
    const AdamWDesc *list;     /* host memory */
    const AdamWDesc *list_dev; /* backend memory: a copy of list, or NULL (the backend copies it) */
} AdamWMultiDesc;

/* A scaling record: float[3] = {scale, scale_inv, amax} of one scaled tensor
 * (stored = value · scale; value = stored · scale_inv; amax of the values). */
enum { REC_SCALE = 0, REC_SCALE_INV = 1, REC_AMAX = 2, REC_FLOATS = 3 };

/* MS-AMP's Adam on a per-tensor scaled FP16 master (FP8-LM's, E4M3 m and FP16 v; or O1's FP16 weight
 * updated in place beside FP32 m and v: moment_dtype), each with a scaling record or none (NULL: scale 1). Each step:
 * dequantize with the old scales, update in FP32, then choose new
 * power-of-two scales from the new tensors' amax (MS-AMP's rule),
 *   scale = 2^(floor(log2(fmax / amax)) − margin)   (kept when amax is 0 or not finite)
 * and store the new states quantized with them, recording scale, scale_inv and
 * amax (two passes, so no FP32 copy of the tensor is ever held). The working
 * copy is rewritten from the new master when `weight` is set.
 * States sharded over ranks (exec/model/model_shard.c) take the two passes
 * apart, so the amax can be agreed over the ranks in between: with amax_out
 * set, only the first pass runs and writes the new states' amax {master, m, v}
 * there (nothing is stored); with amax_in set, the scales come from those
 * three amaxes (the group's MAX) and only the second pass runs. */
typedef struct {
    uint64_t n;
    AdamHyper h;
    int margin;
    void *master;      /* (n) FP16 */
    float *master_rec; /* REC_FLOATS, or NULL */
    void *m;           /* (n) E4M3, or FP32 (moment_dtype) */
    float *m_rec;      /* REC_FLOATS, or NULL (FP32 moments: NULL) */
    void *v;           /* (n) FP16, or FP32 (moment_dtype) */
    float *v_rec;      /* REC_FLOATS, or NULL (FP32 moments: NULL) */
    const void *grad;
    Dtype grad_dtype;            /* DT_FP32, DT_BF16, DT_E4M3, DT_E5M2 */
    const float *grad_scale_inv; /* FP8 grads: 1 float */
    void *weight;                /* working copy (n), or NULL */
    Dtype weight_dtype;
    float *amax_out;      /* 3 host floats: first pass only, or NULL */
    const float *amax_in; /* 3 host floats: second pass only with these amaxes, or NULL */
    Dtype moment_dtype;   /* DT_NONE (0): E4M3 m, FP16 v (FP8-LM); DT_FP32: both FP32 (MS-AMP O1) */
} Fp8AdamDesc;

#ifdef __cplusplus
}
#endif

/* The mixture-of-experts layer's descriptors, in a file of their own; every includer of this one sees them. */
#include "exec/backend/backend_desc_moe.h"

#endif
