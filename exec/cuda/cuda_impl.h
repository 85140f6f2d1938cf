/* exec/cuda/cuda_impl.h — the CUDA backend's private state and the entry points
 * its files share (C++, nvcc only). One stream carries all work, so operations
 * are ordered as the interface requires; sync() is where asynchronous errors,
 * including the kernels' own input checks (token ids), surface. */
#ifndef FP8PLAN_EXEC_CUDA_CUDA_IMPL_H
#define FP8PLAN_EXEC_CUDA_CUDA_IMPL_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "exec/backend.h"
#include "exec/cuda/backend_cuda.h"
#include "exec/cuda/cuda_check.h"
#include "exec/lt_map.h"

/* Errors that kernels find in their inputs (the first one wins). */
enum { DEV_ERR_NONE = 0, DEV_ERR_TOKEN = 1, DEV_ERR_TARGET = 2 };

typedef struct {
    int code; /* DEV_ERR_* */
    int pad_;
    long long pos, value; /* where, and the bad value */
    long long limit;      /* the bound it broke (vocabulary size) */
    /* temporaries of one operation (amax partials, new optimizer scales) */
    float tmp[8];
    unsigned int umax[4]; /* amax as float bits for atomicMax */
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

/* The operations of the Backend table, by file. */
Status cuda_gemm(Backend *bk, const GemmDesc *g, Err *e);

Status cuda_cast_transpose(Backend *bk, const CastDesc *c, Err *e);
Status cuda_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                    const float *scale, Err *e);
Status cuda_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e);
Status cuda_scaling_delayed_update(Backend *bk, const ScalingBank *bank, Err *e);
Status cuda_scaling_from_amax(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e);

Status cuda_layernorm_fwd(Backend *bk, const LnFwdDesc *d, Err *e);
Status cuda_layernorm_bwd(Backend *bk, const LnBwdDesc *d, Err *e);
Status cuda_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e);
Status cuda_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e);

Status cuda_gelu_fwd(Backend *bk, const void *in, void *out, Dtype dtype, uint64_t n, Err *e);
Status cuda_gelu_bwd(Backend *bk, const void *in, const void *dout, void *din, Dtype dtype, uint64_t n, Err *e);
Status cuda_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e);
Status cuda_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e);
Status cuda_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                      uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                      Dtype act_dtype, Err *e);
Status cuda_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                      uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e);
Status cuda_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                         const int32_t *targets, float dloss, float *losses, Err *e);

Status cuda_adamw(Backend *bk, const AdamWDesc *d, Err *e);
Status cuda_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e);

/* Input checks shared by the kernels' host sides (ST_USAGE naming the operation). */
Status cuda_need_float(Dtype dt, const char *op, const char *what, Err *e);

#endif
