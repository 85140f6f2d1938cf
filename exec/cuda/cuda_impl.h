/* exec/cuda/cuda_impl.h — the CUDA backend's private state and the entry points
 * its files share (C++, nvcc only). One stream carries all work, so operations
 * are ordered as the interface requires; sync() is where asynchronous errors,
 * including the kernels' own input checks (token ids), surface. */
#ifndef FP8PLAN_EXEC_CUDA_CUDA_IMPL_H
#define FP8PLAN_EXEC_CUDA_CUDA_IMPL_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "exec/backend/backend.h"
#include "exec/cuda/backend_cuda.h"
#include "exec/cuda/cuda_check.h"
#include "exec/backend/lt_map.h"

/* Errors that kernels find in their inputs (the first one wins): a token or a
 * target outside the vocabulary; an expert id outside [0, E) or picked twice by
 * one token, a permuted row outside [0, T·k) (the mixture-of-experts kernels,
 * which then skip the bad entry rather than read or write outside a tensor). */
enum {
    DEV_ERR_NONE = 0,
    DEV_ERR_TOKEN = 1,
    DEV_ERR_TARGET = 2,
    DEV_ERR_EXPERT = 3,
    DEV_ERR_EXPERT_TWICE = 4,
    DEV_ERR_ROW = 5
};

typedef struct {
    int code; /* DEV_ERR_* */
    int pad_;
    long long pos, value; /* where, and the bad value */
    long long limit;      /* the bound it broke (vocabulary size, experts, permuted rows) */
    long long limit2;     /* the mixture-of-experts errors: slots per token (k), pos = token·k + slot */
    /* temporaries of one operation (amax partials, new optimizer scales) */
    float tmp[8];
    unsigned int umax[4]; /* amax as float bits for atomicMax */
    /* a GEMM's FP8 scales staged on 16-byte boundaries (lt_scale_stage): A at
     * [0], B at [4], D at [8] */
    __align__(16) float lt_scale[12];
} DevSmall;

enum { EV_PAIRS = 2048 }; /* per-operation timestamps held before they are summed */

typedef struct {
    Backend *bk; /* the table this state belongs to (its gemm_workspace slice) */
    int device;
    BackendDeviceInfo info;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    /* cuBLASLt workspace, CUDA_LT_WORKSPACE_BYTES: the arena's slice when the
     * executor carved one (bk->gemm_workspace), else this private one, made at
     * the first GEMM that needs it */
    void *ws;
    LtCache cache;
    void *scratch; /* private scratch, grown on demand */
    size_t scratch_bytes;
    void *scratch2; /* a second one (grouped-query attention's expanded K/V) */
    size_t scratch2_bytes;
    void *scratch3; /* a third: block-scaled GEMMs' scales relaid out for cuBLASLt */
    size_t scratch3_bytes;
    DevSmall *small; /* device */
    cudaEvent_t marks[BACKEND_MARKS];
    uint64_t marked; /* bit i: mark i recorded */
    /* per-operation timing */
    int timing;
    cudaEvent_t ev[2 * EV_PAIRS];
    unsigned char ev_cat[EV_PAIRS];
    uint32_t ev_pairs;
    int ev_open; /* a begin without its end */
    double op_s[BK_OPCAT_COUNT];
} CudaImpl;

static inline CudaImpl *cuda_impl(Backend *bk) { return (CudaImpl *)bk->impl; }

/* Private scratch of at least `bytes` (256-byte aligned); waits for the stream
 * before replacing a smaller one. */
Status cuda_scratch(CudaImpl *im, size_t bytes, void **out, Err *e);

/* Bracket an operation for op_times (no-ops while timing is off). */
Status cuda_op_begin(CudaImpl *im, BackendOpCat cat, Err *e);
Status cuda_op_end(CudaImpl *im, Err *e);

/* One timed launch: op_times brackets it as category `cat`, a launch error
 * goes to `done` (needs `im`, `e`, `st` and a `done:` label in scope). */
#define CUDA_TIMED(cat, launch)            \
    do {                                   \
        ST_TRY(cuda_op_begin(im, cat, e)); \
        launch;                            \
        CU_LAUNCHED(e);                    \
        ST_TRY(cuda_op_end(im, e));        \
    } while (0)

/* Launch geometry: blocks of `threads` covering n items, at most `cap` blocks
 * (the kernels stride over the rest). */
static inline unsigned cuda_blocks(uint64_t n, unsigned threads, unsigned cap)
{
    uint64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return (unsigned)(b > cap ? cap : b);
}

/* The workspace for the next matmul (the arena's slice, or a private one). */
Status cuda_lt_workspace(CudaImpl *im, void **ws, Err *e);

/* One cuBLASLt matmul (also used by attention with a strided batch). */
Status cuda_lt_call(CudaImpl *im, const LtCall *c, Err *e);
/* Drop the cached descriptors (destroy). */
void cuda_lt_cache_free(CudaImpl *im);

/* Kernel-backed helpers the GEMM path needs. */
Status cuda_bias_add(CudaImpl *im, void *d, Dtype dt, uint64_t ldd, uint64_t rows, uint64_t cols, const void *bias,
                     Dtype bias_dt, Err *e);
Status cuda_amax_strided(CudaImpl *im, const void *p, Dtype dt, uint64_t ld, uint64_t rows, uint64_t cols, float *amax,
                         Err *e);
/* *dst = fmax(*dst, *src) on the device. */
Status cuda_amax_combine(CudaImpl *im, float *dst, const float *src, Err *e);

/* The operations of the Backend table (cuda_gemm in gemm_lt.cu, the casts and
 * scaling in k_quant.cu, norms in k_norm.cu, attention in k_attn.cu, the
 * rotary embedding in k_rope.cu (and strided_copy's refusal: latent attention is
 * not run here), element-wise ops and the loss in k_elem.cu,
 * the optimizers in k_optim.cu, the mixture-of-experts router in k_moe.cu, its
 * permutation and combine in k_moe_perm.cu, its grouped GEMMs in gemm_group.cu);
 * backend_cuda.cu puts each behind its shared check. */
BACKEND_DECLARE(cuda)

/* Private scratch slot 1 (slot 0 is cuda_scratch's): grown on demand. */
Status cuda_scratch2(CudaImpl *im, size_t bytes, void **out, Err *e);
/* Slot 2: a block-scaled GEMM's scales in cuBLASLt's layout (gemm_lt.cu). */
Status cuda_scratch3(CudaImpl *im, size_t bytes, void **out, Err *e);

/* cast_transpose with block scales (CastDesc gran 1x128 / 128x128): k_quant_block.cu. */
Status cuda_cast_blocks(CudaImpl *im, const CastDesc *c, Err *e);

#endif
