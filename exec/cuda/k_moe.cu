/* exec/cuda/k_moe.cu — a mixture-of-experts layer's router on the GPU
 * (exec/backend/backend_desc.h: RouterDesc, RouterBwdDesc, RouterAuxDesc), the same
 * arithmetic as the CPU reference (exec/cpu/cpu_moe.c) in the same order:
 *
 *  - router_topk: one block per token. The scores' exponentials (softmax's
 *    expf, the sigmoid's km_sigmoid) run one expert per thread; everything
 *    that sums or selects — the row max, the softmax's sum in expert order,
 *    group-limited routing, the k arg-max passes (ties to the lower id, NaN
 *    keys below every number), the combine weights — runs on the block's
 *    first thread through kernel_math.h's unfused operations, so given the
 *    same scores the ids and weights are the CPU's bit for bit. The scores
 *    themselves inherit expf's ≤ 2 ulp (CUDA) against glibc's ≤ 1 ulp: the GPU
 *    check derives the tolerance (tests/gpu/gpu_moe.c). counts are integer
 *    atomics, exact in any order.
 *  - router_bwd: one block per token; the sums over the k slots and over the
 *    experts (softmax's dot) on the first thread in index order: bit-identical
 *    to the CPU on the same inputs.
 *  - router_aux_loss: in double as the CPU, each sum in the CPU's order (a
 *    token's sigmoid sum by one thread per token, an expert's mean score by
 *    one thread per expert over the tokens in order, the loss by one thread):
 *    bit-identical.
 * Expert ids the kernels read (router_bwd, router_aux_loss) are checked as the
 * CPU checks them; a bad one is skipped and reported by the next sync()
 * (k_moe.cuh). */
#include <math.h>

#include "exec/backend/kernel_math.h"
#include "exec/cuda/k_moe.cuh"

static unsigned token_blocks(uint64_t tokens) { return (unsigned)(tokens < 65535 ? (tokens ? tokens : 1) : 65535); }

/* ---- top-k --------------------------------------------------------------------------------- */

/* Group-limited routing on the selection keys (the CPU's close_groups): gs (G) scratch. */
__device__ static void close_groups(const RouterDesc &d, float *key, float *gs)
{
    uint32_t G = d.groups, per = d.experts / G;
    for (uint32_t g = 0; g < G; g++) {
        float top1 = -INFINITY, top2 = -INFINITY;
        for (uint32_t e = g * per; e < (g + 1) * per; e++) {
            if (key[e] > top1) {
                top2 = top1;
                top1 = key[e];
            } else if (key[e] > top2) {
                top2 = key[e];
            }
        }
        gs[g] = d.bias && per > 1 ? KM_ADD(top1, top2) : top1;
        if (isnan(gs[g])) gs[g] = -INFINITY;
    }
    for (uint32_t j = 0; j < d.group_topk; j++) { /* an open group is marked NaN (taken) */
        uint32_t best = 0;
        while (isnan(gs[best])) best++;
        for (uint32_t g = best + 1; g < G; g++)
            if (gs[g] > gs[best]) best = g;
        gs[best] = NAN;
    }
    for (uint32_t g = 0; g < G; g++)
        if (!isnan(gs[g]))
            for (uint32_t e = g * per; e < (g + 1) * per; e++) key[e] = NAN;
}

/* The first thread's part of a token: keys → groups → k arg-max passes → weights, counts. */
__device__ static void select_token(const RouterDesc &d, uint64_t t, const float *s, float *key)
{
    const uint32_t E = d.experts, k = d.k;
    int32_t *ids = d.ids + t * k;
    float *w = d.weights + t * k;
    if (d.groups > 1) close_groups(d, key, key + E);
    for (uint32_t j = 0; j < k; j++) {
        uint32_t best = 0;
        while (isnan(key[best])) best++;
        for (uint32_t e = best + 1; e < E; e++)
            if (key[e] > key[best]) best = e;
        ids[j] = (int32_t)best;
        key[best] = NAN;
        atomicAdd(&d.counts[best], 1);
    }
    float sum = 0.0f;
    for (uint32_t j = 0; j < k; j++) sum = KM_ADD(sum, s[ids[j]]);
    for (uint32_t j = 0; j < k; j++) w[j] = KM_MUL(d.norm_topk ? KM_DIV(s[ids[j]], sum) : s[ids[j]], d.weight_scale);
}

/* shared: s (E), key (E + groups) */
__global__ void k_router_topk(RouterDesc d)
{
    extern __shared__ float sh[];
    __shared__ float red;
    const uint32_t E = d.experts;
    float *s = sh, *key = sh + E;
    for (uint64_t t = blockIdx.x; t < d.tokens; t += gridDim.x) {
        const float *z = d.logits + t * E;
        if (d.score == ROUTER_SIGMOID) {
            for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) s[e] = km_sigmoid(z[e]);
        } else {
            if (threadIdx.x == 0) {
                float mx = -INFINITY;
                for (uint32_t e = 0; e < E; e++) mx = z[e] > mx ? z[e] : mx; /* NaN ignored */
                red = mx;
            }
            __syncthreads();
            for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) s[e] = expf(KM_SUB(z[e], red));
            __syncthreads();
            if (threadIdx.x == 0) {
                float sum = 0.0f;
                for (uint32_t e = 0; e < E; e++) sum = KM_ADD(sum, s[e]);
                red = sum;
            }
            __syncthreads();
            for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) s[e] = KM_DIV(s[e], red);
        }
        __syncthreads();
        for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
            float kk = d.bias ? KM_ADD(s[e], d.bias[e]) : s[e];
            key[e] = isnan(kk) ? -INFINITY : kk; /* below every number, but still selectable */
            d.scores[t * E + e] = s[e];
        }
        __syncthreads();
        if (threadIdx.x == 0) select_token(d, t, s, key);
        __syncthreads();
    }
}

Status cuda_router_topk(Backend *bk, const RouterDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    size_t shared = ((size_t)2 * d->experts + (d->groups > 1 ? d->groups : 0)) * sizeof(float);
    if (shared > 48 * 1024)
        return err_set(e, ST_UNAVAILABLE, "router_topk: %u experts need %zu bytes of shared memory (48 KiB here)",
                       d->experts, shared);
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    CU_TRY(cudaMemsetAsync(d->counts, 0, (size_t)d->experts * sizeof *d->counts, im->stream), e);
    if (d->tokens) {
        k_router_topk<<<token_blocks(d->tokens), MOE_THREADS, shared, im->stream>>>(*d);
        CU_LAUNCHED(e);
    }
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* ---- backward ------------------------------------------------------------------------------- */

/* shared: ds (E) */
__global__ void k_router_bwd(RouterBwdDesc d, DevSmall *rec)
{
    extern __shared__ float ds[];
    __shared__ float dot_sh;
    __shared__ int ok;
    const uint32_t E = d.experts, k = d.k;
    const float c = d.weight_scale;
    for (uint64_t t = blockIdx.x; t < d.tokens; t += gridDim.x) {
        const float *s = d.scores + t * E, *dw = d.dweights + t * k;
        const int32_t *ids = d.ids + t * k;
        float *dz = d.dlogits + t * E;
        for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) ds[e] = d.dscores ? d.dscores[t * E + e] : 0.0f;
        __syncthreads();
        if (threadIdx.x == 0) {
            ok = moe_ids_ok(d.ids, t, k, E, rec);
            if (ok && d.norm_topk) { /* w_j = c·s_j / S: ds_i = c·(dw_i / S − Σ_j dw_j·s_j / S²) */
                float sum = 0.0f, dot = 0.0f;
                for (uint32_t l = 0; l < k; l++) {
                    sum = KM_ADD(sum, s[ids[l]]);
                    dot = KM_ADD(dot, KM_MUL(dw[l], s[ids[l]]));
                }
                for (uint32_t l = 0; l < k; l++)
                    ds[ids[l]] =
                        KM_ADD(ds[ids[l]], KM_MUL(c, KM_SUB(KM_DIV(dw[l], sum), KM_DIV(dot, KM_MUL(sum, sum)))));
            } else if (ok) {
                for (uint32_t l = 0; l < k; l++) ds[ids[l]] = KM_ADD(ds[ids[l]], KM_MUL(c, dw[l]));
            }
            if (ok && d.score != ROUTER_SIGMOID) {
                float dot = 0.0f;
                for (uint32_t e = 0; e < E; e++) dot = KM_ADD(dot, KM_MUL(ds[e], s[e]));
                dot_sh = dot;
            }
        }
        __syncthreads();
        if (ok)
            for (uint32_t e = threadIdx.x; e < E; e += blockDim.x)
                dz[e] = d.score == ROUTER_SIGMOID ? KM_MUL(KM_MUL(ds[e], s[e]), KM_SUB(1.0f, s[e]))
                                                  : KM_MUL(s[e], KM_SUB(ds[e], dot_sh));
        __syncthreads();
    }
}

Status cuda_router_bwd(Backend *bk, const RouterBwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    size_t shared = (size_t)d->experts * sizeof(float);
    if (shared > 48 * 1024)
        return err_set(e, ST_UNAVAILABLE, "router_bwd: %u experts need %zu bytes of shared memory (48 KiB here)",
                       d->experts, shared);
    if (!d->tokens) return ST_OK;
    CUDA_TIMED(BK_OPCAT_KERNEL,
               (k_router_bwd<<<token_blocks(d->tokens), MOE_THREADS, shared, im->stream>>>(*d, im->small)));
done:
    return st;
}

/* ---- auxiliary balance loss (double, the CPU's order) ------------------------------------------- */

/* Per token: its ids checked, and the sum its scores are normalised by (1 for softmax; sigmoid: Σ_x s in x
 * order). */
__global__ void k_aux_token_sums(RouterAuxDesc d, double *tsum, DevSmall *rec)
{
    const uint32_t E = d.experts;
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < d.tokens;
         t += (uint64_t)gridDim.x * blockDim.x) {
        (void)moe_ids_ok(d.ids, t, d.k, E, rec);
        double sum = 1.0;
        if (d.score == ROUTER_SIGMOID) {
            sum = 0.0;
            for (uint32_t x = 0; x < E; x++) sum = __dadd_rn(sum, (double)d.scores[t * E + x]);
        }
        tsum[t] = sum;
    }
}

/* The whole sequence's tokens: T, or T·shards with every shard's counts given (backend_desc.h). */
__device__ static double aux_tokens(const RouterAuxDesc *d)
{
    return d->counts ? __dmul_rn((double)d->tokens, (double)d->shards) : (double)d->tokens;
}

/* Per expert x: f_x = n_x / (T·k) and P_x = Σ_t s[t][x] / tsum[t], tokens in order. fp: f (E), then P (E). */
__global__ void k_aux_expert(RouterAuxDesc d, const double *tsum, double *fp)
{
    const uint32_t E = d.experts;
    for (uint32_t x = blockIdx.x * blockDim.x + threadIdx.x; x < E; x += gridDim.x * blockDim.x) {
        double f = 0.0, P = 0.0;
        for (uint64_t i = 0; !d.counts && i < d.tokens * d.k; i++)
            if (d.ids[i] == (int32_t)x) f = __dadd_rn(f, 1.0);
        for (uint32_t s = 0; d.counts && s < d.shards; s++) f = __dadd_rn(f, (double)d.counts[(uint64_t)s * E + x]);
        for (uint64_t t = 0; t < d.tokens; t++) P = __dadd_rn(P, __ddiv_rn((double)d.scores[t * E + x], tsum[t]));
        fp[x] = __ddiv_rn(f, __dmul_rn(aux_tokens(&d), (double)d.k));
        fp[E + x] = P;
    }
}

__global__ void k_aux_loss(RouterAuxDesc d, const double *fp)
{
    const uint32_t E = d.experts;
    double loss = 0.0;
    for (uint32_t x = 0; x < E; x++) loss = __dadd_rn(loss, __dmul_rn(fp[x], __ddiv_rn(fp[E + x], aux_tokens(&d))));
    *d.loss = __double2float_rn(__dmul_rn(__dmul_rn((double)d.coeff, (double)E), loss));
}

/* dL/dp[t][x] = g_x = coeff·E·f_x/T; sigmoid: ds_x = (g_x − Σ_y g_y·s_y/S) / S; times dloss. */
__global__ void k_aux_dscores(RouterAuxDesc d, const double *tsum, const double *fp)
{
    const uint32_t E = d.experts;
    const double gk = __ddiv_rn(__dmul_rn((double)d.coeff, (double)E), aux_tokens(&d));
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < d.tokens;
         t += (uint64_t)gridDim.x * blockDim.x) {
        const float *s = d.scores + t * E;
        double sum = 1.0, dot = 0.0;
        if (d.score == ROUTER_SIGMOID) {
            sum = tsum[t];
            for (uint32_t x = 0; x < E; x++) dot = __dadd_rn(dot, __dmul_rn(__dmul_rn(gk, fp[x]), (double)s[x]));
            dot = __ddiv_rn(dot, sum);
        }
        for (uint32_t x = 0; x < E; x++)
            d.dscores[t * E + x] =
                __double2float_rn(__ddiv_rn(__dmul_rn((double)d.dloss, __dsub_rn(__dmul_rn(gk, fp[x]), dot)), sum));
    }
}

Status cuda_router_aux_loss(Backend *bk, const RouterAuxDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    void *buf = NULL;
    /* scratch: tsum (T), f (E), P (E) as doubles */
    uint64_t n = d->tokens + 2 * (uint64_t)d->experts;
    ST_TRY(cuda_scratch(im, (size_t)(n * sizeof(double)), &buf, e));
    {
        double *tsum = (double *)buf, *fp = tsum + d->tokens;
        unsigned tb = cuda_blocks(d->tokens, MOE_THREADS, 1024), eb = cuda_blocks(d->experts, MOE_THREADS, 64);
        ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
        k_aux_token_sums<<<tb, MOE_THREADS, 0, im->stream>>>(*d, tsum, im->small);
        CU_LAUNCHED(e);
        k_aux_expert<<<eb, MOE_THREADS, 0, im->stream>>>(*d, tsum, fp);
        CU_LAUNCHED(e);
        k_aux_loss<<<1, 1, 0, im->stream>>>(*d, fp);
        CU_LAUNCHED(e);
        if (d->dscores) {
            k_aux_dscores<<<tb, MOE_THREADS, 0, im->stream>>>(*d, tsum, fp);
            CU_LAUNCHED(e);
        }
        ST_TRY(cuda_op_end(im, e));
    }
done:
    return st;
}
