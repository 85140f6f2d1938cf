/* exec/cuda/k_elem.cu — element-wise and gather/scatter kernels: the MLP's
 * activation (GELU, SwiGLU) forward and backward, residual add, bias add
 * (after a GEMM), token (+ learned position) embeddings and their gradients,
 * and softmax cross-entropy with its gradient. Descriptors arrive checked
 * (exec/backend/backend_check.c).
 *
 * Embedding backward is deterministic and sums in the CPU reference's order
 * without atomics: thread (channel i, slice s) walks every position in order
 * and adds the gradients of the tokens with token % S == s, so each (token, i)
 * accumulator is owned by one thread and receives its terms in position order
 * — bit-identical to the CPU loop. Token ids are checked on the device; the
 * first bad one is recorded and reported by sync() (ST_USAGE). */
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

static unsigned grid_of(CudaImpl *im, uint64_t n) { return cuda_blocks(n, 256, (unsigned)im->info.sm_count * 16u); }

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

/* ---- element-wise: one template per dtype, 16-byte vectors ------------------------------
 * The dtype is a template parameter (FP32, BF16, FP16 storage), so the loops carry
 * no per-element dtype branch; each thread moves 16 bytes per load and store
 * (uint4) when every pointer is 16-byte aligned, and the tail (and unaligned
 * calls) go element by element. The conversions are cuda_elem.cuh's, so the
 * results are the same bits as the scalar path's. */
struct TF32 {
    typedef float S;
    static __device__ __forceinline__ float ld(S x) { return x; }
    static __device__ __forceinline__ S st(float x) { return x; }
};
struct TBF16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float ld(S x) { return dev_bf16_to_f(x); }
    static __device__ __forceinline__ S st(float x) { return dev_f_to_bf16(x); }
};
struct TFP16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float ld(S x) { return dev_fp16_to_f(x); }
    static __device__ __forceinline__ S st(float x) { return dev_f_to_fp16(x); }
};

/* 16 bytes of S as a vector (union: the same bytes seen as uint4 or S[V]). */
template <typename T> union Vec16 {
    uint4 u;
    typename T::S e[16 / sizeof(typename T::S)];
};

enum { EW_GELU_FWD, EW_GELU_BWD, EW_ADD };

template <int OP> __device__ __forceinline__ float ew(float a, float b)
{
    if (OP == EW_GELU_FWD) return km_gelu(a);
    if (OP == EW_GELU_BWD) return KM_MUL(km_gelu_grad(a), b); /* a: the forward input, b: dout */
    return KM_ADD(a, b);
}

/* out[i] = ew(a[i], b[i]) (b unused by GELU forward); vec: all pointers 16-byte aligned. */
template <typename T, int OP>
__global__ void k_elementwise(const typename T::S *a, const typename T::S *b, typename T::S *out, uint64_t n, int vec)
{
    typedef typename T::S S;
    const int V = 16 / sizeof(S);
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x, nv = vec ? n / V : 0;
    for (uint64_t v = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += stride) {
        Vec16<T> x, y, z;
        x.u = ((const uint4 *)a)[v];
        if (OP != EW_GELU_FWD) y.u = ((const uint4 *)b)[v];
#pragma unroll
        for (int j = 0; j < V; j++) z.e[j] = T::st(ew<OP>(T::ld(x.e[j]), OP != EW_GELU_FWD ? T::ld(y.e[j]) : 0.0f));
        ((uint4 *)out)[v] = z.u;
    }
    for (uint64_t i = nv * V + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = T::st(ew<OP>(T::ld(a[i]), OP != EW_GELU_FWD ? T::ld(b[i]) : 0.0f));
}

static int aligned16(const void *p) { return p == NULL || ((uintptr_t)p & 15u) == 0; }

template <typename T, int OP> static void launch_ew(CudaImpl *im, const void *a, const void *b, void *out, uint64_t n)
{
    typedef typename T::S S;
    const int vec = aligned16(a) && aligned16(b) && aligned16(out);
    const uint64_t items = vec ? n / (16 / sizeof(S)) + n % (16 / sizeof(S)) : n;
    k_elementwise<T, OP><<<grid_of(im, items), 256, 0, im->stream>>>((const S *)a, (const S *)b, (S *)out, n, vec);
}

/* One element-wise op on a float dtype (checked by the caller), timed as a kernel. */
template <int OP>
static Status elementwise(CudaImpl *im, const void *a, const void *b, void *out, Dtype dt, uint64_t n, Err *e)
{
    Status st = ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    if (dt == DT_FP32)
        launch_ew<TF32, OP>(im, a, b, out, n);
    else if (dt == DT_BF16)
        launch_ew<TBF16, OP>(im, a, b, out, n);
    else
        launch_ew<TFP16, OP>(im, a, b, out, n);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

__global__ void k_bias_add(void *d, Dtype dt, uint64_t ldd, uint64_t rows, uint64_t cols, const void *bias, Dtype bdt)
{
    GRID_STRIDE(i, rows * cols)
    {
        uint64_t r = i / cols, c = i % cols;
        dev_store(d, dt, r * ldd + c, KM_ADD(dev_load(d, dt, r * ldd + c), dev_load(bias, bdt, c)));
    }
}

/* SwiGLU: out (rows, F) = silu(gate)·up from in (rows, 2F) = [gate | up] per row. */
__global__ void k_swiglu_fwd(const void *in, void *out, Dtype dt, uint64_t rows, uint64_t F)
{
    GRID_STRIDE(i, rows * F)
    {
        uint64_t r = i / F, j = i % F;
        dev_store(out, dt, i, km_swiglu(dev_load(in, dt, r * 2 * F + j), dev_load(in, dt, r * 2 * F + F + j)));
    }
}

__global__ void k_swiglu_bwd(const void *in, const void *dout, void *din, Dtype dt, uint64_t rows, uint64_t F)
{
    GRID_STRIDE(i, rows * F)
    {
        uint64_t r = i / F, j = i % F;
        float dg, du;
        km_swiglu_bwd(dev_load(in, dt, r * 2 * F + j), dev_load(in, dt, r * 2 * F + F + j), dev_load(dout, dt, i), &dg,
                      &du);
        dev_store(din, dt, r * 2 * F + j, dg);
        dev_store(din, dt, r * 2 * F + F + j, du);
    }
}

/* The activation forward (out) or, with bwd, its input gradient (out = din, from dout): GELU through the
 * element-wise template, SwiGLU through its kernels. */
static Status act(CudaImpl *im, MlpType mlp, uint64_t rows, uint64_t F, Dtype dt, const void *in, const void *dout,
                  void *out, int bwd, Err *e)
{
    Status st = ST_OK;
    const uint64_t n = rows * F;
    if (!n) return ST_OK;
    if (mlp == MLP_GELU)
        return bwd ? elementwise<EW_GELU_BWD>(im, in, dout, out, dt, n, e)
                   : elementwise<EW_GELU_FWD>(im, in, NULL, out, dt, n, e);
    if (bwd)
        CUDA_TIMED(BK_OPCAT_KERNEL, (k_swiglu_bwd<<<grid_of(im, n), 256, 0, im->stream>>>(in, dout, out, dt, rows, F)));
    else
        CUDA_TIMED(BK_OPCAT_KERNEL, (k_swiglu_fwd<<<grid_of(im, n), 256, 0, im->stream>>>(in, out, dt, rows, F)));
done:
    return st;
}

Status cuda_act_fwd(Backend *bk, const ActFwdDesc *d, Err *e)
{
    return act(cuda_impl(bk), d->mlp, d->rows, d->cols, d->dtype, d->in, NULL, d->out, 0, e);
}

Status cuda_act_bwd(Backend *bk, const ActBwdDesc *d, Err *e)
{
    return act(cuda_impl(bk), d->mlp, d->rows, d->cols, d->dtype, d->in, d->dout, d->din, 1, e);
}

Status cuda_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
    return n ? elementwise<EW_ADD>(cuda_impl(bk), a, b, out, dtype, n, e) : ST_OK;
}

Status cuda_bias_add(CudaImpl *im, void *d, Dtype dt, uint64_t ldd, uint64_t rows, uint64_t cols, const void *bias,
                     Dtype bias_dt, Err *e)
{
    Status st = ST_OK;
    k_bias_add<<<grid_of(im, rows * cols), 256, 0, im->stream>>>(d, dt, ldd, rows, cols, bias, bias_dt);
    CU_LAUNCHED(e);
done:
    return st;
}

/* ---- embeddings ------------------------------------------------------------------------ */

__device__ __forceinline__ void record_bad(DevSmall *rec, int code, uint64_t pos, long long value, uint64_t limit)
{
    if (atomicCAS(&rec->code, DEV_ERR_NONE, code) == DEV_ERR_NONE) {
        rec->pos = (long long)pos;
        rec->value = value;
        rec->limit = (long long)limit;
    }
}

__global__ void k_embed_fwd(const int32_t *tokens, uint64_t ntok, uint32_t seq, uint64_t vocab, uint64_t C,
                            const void *wte, const void *wpe, Dtype wdt, void *out, Dtype adt, DevSmall *rec)
{
    GRID_STRIDE(i, ntok * C)
    {
        uint64_t p = i / C, c = i % C, t = p % seq;
        int32_t tok = tokens[p];
        if (tok < 0 || (uint64_t)tok >= vocab) {
            if (c == 0) record_bad(rec, DEV_ERR_TOKEN, p, tok, vocab);
            dev_store(out, adt, i, 0.0f);
            continue;
        }
        float x = dev_load(wte, wdt, (uint64_t)tok * C + c);
        if (wpe) x = KM_ADD(x, dev_load(wpe, wdt, t * C + c));
        dev_store(out, adt, i, x);
    }
}

Status cuda_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                      uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                      Dtype act_dtype, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    uint64_t ntok = (uint64_t)batch * seq;
    if (!ntok) return ST_OK;
    CUDA_TIMED(BK_OPCAT_KERNEL,
               (k_embed_fwd<<<grid_of(im, ntok * channels), 256, 0, im->stream>>>(
                   tokens, ntok, seq, vocab, channels, wte, wpe, weight_dtype, out, act_dtype, im->small)));
done:
    return st;
}

enum { EMB_SLICES = 32 };

/* dwte[tok][i] += dout[p][i] for every position p in order; thread (i, s) owns tokens ≡ s (mod S). */
__global__ void k_embed_bwd_wte(const int32_t *tokens, uint64_t ntok, uint64_t vocab, uint64_t C, uint32_t slices,
                                const void *dout, Dtype adt, float *dwte, DevSmall *rec)
{
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= C * slices) return;
    const uint64_t i = tid % C, s = tid / C;
    for (uint64_t p = 0; p < ntok; p++) {
        int32_t tok = tokens[p];
        if (tok < 0 || (uint64_t)tok >= vocab) {
            if (i == 0 && s == 0) record_bad(rec, DEV_ERR_TOKEN, p, tok, vocab);
            continue;
        }
        if ((uint64_t)tok % slices != s) continue;
        float *acc = dwte + (uint64_t)tok * C + i;
        *acc = *acc + dev_load(dout, adt, p * C + i);
    }
}

/* dwpe[t][i] += Σ_b dout[b·T + t][i], b in order. */
__global__ void k_embed_bwd_wpe(uint32_t batch, uint32_t seq, uint64_t C, const void *dout, Dtype adt, float *dwpe)
{
    GRID_STRIDE(k, (uint64_t)seq * C)
    {
        uint64_t t = k / C, i = k % C;
        float acc = dwpe[k];
        for (uint64_t b = 0; b < batch; b++) acc = acc + dev_load(dout, adt, (b * seq + t) * C + i);
        dwpe[k] = acc;
    }
}

Status cuda_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                      uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    uint64_t ntok = (uint64_t)batch * seq;
    if (!ntok) return ST_OK;
    uint32_t slices = vocab < (uint64_t)EMB_SLICES ? (uint32_t)(vocab ? vocab : 1) : (uint32_t)EMB_SLICES;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_embed_bwd_wte<<<(unsigned)((channels * slices + 255) / 256), 256, 0, im->stream>>>(
        tokens, ntok, vocab, channels, slices, dout, act_dtype, dwte, im->small);
    CU_LAUNCHED(e);
    if (dwpe) {
        k_embed_bwd_wpe<<<grid_of(im, (uint64_t)seq * channels), 256, 0, im->stream>>>(batch, seq, channels, dout,
                                                                                       act_dtype, dwpe);
        CU_LAUNCHED(e);
    }
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* ---- softmax cross-entropy ------------------------------------------------------------------
 * One block per row, the row read once and written once. Pass 1 reads the row in 16-byte
 * vectors (the dtype a template parameter, as the element-wise kernels) and folds each
 * vector into the thread's online (max, Σ exp) pair (kernel_math.h's km_online_*), so max
 * and sum come out of one read; the block merges the pairs in a fixed tree (deterministic).
 * The vectors also go to shared memory (up to XENT_SMEM bytes of the row: 2 blocks per SM
 * on Hopper), and pass 2 computes (softmax − onehot)·dloss from there, re-reading from
 * device memory only the part of a row beyond the cache; nothing else is materialized.
 * loss = log Σ + max − x[target] (x[target] read before any write); padded columns get 0.
 * Rows whose start is not 16-byte aligned (a vocab_padded · size that is not a multiple of
 * 16, or an unaligned pointer) go element by element, through the same arithmetic. */
enum { XENT_THREADS = 512, XENT_SMEM = 112 * 1024 };

/* Block merge of the threads' (m, s) pairs; every thread gets the row's pair. sh holds 64 floats. */
__device__ __forceinline__ void block_online(float *m, float *s, float *sh)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1)
        km_online_merge(m, s, __shfl_xor_sync(0xffffffffu, *m, o), __shfl_xor_sync(0xffffffffu, *s, o));
    if (lane == 0) sh[w] = *m, sh[32 + w] = *s;
    __syncthreads();
    *m = lane < nw ? sh[lane] : -INFINITY;
    *s = lane < nw ? sh[32 + lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        km_online_merge(m, s, __shfl_xor_sync(0xffffffffu, *m, o), __shfl_xor_sync(0xffffffffu, *s, o));
}

template <typename T>
__global__ void __launch_bounds__(XENT_THREADS, 2)
    k_xent(typename T::S *logits, uint64_t vocab, uint64_t vpad, int vec, uint64_t cache_vecs, const int32_t *targets,
           float dloss, float *losses, DevSmall *rec)
{
    typedef typename T::S S;
    const int V = 16 / sizeof(S);
    extern __shared__ uint4 xent_cache[];
    __shared__ float sh[64];
    const uint64_t r = blockIdx.x;
    S *row = logits + r * vpad;
    uint4 *rowv = (uint4 *)row;
    const int32_t tgt = targets[r];
    if (tgt < 0 || (uint64_t)tgt >= vocab) {
        if (threadIdx.x == 0) {
            record_bad(rec, DEV_ERR_TARGET, r, tgt, vocab);
            losses[r] = NAN;
        }
        for (uint64_t i = threadIdx.x; i < vpad; i += blockDim.x) row[i] = T::st(0.0f);
        return; /* uniform: the whole block leaves */
    }
    const uint64_t nv = vec ? vocab / V : 0; /* whole vectors; the vocab's tail goes element by element */
    float m = -INFINITY, s = 0.0f, x[16 / sizeof(S)];
    for (uint64_t v = threadIdx.x; v < nv; v += blockDim.x) {
        Vec16<T> u;
        u.u = rowv[v];
        if (v < cache_vecs) xent_cache[v] = u.u;
#pragma unroll
        for (int j = 0; j < V; j++) x[j] = T::ld(u.e[j]);
        km_online_add(&m, &s, x, V);
    }
    for (uint64_t i = nv * V + threadIdx.x; i < vocab; i += blockDim.x) {
        x[0] = T::ld(row[i]);
        km_online_add(&m, &s, x, 1);
    }
    const float xt = threadIdx.x == 0 ? T::ld(row[tgt]) : 0.0f;
    block_online(&m, &s, sh); /* its __syncthreads: every read of the row above precedes any write below */
    if (threadIdx.x == 0) losses[r] = KM_SUB(KM_ADD(logf(s), m), xt);
    for (uint64_t v = threadIdx.x; v < nv; v += blockDim.x) {
        Vec16<T> u, o;
        u.u = v < cache_vecs ? xent_cache[v] : rowv[v];
#pragma unroll
        for (int j = 0; j < V; j++)
            o.e[j] = T::st(km_xent_dlogit(T::ld(u.e[j]), m, s, v * V + j == (uint64_t)tgt, dloss));
        rowv[v] = o.u;
    }
    for (uint64_t i = nv * V + threadIdx.x; i < vocab; i += blockDim.x)
        row[i] = T::st(km_xent_dlogit(T::ld(row[i]), m, s, i == (uint64_t)tgt, dloss));
    for (uint64_t i = vocab + threadIdx.x; i < vpad; i += blockDim.x) row[i] = T::st(0.0f);
}

template <typename T>
static Status launch_xent(CudaImpl *im, void *logits, uint64_t rows, uint64_t vocab, uint64_t vpad,
                          const int32_t *targets, float dloss, float *losses, Err *e)
{
    typedef typename T::S S;
    Status st = ST_OK;
    const int vec = aligned16(logits) && (vpad * sizeof(S)) % 16 == 0;
    const uint64_t nv = vec ? vocab / (16 / sizeof(S)) : 0;
    const uint64_t cache_vecs = nv < XENT_SMEM / 16 ? nv : XENT_SMEM / 16;
    const size_t smem = (size_t)cache_vecs * 16;
    if (smem > 48 * 1024)
        CU_TRY(cudaFuncSetAttribute(k_xent<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem), e);
    CUDA_TIMED(BK_OPCAT_KERNEL, (k_xent<T><<<(unsigned)rows, XENT_THREADS, smem, im->stream>>>(
                                    (S *)logits, vocab, vpad, vec, cache_vecs, targets, dloss, losses, im->small)));
done:
    return st;
}

Status cuda_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                         const int32_t *targets, float dloss, float *losses, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    if (!rows) return ST_OK;
    if (rows > 0x7fffffffu)
        return err_set(e, ST_UNAVAILABLE, "xent: %llu rows exceed one launch of the cuda backend",
                       (unsigned long long)rows);
    if (dtype == DT_FP32) return launch_xent<TF32>(im, logits, rows, vocab, vocab_padded, targets, dloss, losses, e);
    if (dtype == DT_BF16) return launch_xent<TBF16>(im, logits, rows, vocab, vocab_padded, targets, dloss, losses, e);
    return launch_xent<TFP16>(im, logits, rows, vocab, vocab_padded, targets, dloss, losses, e);
}
