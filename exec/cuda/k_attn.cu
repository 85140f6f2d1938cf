/* exec/cuda/k_attn.cu — causal self-attention with materialized scores, as the
 * planner's "materialized" attention option counts it: probs (B, H, T, T) are
 * stored in the activation dtype and saved for the backward.
 *
 * Forward, per sequence b (heads batched with cuBLASLt's strided batch; the
 * head stride inside qkv (B, T, 3C) is D columns, the row stride 3C):
 *   S = Q·Kᵀ / √D   → FP32 scores (the descriptor's scratch, or a private buffer
 *                     a few heads at a time), full T × T computed
 *   P = softmax(S) over keys ≤ query, rounded to the dtype (0 above the diagonal)
 *   O = P·V         → out (B, T, C)
 * Backward, with the FP32 (B, H, T, T) scratch of the descriptor:
 *   dP = dO·Vᵀ (FP32 into scratch); dS = P ⊙ (dP − Σ P·dP) / √D, rounded to the
 *   dtype and written into the second half of each scratch row (a 16-bit dS row
 *   needs half of its FP32 row; each warp reads its row before it writes, from
 *   the top down, so no unread value is overwritten); then
 *   dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q straight into dqkv.
 * The per-element arithmetic is exec/backend/kernel_math.h's; the GPU rounds dS to the
 * dtype before its GEMMs where the CPU reference keeps it in FP32 (one more
 * rounding of 2^-8 relative for BF16, bounded in the GPU tests).
 * Grouped-query attention (KV heads < heads) runs these on K and V repeated
 * per query head (the end of this file). */
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

enum { SM_THREADS = 256, SM_ROWS = SM_THREADS / 32 };
static const size_t FWD_CHUNK_BYTES = 64u << 20; /* private score buffer: heads at a time within this */

/* Rows of P from FP32 scores: row r of the chunk is query t = r % T. */
__global__ void __launch_bounds__(SM_THREADS)
    k_softmax_fwd(const float *scores, void *probs, Dtype dt, uint64_t rows, uint32_t T)
{
    const int lane = threadIdx.x & 31;
    const uint64_t r = (uint64_t)blockIdx.x * SM_ROWS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const uint32_t t = (uint32_t)(r % T);
    const float *s = scores + r * T;
    float mx = -INFINITY;
    for (uint32_t j = lane; j <= t; j += 32) mx = fmaxf(mx, s[j]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (uint32_t j = lane; j <= t; j += 32) sum += expf(KM_SUB(s[j], mx));
    sum = warp_sum(sum);
    for (uint32_t j = lane; j < T; j += 32)
        dev_store(probs, dt, r * T + j, j <= t ? KM_DIV(expf(KM_SUB(s[j], mx)), sum) : 0.0f);
}

/* dS from dP (FP32, in scratch) and P: see the file comment for the layout. */
__global__ void __launch_bounds__(SM_THREADS)
    k_softmax_bwd(const void *probs, float *scratch, Dtype dt, uint64_t rows, uint32_t T, float scale)
{
    const int lane = threadIdx.x & 31;
    const uint64_t r = (uint64_t)blockIdx.x * SM_ROWS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const uint32_t t = (uint32_t)(r % T);
    float *dp = scratch + r * T;
    float dot = 0.0f;
    for (uint32_t j = lane; j <= t; j += 32) dot += dev_load(probs, dt, r * T + j) * dp[j];
    dot = warp_sum(dot);
    __syncwarp();
    if (dt == DT_FP32) { /* in place, each lane its own elements */
        for (uint32_t j = lane; j < T; j += 32)
            dp[j] = j <= t ? KM_MUL(km_softmax_bwd(dev_load(probs, dt, r * T + j), dp[j], dot), scale) : 0.0f;
        return;
    }
    void *ds = (uint16_t *)dp + T; /* 16-bit row in the second half of the FP32 row */
    for (int64_t base = (int64_t)((T - 1) / 32) * 32; base >= 0; base -= 32) {
        const uint32_t j = (uint32_t)base + lane;
        float v = 0.0f;
        if (j <= t) v = KM_MUL(km_softmax_bwd(dev_load(probs, dt, r * T + j), dp[j], dot), scale);
        __syncwarp(); /* the warp's loads of this chunk are done before any store */
        if (j < T) dev_store(ds, dt, j, v);
        __syncwarp();
    }
}

static uint64_t esz(Dtype dt) { return dtype_bytes(dt); }
static const void *at(const void *p, Dtype dt, uint64_t elems) { return (const char *)p + elems * esz(dt); }
static void *at_w(void *p, Dtype dt, uint64_t elems) { return (char *)p + elems * esz(dt); }

/* One batched row-major GEMM D = A·Bᵀ over `batch` heads, timed as a GEMM:
 * each operand's pointer, layout, leading dimension and stride between heads
 * (elements). */
typedef struct {
    const void *p;
    GemmLayout layout;
    uint64_t ld;
    int64_t stride;
} Opnd;
typedef struct {
    void *p;
    Dtype dtype;
    uint64_t ld;
    int64_t stride;
} Outd;

static Status batched(CudaImpl *im, uint64_t m, uint64_t n, uint64_t k, Opnd a, Opnd b, Outd d, Dtype dt,
                      uint32_t batch, float alpha, Err *e)
{
    Status st = ST_OK;
    GemmDesc g = {};
    LtCall c;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a.ptr = a.p;
    g.a.dtype = dt;
    g.a.layout = a.layout;
    g.a.ld = a.ld;
    g.b.ptr = b.p;
    g.b.dtype = dt;
    g.b.layout = b.layout;
    g.b.ld = b.ld;
    g.d.ptr = d.p;
    g.d.dtype = d.dtype;
    g.d.ld = d.ld;
    ST_TRY(lt_map_gemm(&g, &c, e));
    c.batch = batch;
    c.stride_a = b.stride; /* cuBLAS A is our B */
    c.stride_b = a.stride;
    c.stride_d = d.stride;
    c.alpha = alpha;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_GEMM, e));
    ST_TRY(cuda_lt_call(im, &c, e));
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* Multi-head attention (kv_heads = heads: W = 3C). */
static Status mha_fwd(CudaImpl *im, const AttnFwdDesc *d, Err *e)
{
    Status st = ST_OK;
    const uint64_t B = d->batch, T = d->seq, H = d->heads, D = d->head_dim, C = H * D, C3 = 3 * C, TT = T * T;
    const Dtype dt = d->dtype;
    float *scores = d->scratch;
    uint64_t hc = H;
    if (!scores) {
        void *p = NULL;
        hc = FWD_CHUNK_BYTES / (TT * sizeof(float));
        hc = hc < 1 ? 1 : (hc > H ? H : hc);
        ST_TRY(cuda_scratch(im, (size_t)(hc * TT * sizeof(float)), &p, e));
        scores = (float *)p;
    }
    for (uint64_t b = 0; b < B; b++) {
        const void *qkv_b = at(d->qkv, dt, b * T * C3);
        for (uint64_t h0 = 0; h0 < H; h0 += hc) {
            uint64_t n = H - h0 < hc ? H - h0 : hc;
            ST_TRY(batched(im, T, T, D, Opnd{at(qkv_b, dt, h0 * D), GEMM_K_INNER, C3, (int64_t)D},
                           Opnd{at(qkv_b, dt, C + h0 * D), GEMM_K_INNER, C3, (int64_t)D},
                           Outd{scores, DT_FP32, T, (int64_t)TT}, dt, (uint32_t)n, 1.0f / sqrtf((float)D), e));
            ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
            k_softmax_fwd<<<(unsigned)((n * T + SM_ROWS - 1) / SM_ROWS), SM_THREADS, 0, im->stream>>>(
                scores, at_w(d->probs, dt, (b * H + h0) * TT), dt, n * T, (uint32_t)T);
            CU_LAUNCHED(e);
            ST_TRY(cuda_op_end(im, e));
        }
        /* O (T, D) = P (T, T) · V, V stored (T, D): K outer */
        ST_TRY(batched(im, T, D, T, Opnd{at(d->probs, dt, b * H * TT), GEMM_K_INNER, T, (int64_t)TT},
                       Opnd{at(qkv_b, dt, 2 * C), GEMM_K_OUTER, C3, (int64_t)D},
                       Outd{at_w(d->out, dt, b * T * C), dt, C, (int64_t)D}, dt, (uint32_t)H, 1.0f, e));
    }
done:
    return st;
}

/* gdt: the dtype dqkv is written in — the descriptor's, or FP32 for the
 * grouped-query path's per-query-head gradients (summed before one rounding). */
static Status mha_bwd(CudaImpl *im, const AttnBwdDesc *d, Dtype gdt, Err *e)
{
    Status st = ST_OK;
    const uint64_t B = d->batch, T = d->seq, H = d->heads, D = d->head_dim, C = H * D, C3 = 3 * C, TT = T * T;
    const Dtype dt = d->dtype;
    const int wide = dt == DT_FP32;
    /* dS: in place (FP32) or the second half of each FP32 row (16-bit): ld and head stride in elements */
    const uint64_t ld_ds = wide ? T : 2 * T;
    const int64_t s_ds = (int64_t)(wide ? TT : 2 * TT);
    for (uint64_t b = 0; b < B; b++) { /* dP (T, T) = dO (T, D) · V (T, D)ᵀ */
        ST_TRY(batched(im, T, T, D, Opnd{at(d->dout, dt, b * T * C), GEMM_K_INNER, C, (int64_t)D},
                       Opnd{at(d->qkv, dt, b * T * C3 + 2 * C), GEMM_K_INNER, C3, (int64_t)D},
                       Outd{d->scratch + b * H * TT, DT_FP32, T, (int64_t)TT}, dt, (uint32_t)H, 1.0f, e));
    }
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_softmax_bwd<<<(unsigned)((B * H * T + SM_ROWS - 1) / SM_ROWS), SM_THREADS, 0, im->stream>>>(
        d->probs, d->scratch, dt, B * H * T, (uint32_t)T, 1.0f / sqrtf((float)D));
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
    for (uint64_t b = 0; b < B; b++) {
        const void *qkv_b = at(d->qkv, dt, b * T * C3), *dout_b = at(d->dout, dt, b * T * C);
        void *dqkv_b = at_w(d->dqkv, gdt, b * T * C3);
        const void *ds_b = wide ? (const void *)(d->scratch + b * H * TT)
                                : (const void *)((const uint16_t *)(d->scratch + b * H * TT) + T);
        /* dV (T, D) = Pᵀ · dO: P stored (Tq, Tk) is K outer, dO stored (T, D) is K outer */
        ST_TRY(batched(im, T, D, T, Opnd{at(d->probs, dt, b * H * TT), GEMM_K_OUTER, T, (int64_t)TT},
                       Opnd{dout_b, GEMM_K_OUTER, C, (int64_t)D}, Outd{at_w(dqkv_b, gdt, 2 * C), gdt, C3, (int64_t)D},
                       dt, (uint32_t)H, 1.0f, e));
        /* dQ (T, D) = dS (Tq, Tk) · K, K stored (Tk, D): K outer */
        ST_TRY(batched(im, T, D, T, Opnd{ds_b, GEMM_K_INNER, ld_ds, s_ds},
                       Opnd{at(qkv_b, dt, C), GEMM_K_OUTER, C3, (int64_t)D}, Outd{dqkv_b, gdt, C3, (int64_t)D}, dt,
                       (uint32_t)H, 1.0f, e));
        /* dK (T, D) = dSᵀ · Q: dS stored (Tq, Tk) is K outer, Q stored (Tq, D) is K outer */
        ST_TRY(batched(im, T, D, T, Opnd{ds_b, GEMM_K_OUTER, ld_ds, s_ds}, Opnd{qkv_b, GEMM_K_OUTER, C3, (int64_t)D},
                       Outd{at_w(dqkv_b, gdt, C), gdt, C3, (int64_t)D}, dt, (uint32_t)H, 1.0f, e));
    }
done:
    return st;
}

/* ---- grouped-query attention ------------------------------------------------------------
 * KV < H: the K and V heads are repeated per query head into a multi-head
 * layout (B, T, 3·H·D) in private scratch, the multi-head kernels run on it,
 * and the backward writes their gradients in FP32 and sums each KV head's dK
 * and dV over the query heads that share it, in FP32 and head order, rounding
 * once — the CPU reference's order of accumulation across heads. (Rounding
 * each query head's share to BF16 first, as this file first did, lost up to
 * 2^-8 of each share: where the shares cancel, several BF16 ulps of the sum —
 * seen on an H200, 2026-12-04.) */

/* ex (rows, 3·H·D) = q | k repeated | v repeated, from qkv (rows, (H + 2·KV)·D). */
__global__ void k_kv_expand(const void *qkv, void *ex, Dtype dt, uint64_t rows, uint32_t H, uint32_t KV, uint32_t D)
{
    const uint64_t HD = (uint64_t)H * D, W = (uint64_t)(H + 2 * KV) * D, E = 3 * HD, rep = H / KV;
    GRID_STRIDE(i, rows * E)
    {
        const uint64_t r = i / E, c = i % E, part = c / HD, h = (c % HD) / D, j = c % D;
        const uint64_t src = part == 0 ? c : (part == 1 ? HD : HD + (uint64_t)KV * D) + (h / rep) * D + j;
        dev_store(ex, dt, i, dev_load(qkv, dt, r * W + src));
    }
}

/* dqkv (rows, (H + 2·KV)·D) from dex (rows, 3·H·D, FP32): dq rounded, dk and dv of KV head g summed over query
 * heads g·rep .. g·rep + rep − 1, then rounded. */
__global__ void k_kv_reduce(const void *dex, void *dqkv, Dtype dt, uint64_t rows, uint32_t H, uint32_t KV, uint32_t D)
{
    const uint64_t HD = (uint64_t)H * D, W = (uint64_t)(H + 2 * KV) * D, E = 3 * HD, rep = H / KV;
    GRID_STRIDE(i, rows * W)
    {
        const uint64_t r = i / W, c = i % W;
        if (c < HD) {
            dev_store(dqkv, dt, i, dev_load(dex, DT_FP32, r * E + c));
            continue;
        }
        const uint64_t part = c < HD + (uint64_t)KV * D ? 1 : 2, off = c - (part == 1 ? HD : HD + (uint64_t)KV * D);
        const uint64_t g = off / D, j = off % D;
        float sum = 0.0f;
        for (uint64_t k = 0; k < rep; k++)
            sum = KM_ADD(sum, dev_load(dex, DT_FP32, r * E + part * HD + (g * rep + k) * D + j));
        dev_store(dqkv, dt, i, sum);
    }
}

static unsigned kv_grid(CudaImpl *im, uint64_t n) { return cuda_blocks(n, 256, (unsigned)im->info.sm_count * 16u); }

/* K and V repeated per query head into private scratch: *ex (rows, 3·H·D), and
 * with `grads` room for its FP32 gradient *dex right after it (256-byte aligned). */
static Status expand_kv(CudaImpl *im, const void *qkv, uint32_t B, uint32_t T, uint32_t H, uint32_t KV, uint32_t D,
                        Dtype dt, int grads, void **ex, void **dex, Err *e)
{
    Status st = ST_OK;
    const uint64_t rows = (uint64_t)B * T, n = rows * 3 * H * D, lo = (n * dtype_bytes(dt) + 255) / 256 * 256;
    ST_TRY(cuda_scratch2(im, (size_t)(lo + (grads ? n * sizeof(float) : 0)), ex, e));
    if (dex) *dex = (char *)*ex + lo;
    CUDA_TIMED(BK_OPCAT_KERNEL, (k_kv_expand<<<kv_grid(im, n), 256, 0, im->stream>>>(qkv, *ex, dt, rows, H, KV, D)));
done:
    return st;
}

Status cuda_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (d->v_head_dim && d->v_head_dim != d->head_dim)
        return err_set(e, ST_UNAVAILABLE, "attention_fwd: the cuda backend runs no value heads of their own width yet");
    if (d->kv_heads == d->heads) return mha_fwd(im, d, e);
    AttnFwdDesc m = *d;
    void *ex = NULL;
    ST_TRY(expand_kv(im, d->qkv, d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, 0, &ex, NULL, e));
    m.qkv = ex;
    m.kv_heads = d->heads;
    ST_TRY(mha_fwd(im, &m, e));
done:
    return st;
}

Status cuda_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (d->v_head_dim && d->v_head_dim != d->head_dim)
        return err_set(e, ST_UNAVAILABLE, "attention_bwd: the cuda backend runs no value heads of their own width yet");
    if (d->kv_heads == d->heads) return mha_bwd(im, d, d->dtype, e);
    const uint64_t w = (uint64_t)d->batch * d->seq * ((uint64_t)d->heads + 2 * d->kv_heads) * d->head_dim;
    AttnBwdDesc m = *d;
    void *ex = NULL, *dex = NULL;
    ST_TRY(expand_kv(im, d->qkv, d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, 1, &ex, &dex, e));
    m.qkv = ex;
    m.dqkv = dex;
    m.kv_heads = d->heads;
    ST_TRY(mha_bwd(im, &m, DT_FP32, e));
    CUDA_TIMED(BK_OPCAT_KERNEL,
               (k_kv_reduce<<<kv_grid(im, w), 256, 0, im->stream>>>(dex, d->dqkv, d->dtype, (uint64_t)d->batch * d->seq,
                                                                    d->heads, d->kv_heads, d->head_dim)));
done:
    return st;
}
