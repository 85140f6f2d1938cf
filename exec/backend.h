/* exec/backend.h — the executor's backend interface: one struct of function
 * pointers that the training step calls for every piece of work.
 *
 * Two implementations plug in here: the CPU reference (exec/cpu/cpu_*.c, in C11,
 * the oracle the GPU kernels are tested against) and CUDA (exec/cuda/, built
 * with nvcc: cuBLASLt GEMMs, custom kernels, NCCL). The orchestration in
 * exec/model/gpt_*.c is the same for both; only the pointers differ.
 *
 * Conventions every implementation follows:
 *  - Memory. Every tensor pointer passed to an operation points into memory the
 *    backend handed out with alloc() (device memory for CUDA). The executor
 *    makes one allocation (the arena, carved by the Plan's terms) and passes
 *    slices of it. Scalars the device computes (amax, scale, scale_inv) live in
 *    backend memory too, as `float *` — never as host values — so a GPU never
 *    has to synchronise to use them.
 *  - Layout. Tensors are row-major and packed unless a leading dimension says
 *    otherwise. Shapes are written in comments as (rows, cols) or (B, T, C).
 *  - Scales. A "scale" is the quantization multiplier (q = fp8(x * scale)); a
 *    "scale_inv" is the dequantization factor 1/scale (x ≈ q * scale_inv), the
 *    value cuBLASLt's A/B_SCALE_POINTER takes. TE semantics: scale = fmax / amax
 *    / 2^margin.
 *  - amax outputs are max-combined into their slot (*amax = fmax(*amax, m)); the
 *    caller zeroes the slot when a new window starts, as TE's amax history row 0.
 *  - Ordering. Operations are issued in order on one stream; a later operation
 *    sees the results of earlier ones. sync() waits for all of them, and is the
 *    only point where errors of asynchronous work surface.
 *  - Errors. Every operation validates its descriptor and returns ST_USAGE
 *    (with the offending field named in e->msg) for a malformed one,
 *    ST_UNAVAILABLE for a legal request this backend does not implement, and
 *    ST_SOFTWARE/ST_NOMEM for internal failures. Nothing prints, nothing exits.
 *  - Determinism. The CPU backend gives bit-identical outputs run to run (every
 *    reduction in a fixed order); the resume tests rely on it. A GPU backend
 *    keeps reductions order-independent where it can (amax is a max, which is).
 *
 * The GEMM is described by a GemmDesc (shapes, layouts, dtypes, scale pointers,
 * accumulate, output amax) rather than a list of flags; gemm_desc_check()
 * validates one the same way for every backend, including Hopper's FP8 rule:
 * both FP8 operands must be K-inner ("TN" in cuBLAS terms). The CPU backend
 * enforces that rule too, so an orchestration that forgets a transposed FP8
 * copy fails on the CPU in CI, not first on the GPU.
 *
 * Writing a backend (the CUDA one, exec/cuda/): provide
 * exec/cuda/backend_cuda.h declaring `Status backend_cuda_create(Backend **, Err *)`
 * (ST_UNAVAILABLE with the reason when no usable GPU is present); fill every
 * function pointer; set gemm_workspace_bytes to the cuBLASLt workspace you
 * want (the executor carves it from the arena's gemm_workspace term and stores
 * the slice in gemm_workspace before the first GEMM); implement mem_info; and
 * hold every kernel to the CPU reference on the same inputs (the tests in
 * tests/unit/test_exec_backend.c are the pattern). */
#ifndef FP8PLAN_EXEC_BACKEND_H
#define FP8PLAN_EXEC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/delayed.h"
#include "fp8/dtype.h"
#include "fp8/granularity.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Backend Backend;

/* ---- device description (optional hooks, see the end of struct Backend) ---- */
enum { BACKEND_MARKS = 32 }; /* timestamp ids 0 .. BACKEND_MARKS-1 */

/* What an operation's device time is counted as (op_times). */
typedef enum {
    BK_OPCAT_GEMM = 0, /* gemm() and the GEMMs inside attention */
    BK_OPCAT_KERNEL,   /* every other kernel: casts, norms, attention softmax, GELU, loss, ... */
    BK_OPCAT_OPTIM,    /* adamw(), fp8_adam() */
    BK_OPCAT_COMM,     /* collectives issued on the backend's stream */
    BK_OPCAT_COUNT
} BackendOpCat;

typedef struct {
    char name[256];                /* as the driver names it, e.g. "NVIDIA H200" */
    int cc_major, cc_minor;        /* compute capability */
    int sm_count;                  /* multiprocessors */
    uint64_t total_bytes;          /* device memory */
    double sm_clock_ghz;           /* maximum SM clock */
    int runtime_version;           /* CUDA runtime, e.g. 13000 */
    int driver_version;            /* CUDA driver API version */
    uint64_t gemm_library_version; /* cuBLASLt, e.g. 130100 */
    /* bytes the backend holds outside the arena right now */
    uint64_t workspace_bytes; /* GEMM library workspace (cuBLASLt: fixed at creation) */
    uint64_t scratch_bytes;   /* private scratch (reduction partials, attention scores without a desc scratch) */
} BackendDeviceInfo;

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
    Dtype out_dtype; /* DT_E4M3 or DT_E5M2 */
    void *out_row;   /* (rows, cols) or NULL */
    void *out_col;   /* (cols, rows) or NULL */
    const float *scale;
    float *scale_inv; /* 1 float written, or NULL */
    float *amax;      /* 1 float max-combined, or NULL */
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
 * Causal multi-head self-attention with the scores materialized (no flash):
 *   qkv (B, T, 3C) holds q | k | v, each (B, T, C) with head h in columns
 *   [h*D, (h+1)*D), D = C / heads. probs (B, heads, T, T) = softmax(q·kᵀ/√D) over
 *   keys ≤ query (entries above the diagonal are written as 0); out (B, T, C) =
 *   probs · v. The softmax is computed in FP32; probs and out are stored in
 *   `dtype`. probs is saved for the backward pass. */
typedef struct {
    uint32_t batch, seq, heads, head_dim;
    Dtype dtype;     /* of qkv, out, probs, dqkv, dout */
    const void *qkv; /* (B, T, 3C) */
    void *probs;     /* (B, heads, T, T) */
    void *out;       /* (B, T, C) */
    /* Optional FP32 workspace for the raw scores of one sequence, (heads, T, T)
     * at least (the executor carves it from the arena's forward phase). NULL: a
     * backend that needs one uses private memory of its own (the CUDA backend:
     * a few heads at a time). The CPU backend ignores it. */
    float *scratch;
} AttnFwdDesc;

typedef struct {
    uint32_t batch, seq, heads, head_dim;
    Dtype dtype;
    const void *qkv;   /* (B, T, 3C) as in the forward */
    const void *probs; /* (B, heads, T, T) from the forward */
    const void *dout;  /* (B, T, C) */
    void *dqkv;        /* (B, T, 3C), overwritten */
    float *scratch;    /* (B, heads, T, T) FP32 workspace for d(probs) / d(scores) */
} AttnBwdDesc;

/* ---- layer norm --------------------------------------------------------------
 * y = (x − mean) · rstd · weight + bias over the last dimension C, statistics in
 * FP32 (rstd = 1/sqrt(var + eps), biased variance). */
typedef struct {
    uint64_t rows, cols; /* N tokens, C channels */
    float eps;
    Dtype act_dtype;    /* of in, out */
    Dtype weight_dtype; /* of weight, bias (the working copy) */
    const void *in;     /* (N, C) */
    const void *weight; /* (C) */
    const void *bias;   /* (C) */
    void *out;          /* (N, C) */
    float *mean;        /* (N) saved for backward */
    float *rstd;        /* (N) saved for backward */
} LnFwdDesc;

typedef struct {
    uint64_t rows, cols;
    Dtype act_dtype, weight_dtype;
    const void *in, *weight;
    const float *mean, *rstd;
    const void *dout; /* (N, C) */
    void *din;        /* (N, C), dinput ADDED to it (residual-stream gradient accumulates) */
    float *dweight;   /* (C) FP32, accumulated */
    float *dbias;     /* (C) FP32, accumulated */
} LnBwdDesc;

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

/* AdamW with FP32 master, m and v (the BF16 recipes and TE's FP8 recipes). The
 * gradient is FP32/BF16, or FP8 with its scale_inv. After the update the
 * working copy (BF16/FP16) is rewritten from the new master (RNE) when `weight`
 * is set. Without a master (NULL) the FP32 working copy itself is updated. */
typedef struct {
    uint64_t n;
    AdamHyper h;
    float *master; /* (n) FP32, or NULL: then weight must be FP32 and is the master */
    float *m, *v;  /* (n) FP32 */
    const void *grad;
    Dtype grad_dtype;            /* DT_FP32, DT_BF16, DT_E4M3, DT_E5M2 */
    const float *grad_scale_inv; /* FP8 grads: 1 float */
    void *weight;                /* working copy (n), or NULL */
    Dtype weight_dtype;
} AdamWDesc;

/* A scaling record: float[3] = {scale, scale_inv, amax} of one scaled tensor
 * (stored = value · scale; value = stored · scale_inv; amax of the values). */
enum { REC_SCALE = 0, REC_SCALE_INV = 1, REC_AMAX = 2, REC_FLOATS = 3 };

/* FP8-LM's optimizer (MS-AMP's low-bit Adam): master weights in FP16, first
 * moment in FP8 E4M3, second moment in FP16, each with a per-tensor scaling
 * record (or none: NULL keeps the state unscaled, scale 1). Each step:
 * dequantize with the old scales, update in FP32, then choose new
 * power-of-two scales from the new tensors' amax (MS-AMP's rule),
 *   scale = 2^(floor(log2(fmax / amax)) − margin)   (kept when amax is 0 or not finite)
 * and store the new states quantized with them, recording scale, scale_inv and
 * amax (two passes, so no FP32 copy of the tensor is ever held). The working
 * copy is rewritten from the new master when `weight` is set. */
typedef struct {
    uint64_t n;
    AdamHyper h;
    int margin;
    void *master;      /* (n) FP16 */
    float *master_rec; /* REC_FLOATS, or NULL */
    void *m;           /* (n) E4M3 */
    float *m_rec;      /* REC_FLOATS, or NULL */
    void *v;           /* (n) FP16 */
    float *v_rec;      /* REC_FLOATS, or NULL */
    const void *grad;
    Dtype grad_dtype;            /* DT_FP32, DT_BF16, DT_E4M3, DT_E5M2 */
    const float *grad_scale_inv; /* FP8 grads: 1 float */
    void *weight;                /* working copy (n), or NULL */
    Dtype weight_dtype;
} Fp8AdamDesc;

/* Validation every backend's optimizers share: step ≥ 1, betas in [0, 1), finite
 * hyper-parameters; a gradient that exists, is FP32, BF16 or FP8, and carries a
 * scale_inv when FP8. ST_USAGE naming `op` and the field otherwise. */
Status adam_hyper_check(const AdamHyper *h, const char *op, Err *e);
Status adam_grad_check(const void *grad, Dtype dt, const float *scale_inv, const char *op, Err *e);

/* ---- the interface ---------------------------------------------------------------
 * Every function returns ST_OK or an error filled into e (which may be NULL). */
struct Backend {
    const char *name; /* "cpu", "cuda" */
    void *impl;
    /* GEMM workspace the backend wants carved from the arena (cuBLASLt: 32 MiB
     * on Hopper); 0 for none. The executor stores the slice in gemm_workspace
     * before the first GEMM; the plan counts it as the gemm_workspace term. */
    uint64_t gemm_workspace_bytes;
    void *gemm_workspace;

    /* Memory. alloc returns 256-byte aligned memory (NULL + ST_NOMEM on failure). */
    Status (*alloc)(Backend *bk, uint64_t bytes, void **out, Err *e);
    void (*free)(Backend *bk, void *p);
    Status (*memset0)(Backend *bk, void *p, uint64_t bytes, Err *e);
    Status (*copy_to_device)(Backend *bk, void *dst, const void *host_src, uint64_t bytes, Err *e);
    Status (*copy_to_host)(Backend *bk, void *host_dst, const void *src, uint64_t bytes, Err *e);
    /* Wait for all issued work; surfaces asynchronous errors. */
    Status (*sync)(Backend *bk, Err *e);
    /* Optional (NULL when the backend cannot tell): device memory free and total
     * in bytes (cudaMemGetInfo), so a run can compare everything the process
     * holds on the device — arena, context, library workspaces, NCCL buffers —
     * with the plan's total. */
    Status (*mem_info)(Backend *bk, uint64_t *free_bytes, uint64_t *total_bytes, Err *e);

    /* GEMM, see GemmDesc. */
    Status (*gemm)(Backend *bk, const GemmDesc *g, Err *e);
    /* Fused cast + transpose + amax, see CastDesc. */
    Status (*cast_transpose)(Backend *bk, const CastDesc *c, Err *e);
    /* Element-wise conversion of n values: out = convert(in · scale) (RNE; FP8
     * outputs saturate); scale may be NULL (= 1). For FP32/FP16/BF16 ↔ each other
     * and FP8 → wider (then scale is the dequantization factor). */
    Status (*convert)(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                      const float *scale, Err *e);
    /* *amax = fmax(*amax, max |in[i]|) over n values. */
    Status (*amax)(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e);

    /* Delayed scaling (TE order) for every tensor of the bank: window amax from
     * the history including row 0 (AMAX_ALGO_MAX: fmaxf over all rows, NaN
     * ignored; AMAX_ALGO_MOST_RECENT: row 0), new scale = fmax/amax/2^margin if
     * that amax is finite and > 0 (else the previous scale is kept; an infinite
     * scale becomes FLT_MAX), then the history rotates by one and row 0 is
     * zeroed — fp8/delayed.h's delayed_step for each column. scale_inv is left
     * to the casts, which write it beside the data they produce. */
    Status (*scaling_delayed_update)(Backend *bk, const ScalingBank *bank, Err *e);
    /* Current scaling for n tensors: scale[i] = fmax/amax[i]/2^margin with TE's
     * policy (amax 0, Inf or NaN → scale 1; an infinite quotient → FLT_MAX). */
    Status (*scaling_from_amax)(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale,
                                Err *e);

    Status (*layernorm_fwd)(Backend *bk, const LnFwdDesc *d, Err *e);
    Status (*layernorm_bwd)(Backend *bk, const LnBwdDesc *d, Err *e);
    Status (*attention_fwd)(Backend *bk, const AttnFwdDesc *d, Err *e);
    Status (*attention_bwd)(Backend *bk, const AttnBwdDesc *d, Err *e);

    /* GELU, tanh approximation (GPT-2): out = 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))). */
    Status (*gelu_fwd)(Backend *bk, const void *in, void *out, Dtype dtype, uint64_t n, Err *e);
    /* din = gelu'(in) · dout (overwrites din; din may be dout: element-wise in place). */
    Status (*gelu_bwd)(Backend *bk, const void *in, const void *dout, void *din, Dtype dtype, uint64_t n, Err *e);
    /* out = a + b (n values; out may alias a or b). */
    Status (*add)(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e);
    /* dbias (N) FP32 += column sums of dout (M, N). */
    Status (*bias_grad)(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e);

    /* Token + position embedding: out (B·T, C) = wte[tokens] + wpe[t]; tokens int32 (B·T),
     * each in [0, vocab) (ST_USAGE otherwise); wte (vocab, C), wpe (T, C). */
    Status (*embed_fwd)(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                        uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                        Dtype act_dtype, Err *e);
    /* dwte (vocab, C) FP32 += scatter of dout by token; dwpe (T, C) FP32 += sum over batch. */
    Status (*embed_bwd)(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                        uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e);

    /* Softmax cross-entropy over the first `vocab` of `vocab_padded` columns of
     * logits (N, vocab_padded): losses (N) FP32 = −log softmax[target]; logits is
     * overwritten with d(loss)/d(logits) · dloss (dloss = 1/N for a mean loss);
     * padded columns get 0. targets int32 (N), each in [0, vocab). */
    Status (*xent_fwd_bwd)(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                           const int32_t *targets, float dloss, float *losses, Err *e);

    Status (*adamw)(Backend *bk, const AdamWDesc *d, Err *e);
    Status (*fp8_adam)(Backend *bk, const Fp8AdamDesc *d, Err *e);

    /* Release everything the backend holds (not the arena: free() that first). */
    void (*destroy)(Backend *bk);

    /* ---- optional: measurement hooks (NULL where a backend has none; callers check) ----
     * Added for the CUDA backend, whose work is asynchronous: host clocks around
     * an operation measure its launch, not its run. */

    /* (mem_info, device memory as the driver sees it, is declared after sync.) */
    /* The device, and the bytes the backend holds outside the arena. */
    Status (*device_info)(Backend *bk, BackendDeviceInfo *out, Err *e);
    /* Timestamps in the stream of work: mark(id) records timestamp id (< BACKEND_MARKS)
     * after everything issued so far; elapsed(from, to) waits for `to` and gives the
     * device time between the two marks in seconds. */
    Status (*mark)(Backend *bk, uint32_t id, Err *e);
    Status (*elapsed)(Backend *bk, uint32_t from, uint32_t to, double *seconds, Err *e);
    /* Device time of the backend's own operations by category (BackendOpCat),
     * summed since the previous call, in seconds; waits for issued work. `enable`
     * switches the per-operation timing on (1) or off (0) from now on (it costs
     * two timestamps per operation). */
    Status (*op_times)(Backend *bk, int enable, double seconds[BK_OPCAT_COUNT], Err *e);
};

/* ---- collectives ----------------------------------------------------------------
 * One struct of function pointers per communication library (nccl-tests style).
 * Buffers are backend memory. Every call adds its payload and ring bus bytes to
 * `stats` (nccl-tests factors: all-reduce 2(n−1)/n, all-gather and reduce-scatter
 * (n−1)/n of the total array bytes), so a run can compare them with the Plan's
 * collectives. */
typedef enum { COMM_SUM = 0, COMM_MAX, COMM_MIN } CommReduce;

typedef struct {
    uint64_t calls;
    uint64_t payload_bytes; /* total array bytes S summed over calls */
    double bus_bytes;       /* S · factor summed over calls */
} CommStats;

typedef struct Comm Comm;
struct Comm {
    const char *name; /* "single", "nccl" */
    int rank, size;
    void *impl;
    CommStats stats;
    /* In place on buf (count elements of dtype). */
    Status (*all_reduce)(Comm *c, Backend *bk, void *buf, uint64_t count, Dtype dtype, CommReduce op, Err *e);
    /* recv (size·count) gathers every rank's send (count). */
    Status (*all_gather)(Comm *c, Backend *bk, const void *send, void *recv, uint64_t count, Dtype dtype, Err *e);
    /* recv (count) = this rank's slice of the reduction of send (size·count). */
    Status (*reduce_scatter)(Comm *c, Backend *bk, const void *send, void *recv, uint64_t count, Dtype dtype,
                             CommReduce op, Err *e);
    void (*destroy)(Comm *c);
};

/* The single-rank implementation: collectives degenerate to copies (or
 * nothing, in place) and count zero bus bytes. */
Status comm_single_create(Comm **out, Err *e);

/* ---- backends by name ------------------------------------------------------------- */

/* The CPU reference backend (always built). */
Status backend_cpu_create(Backend **out, Err *e);

/* Create a backend by name ("cpu" or "cuda"). "cuda" gives ST_UNAVAILABLE with a
 * clear message when fp8plan was built without CUDA or when no GPU is present.
 * Unknown names are ST_USAGE.
 *
 * The CUDA backend plugs in by providing exec/cuda/backend_cuda.h, which
 * declares `Status backend_cuda_create(Backend **out, Err *e);` (returning
 * ST_UNAVAILABLE itself when no GPU is present). backend.c calls it when the
 * build has CUDA (FP8PLAN_HAVE_CUDA) and that header exists. */
Status backend_create(const char *name, Backend **out, Err *e);

/* The communicator a one-process run uses on backend bk: "single"
 * (comm_single_create) or "nccl" (one NCCL rank on bk's device and stream;
 * ST_UNAVAILABLE, with the reason, when this build has no CUDA backend or NCCL
 * cannot start). Unknown names are ST_USAGE. */
Status comm_create(const char *name, Backend *bk, Comm **out, Err *e);

/* FP8 format maximum (448 for E4M3, 57344 for E5M2; 0 for other types). */
float backend_fp8_max(Dtype fmt);

#ifdef __cplusplus
}
#endif
#endif
