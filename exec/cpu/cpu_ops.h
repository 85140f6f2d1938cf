/* exec/cpu/cpu_ops.h — the CPU reference backend's operations, shared by its files
 * (cpu_backend.c fills the Backend table with them). Semantics are those of the
 * matching Backend function pointers in exec/backend.h. Internal to exec/. */
#ifndef FP8PLAN_EXEC_CPU_OPS_H
#define FP8PLAN_EXEC_CPU_OPS_H

#include "exec/backend.h"

/* Private FP32 scratch owned by the backend (like cuBLASLt's internal
 * workspace, it is not part of the arena): grown on demand, reused. */
enum { CPU_SCRATCH_SLOTS = 4 };
typedef struct {
    float *buf[CPU_SCRATCH_SLOTS];
    uint64_t cap[CPU_SCRATCH_SLOTS]; /* floats */
} CpuImpl;

/* Scratch slot i (0 .. CPU_SCRATCH_SLOTS−1) with at least n floats; NULL +
 * ST_NOMEM on failure. */
float *cpu_scratch(Backend *bk, int slot, uint64_t n, Err *e);

/* Per-worker scratch in slot i: par_threads() regions of at least `floats`
 * floats, 64-byte aligned; worker w's region starts at the result + w · *stride. */
float *cpu_scratch_workers(Backend *bk, int slot, uint64_t floats, uint64_t *stride, Err *e);

/* Elements per task of the element-wise kernels on the thread pool (a fixed
 * cut, so results never depend on the thread count; below it, one thread). */
enum { CPU_CHUNK = 1 << 15 };

/* OpenBLAS to one thread per call (once per process, before any BLAS call): the
 * CPU backend's GEMM tiles and attention blocks call sgemm from the pool's
 * threads concurrently. backend_cpu_create calls it. */
void cpu_blas_init(void);

Status cpu_gemm(Backend *bk, const GemmDesc *g, Err *e);

Status cpu_cast_transpose(Backend *bk, const CastDesc *c, Err *e);
Status cpu_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                   const float *scale, Err *e);
Status cpu_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e);
Status cpu_scaling_delayed_update(Backend *bk, const ScalingBank *bank, Err *e);
Status cpu_scaling_from_amax(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e);

Status cpu_layernorm_fwd(Backend *bk, const LnFwdDesc *d, Err *e);
Status cpu_layernorm_bwd(Backend *bk, const LnBwdDesc *d, Err *e);
Status cpu_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e);
Status cpu_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e);
Status cpu_gelu_fwd(Backend *bk, const void *in, void *out, Dtype dtype, uint64_t n, Err *e);
Status cpu_gelu_bwd(Backend *bk, const void *in, const void *dout, void *din, Dtype dtype, uint64_t n, Err *e);
Status cpu_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e);
Status cpu_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e);
Status cpu_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                     Dtype act_dtype, Err *e);
Status cpu_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e);
Status cpu_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                        const int32_t *targets, float dloss, float *losses, Err *e);

Status cpu_adamw(Backend *bk, const AdamWDesc *d, Err *e);
Status cpu_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e);

#endif
