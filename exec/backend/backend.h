/* exec/backend/backend.h — the executor's backend interface: one struct of function
 * pointers that the training step calls for every piece of work.
 *
 * Two implementations plug in here: the CPU reference (exec/cpu/, in C11, the
 * oracle the GPU kernels are tested against) and CUDA (exec/cuda/, built with
 * nvcc: cuBLASLt GEMMs, custom kernels). The orchestration in exec/model/ is
 * the same for both; only the pointers differ.
 *
 * The operations are declared once, in BACKEND_OPS below: that one list
 * generates the struct's pointers, each backend's declarations and its
 * pointer table, and puts every operation behind its shared descriptor check
 * (backend_check_<op>, exec/backend/backend_check.c and, for the mixture-of-experts
 * operations, exec/backend/backend_check_moe.c): a backend's table entry runs the
 * check and then the backend's function, so no backend can skip or drift from
 * another's validation, and the implementations assume a valid descriptor.
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
 *  - Errors. A malformed descriptor is ST_USAGE with the offending field named
 *    in e->msg (the shared check); ST_UNAVAILABLE for a legal request this
 *    backend does not implement, ST_SOFTWARE/ST_NOMEM for internal failures.
 *    Nothing prints, nothing exits.
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
 * Writing a backend (the CUDA one, exec/cuda/, is the pattern): define
 * PREFIX_<op> for every operation of BACKEND_OPS (BACKEND_DECLARE(PREFIX)
 * declares them) and the memory functions PREFIX_alloc, _free, _memset0,
 * _copy_to_device, _copy_to_host, _sync, _destroy; fill the table with
 * BACKEND_TABLE(PREFIX) (one line) and set the optional hooks; set gemm_workspace_bytes to the
 * GEMM workspace you want (the executor carves it from the arena's
 * gemm_workspace term and stores the slice in gemm_workspace before the first
 * GEMM); and hold every kernel to the CPU reference on the same inputs
 * (tests/unit/test_exec_backend.c and tests/gpu/ are the pattern). */
#ifndef FP8PLAN_EXEC_BACKEND_H
#define FP8PLAN_EXEC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "exec/backend/backend_desc.h"
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

/* ---- the operations, declared once ----------------------------------------------
 * X(P, name, (parameters), (arguments)) for every operation; the semantics are
 * the descriptors' above and the notes here:
 *   gemm                    see GemmDesc
 *   cast_transpose          see CastDesc
 *   convert                 n values: out = convert(in · scale) (RNE; FP8 outputs saturate);
 *                           scale may be NULL (= 1). FP32/FP16/BF16 ↔ each other, FP8 → wider
 *                           (then scale is the dequantization factor)
 *   amax                    *amax = fmax(*amax, max |in[i]|) over n values
 *   scaling_delayed_update  delayed scaling (TE order) for every tensor of the bank: window amax
 *                           from the history including row 0 (AMAX_ALGO_MAX: fmaxf over all rows,
 *                           NaN ignored; AMAX_ALGO_MOST_RECENT: row 0), new scale =
 *                           fmax/amax/2^margin if that amax is finite and > 0 (else the previous
 *                           scale is kept; an infinite scale becomes FLT_MAX), then the history
 *                           rotates by one and row 0 is zeroed — fp8/delayed.h's delayed_step for
 *                           each column; a tensor whose row-0 amax is exactly 0 did not run and
 *                           is left as it is (no roll, scale kept: TE's bulk kernel). scale_inv is
 *                           left to the casts, which write it beside the data they produce
 *   scaling_from_amax       current scaling for n tensors: scale[i] = fmax/amax[i]/2^margin with
 *                           TE's policy (amax 0, Inf or NaN → scale 1; an infinite quotient →
 *                           FLT_MAX)
 *   norm_fwd, norm_bwd      see NormFwdDesc / NormBwdDesc
 *   attention_fwd, _bwd     see AttnFwdDesc / AttnBwdDesc
 *   rope                    see RopeDesc
 *   strided_copy            see StridedCopyDesc
 *   act_fwd, act_bwd        see ActFwdDesc / ActBwdDesc
 *   add                     out = a + b (n values; out may alias a or b)
 *   bias_grad               dbias (N) FP32 += column sums of dout (M, N)
 *   embed_fwd               out (B·T, C) = wte[tokens] (+ wpe[t] when wpe is set: learned
 *                           positions); tokens int32 (B·T), each in [0, vocab) (ST_USAGE otherwise);
 *                           wte (vocab, C), wpe (T, C) or NULL
 *   embed_bwd               dwte (vocab, C) FP32 += scatter of dout by token; dwpe (T, C) FP32 +=
 *                           sum over batch when dwpe is set
 *   xent_fwd_bwd            softmax cross-entropy over the first `vocab` of `vocab_padded` columns
 *                           of logits (N, vocab_padded): losses (N) FP32 = −log softmax[target];
 *                           logits is overwritten with d(loss)/d(logits) · dloss (dloss = 1/N for a
 *                           mean loss); padded columns get 0. targets int32 (N), each in [0, vocab)
 *   embed_shard_fwd         a vocabulary shard's lookup (tensor parallelism): out (n, C) = wte[tok − first]
 *                           for the tokens in [first, first + rows), 0 for the others; wte (rows, C)
 *   embed_shard_bwd         dwte (rows, C) FP32 += scatter of dout by token − first, the shard's tokens only
 *   xent_shard              vocabulary-parallel softmax cross-entropy in three phases, the caller
 *                           reducing stats over the shards between them: logits (rows, cols) FP32 are
 *                           the columns first .. first + cols − 1 of the vocabulary (those ≥ vocab are
 *                           padding); stats (3, rows) FP32: [0] max, [1] sum of exp(z − max), [2] the
 *                           target's logit. Phase 0: stats[0] = max over the shard's live columns
 *                           (−inf when none); the caller all-reduces MAX. Phase 1: stats[1] = the
 *                           shard's sum, stats[2] = the target's logit when the shard holds it, else 0;
 *                           the caller all-reduces SUM. Phase 2: losses (rows) = log(stats[1]) +
 *                           stats[0] − stats[2], logits overwritten with dloss · (softmax − one-hot),
 *                           padding 0 (xent_fwd_bwd's arithmetic, the sum split by shard)
 *   adamw, fp8_adam         see AdamWDesc / Fp8AdamDesc
 *   adamw_multi             see AdamWMultiDesc: adamw over a list of tensors in at most two launches
 *   router_topk, router_bwd, router_aux_loss, moe_permute, moe_unpermute,
 *   moe_unpermute_bwd, grouped_gemm, grouped_gemm_wgrad
 *                           a mixture-of-experts layer's pieces: see RouterDesc ... GroupedWgradDesc */
// clang-format off
#define BACKEND_OPS(X, P)                                                                                             \
    X(P, gemm, (Backend * bk, const GemmDesc *g, Err *e), (bk, g, e))                                                \
    X(P, cast_transpose, (Backend * bk, const CastDesc *c, Err *e), (bk, c, e))                                      \
    X(P, convert,                                                                                                     \
      (Backend * bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n, const float *scale,      \
       Err *e),                                                                                                       \
      (bk, in, in_dtype, out, out_dtype, n, scale, e))                                                                \
    X(P, amax, (Backend * bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e), (bk, in, dtype, n, amax, e)) \
    X(P, scaling_delayed_update, (Backend * bk, const ScalingBank *bank, Err *e), (bk, bank, e))                     \
    X(P, scaling_from_amax,                                                                                           \
      (Backend * bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e),                     \
      (bk, n, fmt, margin, amax, scale, e))                                                                           \
    X(P, norm_fwd, (Backend * bk, const NormFwdDesc *d, Err *e), (bk, d, e))                                         \
    X(P, norm_bwd, (Backend * bk, const NormBwdDesc *d, Err *e), (bk, d, e))                                         \
    X(P, attention_fwd, (Backend * bk, const AttnFwdDesc *d, Err *e), (bk, d, e))                                    \
    X(P, attention_bwd, (Backend * bk, const AttnBwdDesc *d, Err *e), (bk, d, e))                                    \
    X(P, rope, (Backend * bk, const RopeDesc *d, Err *e), (bk, d, e))                                                \
    X(P, strided_copy, (Backend * bk, const StridedCopyDesc *d, Err *e), (bk, d, e))                                 \
    X(P, act_fwd, (Backend * bk, const ActFwdDesc *d, Err *e), (bk, d, e))                                           \
    X(P, act_bwd, (Backend * bk, const ActBwdDesc *d, Err *e), (bk, d, e))                                           \
    X(P, add, (Backend * bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e),              \
      (bk, a, b, out, dtype, n, e))                                                                                   \
    X(P, bias_grad, (Backend * bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e),     \
      (bk, dout, dtype, m, n, dbias, e))                                                                              \
    X(P, embed_fwd,                                                                                                   \
      (Backend * bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab, uint64_t channels,         \
       const void *wte, const void *wpe, Dtype weight_dtype, void *out, Dtype act_dtype, Err *e),                     \
      (bk, tokens, batch, seq, vocab, channels, wte, wpe, weight_dtype, out, act_dtype, e))                           \
    X(P, embed_bwd,                                                                                                   \
      (Backend * bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab, uint64_t channels,         \
       const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e),                                          \
      (bk, tokens, batch, seq, vocab, channels, dout, act_dtype, dwte, dwpe, e))                                      \
    X(P, xent_fwd_bwd,                                                                                                \
      (Backend * bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,                \
       const int32_t *targets, float dloss, float *losses, Err *e),                                                   \
      (bk, logits, dtype, rows, vocab, vocab_padded, targets, dloss, losses, e))                                      \
    X(P, embed_shard_fwd,                                                                                             \
      (Backend * bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows, uint64_t channels,             \
       const void *wte, Dtype weight_dtype, void *out, Dtype act_dtype, Err *e),                                      \
      (bk, tokens, n, first, rows, channels, wte, weight_dtype, out, act_dtype, e))                                  \
    X(P, embed_shard_bwd,                                                                                             \
      (Backend * bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows, uint64_t channels,             \
       const void *dout, Dtype act_dtype, float *dwte, Err *e),                                                       \
      (bk, tokens, n, first, rows, channels, dout, act_dtype, dwte, e))                                              \
    X(P, xent_shard,                                                                                                  \
      (Backend * bk, float *logits, uint64_t rows, uint64_t cols, uint64_t first, uint64_t vocab,                    \
       const int32_t *targets, float *stats, int phase, float dloss, float *losses, Err *e),                          \
      (bk, logits, rows, cols, first, vocab, targets, stats, phase, dloss, losses, e))                               \
    X(P, adamw, (Backend * bk, const AdamWDesc *d, Err *e), (bk, d, e))                                              \
    X(P, adamw_multi, (Backend * bk, const AdamWMultiDesc *d, Err *e), (bk, d, e))                                  \
    X(P, fp8_adam, (Backend * bk, const Fp8AdamDesc *d, Err *e), (bk, d, e))                                        \
    X(P, router_topk, (Backend * bk, const RouterDesc *d, Err *e), (bk, d, e))                                       \
    X(P, router_bwd, (Backend * bk, const RouterBwdDesc *d, Err *e), (bk, d, e))                                     \
    X(P, router_aux_loss, (Backend * bk, const RouterAuxDesc *d, Err *e), (bk, d, e))                                \
    X(P, moe_permute, (Backend * bk, const MoePermuteDesc *d, Err *e), (bk, d, e))                                   \
    X(P, moe_unpermute, (Backend * bk, const MoeUnpermuteDesc *d, Err *e), (bk, d, e))                               \
    X(P, moe_unpermute_bwd, (Backend * bk, const MoeUnpermuteBwdDesc *d, Err *e), (bk, d, e))                        \
    X(P, grouped_gemm, (Backend * bk, const GroupedGemmDesc *d, Err *e), (bk, d, e))                                 \
    X(P, grouped_gemm_wgrad, (Backend * bk, const GroupedWgradDesc *d, Err *e), (bk, d, e))

// clang-format on

/* What the list generates. */
#define BACKEND_OP_FIELD_(P, name, params, args)   Status(*name) params;
#define BACKEND_OP_DECLARE_(P, name, params, args) Status P##_##name params;
#define BACKEND_OP_CHECKED_(P, name, params, args) \
    static Status P##_##name##_checked_ params     \
    {                                              \
        Status st_ = backend_check_##name args;    \
        return st_ ? st_ : P##_##name args;        \
    }
#define BACKEND_OP_FILL_(P, name, params, args) bk->name = P##_##name##_checked_;

/* The shared descriptor check of every operation (exec/backend/backend_check.c):
 * ST_USAGE naming the operation and the field for a malformed call, ST_OK
 * otherwise. Data-dependent checks (token ids in range) are the backends'. */
BACKEND_OPS(BACKEND_OP_DECLARE_, backend_check)

/* Declare PREFIX_<op> for every operation (a backend's header). */
#define BACKEND_DECLARE(PREFIX) BACKEND_OPS(BACKEND_OP_DECLARE_, PREFIX)
/* Define `static void PREFIX_fill_ops(Backend *bk)`, which points every
 * operation of bk at PREFIX_<op> behind its shared check, and the memory
 * functions at PREFIX_alloc, _free, _memset0, _copy_to_device, _copy_to_host,
 * _sync and _destroy (a backend's create; placed after those functions). */
#define BACKEND_TABLE(PREFIX)                         \
    BACKEND_OPS(BACKEND_OP_CHECKED_, PREFIX)          \
    static void PREFIX##_fill_ops(Backend *bk)        \
    {                                                 \
        BACKEND_OPS(BACKEND_OP_FILL_, PREFIX)         \
        bk->alloc = PREFIX##_alloc;                   \
        bk->free = PREFIX##_free;                     \
        bk->memset0 = PREFIX##_memset0;               \
        bk->copy_to_device = PREFIX##_copy_to_device; \
        bk->copy_to_host = PREFIX##_copy_to_host;     \
        bk->sync = PREFIX##_sync;                     \
        bk->destroy = PREFIX##_destroy;               \
    }

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

    /* The operations (BACKEND_OPS), each behind its shared check. */
    BACKEND_OPS(BACKEND_OP_FIELD_, _)

    /* Release everything the backend holds (not the arena: free() that first). */
    void (*destroy)(Backend *bk);

    /* ---- optional: measurement hooks (NULL where a backend has none; callers check) ----
     * Added for the CUDA backend, whose work is asynchronous: host clocks around
     * an operation measure its launch, not its run. */

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

/* ---- backends by name ------------------------------------------------------------- */

/* The CPU reference backend (always built). */
Status backend_cpu_create(Backend **out, Err *e);

/* For a backend's create function: a zeroed Backend named `name` and its
 * zeroed implementation state of impl_bytes (bk->impl; freed by free(bk->impl)).
 * ST_NOMEM. */
Status backend_new(const char *name, size_t impl_bytes, Backend **out, Err *e);

/* Create a backend by name ("cpu" or "cuda"). "cuda" gives ST_UNAVAILABLE with a
 * clear message when fp8plan was built without CUDA or when no GPU is present.
 * Unknown names are ST_USAGE. The CUDA backend plugs in through
 * exec/cuda/backend_cuda.h (backend_cuda_create), called when the build has
 * CUDA (FP8PLAN_HAVE_CUDA). */
Status backend_create(const char *name, Backend **out, Err *e);

#ifdef __cplusplus
}
#endif
#endif
