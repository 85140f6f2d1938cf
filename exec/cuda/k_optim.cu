/* exec/cuda/k_optim.cu — the optimizers: AdamW on an FP32 master with FP32 or BF16 (DeepSeek-V3) m/v, and FP8-LM's
 * AdamW on an FP16 master, an FP8 E4M3 first moment and an FP16 second moment,
 * each with a per-tensor power-of-two scale (MS-AMP's two-kernel scheme).
 *
 * The update of one element is km_adam (exec/backend/kernel_math.h) with the bias
 * corrections computed once on the host, exactly as the CPU reference does, so
 * the new FP32 master weights are bit-identical to the CPU's.
 *
 * FP8-LM, per tensor: pass 1 dequantizes with the old scales, updates in FP32
 * and max-combines |w|, |m|, |v| (atomicMax on float bits: exact); one thread
 * derives the new scales (km_scale_pow2); pass 2 recomputes the same values and
 * stores them quantized with the new scales; one thread publishes the scales.
 * No FP32 copy of the tensor is ever held. */
#include <math.h>

#include "exec/cuda/cuda_elem.cuh"
#include "fp8/codec.h"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

/* `master` is the FP32 master, or the FP32 working copy itself (then weight is NULL). The moments m and v
 * are FP32, or BF16 (DeepSeek-V3: mdt DT_BF16): read exactly to FP32, updated by km_adam, stored back RNE,
 * as the CPU reference does. */
__global__ void k_adamw(uint64_t n, KmAdam h, float grad_scale, const float *gsi, float *master, void *m, void *v,
                        Dtype mdt, const void *grad, Dtype gdt, void *weight, Dtype wdt)
{
    const float gs = gsi ? KM_MUL(grad_scale, *gsi) : grad_scale;
    GRID_STRIDE(i, n)
    {
        float g = KM_MUL(dev_load(grad, gdt, i), gs);
        float mm = dev_load(m, mdt, i), vv = dev_load(v, mdt, i);
        float w = km_adam(&h, master[i], g, &mm, &vv);
        dev_store(m, mdt, i, mm);
        dev_store(v, mdt, i, vv);
        master[i] = w;
        if (weight) dev_store(weight, wdt, i, w);
    }
}

/* slots in DevSmall.tmp: [1..3] amax of w, m, v; [4..6] their new scales */
enum { T_AW = 1, T_AM, T_AV, T_SW, T_SM, T_SV };

struct Fp8AdamArgs {
    uint64_t n;
    KmAdam h;
    float grad_scale;
    const float *gsi;
    uint16_t *master;
    float *master_rec; /* scaling records {scale, scale_inv, amax}, or NULL (scale 1) */
    uint8_t *m;
    float *m_rec;
    uint16_t *v;
    float *v_rec;
    const void *grad;
    Dtype gdt;
    void *weight;
    Dtype wdt;
};

/* The update of element i with the old scales; returns w, sets *m and *v. */
__device__ __forceinline__ float fp8_adam_elem(const Fp8AdamArgs &a, float gs, float dw, float dm, float dv, uint64_t i,
                                               float *m, float *v)
{
    float g = KM_MUL(dev_load(a.grad, a.gdt, i), gs);
    return km_adam_scaled(&a.h, dev_fp16_to_f(a.master[i]), dw, g, dev_fp8_decode(a.m[i], DT_E4M3), dm,
                          dev_fp16_to_f(a.v[i]), dv, m, v);
}

__device__ __forceinline__ float grad_factor(const Fp8AdamArgs &a)
{
    return a.gsi ? KM_MUL(a.grad_scale, *a.gsi) : a.grad_scale;
}

__device__ __forceinline__ float rec_scale(const float *rec) { return rec ? rec[REC_SCALE] : 1.0f; }

__global__ void k_fp8_adam_amax(Fp8AdamArgs a, DevSmall *sm)
{
    __shared__ float red[32];
    const float gs = grad_factor(a);
    const float dw = KM_DIV(1.0f, rec_scale(a.master_rec)), dm = KM_DIV(1.0f, rec_scale(a.m_rec)),
                dv = KM_DIV(1.0f, rec_scale(a.v_rec));
    float aw = 0.0f, am = 0.0f, av = 0.0f;
    GRID_STRIDE(i, a.n)
    {
        float m, v, w = fp8_adam_elem(a, gs, dw, dm, dv, i, &m, &v);
        aw = fmaxf(aw, fabsf(w));
        am = fmaxf(am, fabsf(m));
        av = fmaxf(av, fabsf(v));
    }
    aw = block_max(aw, red);
    am = block_max(am, red);
    av = block_max(av, red);
    if (threadIdx.x == 0) {
        atomic_max_nonneg(&sm->tmp[T_AW], aw);
        atomic_max_nonneg(&sm->tmp[T_AM], am);
        atomic_max_nonneg(&sm->tmp[T_AV], av);
    }
}

/* New scales from the amaxes; an unscaled state (no record) keeps scale 1. fmax_m: E4M3's maximum. */
__global__ void k_fp8_adam_scales(Fp8AdamArgs a, int margin, float fmax_m, DevSmall *sm)
{
    sm->tmp[T_SW] = a.master_rec ? km_scale_pow2(sm->tmp[T_AW], KM_FP16_MAX, margin, a.master_rec[REC_SCALE]) : 1.0f;
    sm->tmp[T_SM] = a.m_rec ? km_scale_pow2(sm->tmp[T_AM], fmax_m, margin, a.m_rec[REC_SCALE]) : 1.0f;
    sm->tmp[T_SV] = a.v_rec ? km_scale_pow2(sm->tmp[T_AV], KM_FP16_MAX, margin, a.v_rec[REC_SCALE]) : 1.0f;
}

__global__ void k_fp8_adam_store(Fp8AdamArgs a, const DevSmall *sm)
{
    const float gs = grad_factor(a);
    const float dw = KM_DIV(1.0f, rec_scale(a.master_rec)), dm = KM_DIV(1.0f, rec_scale(a.m_rec)),
                dv = KM_DIV(1.0f, rec_scale(a.v_rec));
    const float sw = sm->tmp[T_SW], smm = sm->tmp[T_SM], sv = sm->tmp[T_SV];
    GRID_STRIDE(i, a.n)
    {
        float m, v, w = fp8_adam_elem(a, gs, dw, dm, dv, i, &m, &v);
        a.m[i] = dev_fp8_encode(KM_MUL(m, smm), DT_E4M3);
        a.v[i] = dev_f_to_fp16(KM_MUL(v, sv));
        uint16_t wq = dev_f_to_fp16(KM_MUL(w, sw));
        a.master[i] = wq;
        /* the working copy is the value the master now holds */
        if (a.weight) dev_store(a.weight, a.wdt, i, KM_DIV(dev_fp16_to_f(wq), sw));
    }
}

__device__ __forceinline__ void rec_store(float *rec, float scale, float amax)
{
    if (!rec) return;
    rec[REC_SCALE] = scale;
    rec[REC_SCALE_INV] = KM_DIV(1.0f, scale);
    rec[REC_AMAX] = amax;
}

/* Publish the new records (after pass 2, which read the old scales). */
__global__ void k_fp8_adam_publish(Fp8AdamArgs a, const DevSmall *sm)
{
    rec_store(a.master_rec, sm->tmp[T_SW], sm->tmp[T_AW]);
    rec_store(a.m_rec, sm->tmp[T_SM], sm->tmp[T_AM]);
    rec_store(a.v_rec, sm->tmp[T_SV], sm->tmp[T_AV]);
}

/* ---- host side --------------------------------------------------------------------------- */

/* Bias corrections on the host, as the CPU reference computes them. */
static KmAdam km_of(const AdamHyper *h)
{
    KmAdam k;
    k.lr = h->lr;
    k.beta1 = h->beta1;
    k.beta2 = h->beta2;
    k.eps = h->eps;
    k.weight_decay = h->weight_decay;
    k.bc1 = 1.0f - powf(h->beta1, (float)h->step);
    k.bc2 = 1.0f - powf(h->beta2, (float)h->step);
    return k;
}

/* The moments' dtype: BF16 (DeepSeek-V3), else FP32 (DT_NONE reads as FP32). */
__host__ __device__ static inline Dtype moment_dt(const AdamWDesc *d)
{
    return d->moment_dtype == DT_BF16 ? DT_BF16 : DT_FP32;
}

static unsigned opt_blocks(CudaImpl *im, uint64_t n) { return cuda_blocks(n, 256, (unsigned)im->info.sm_count * 8u); }

Status cuda_adamw(Backend *bk, const AdamWDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    float *master = d->master;
    void *weight = d->weight;
    if (!master) { /* the FP32 working copy is the master */
        master = (float *)d->weight;
        weight = NULL;
    }
    if (!d->n) return ST_OK;
    CUDA_TIMED(BK_OPCAT_OPTIM,
               (k_adamw<<<opt_blocks(im, d->n), 256, 0, im->stream>>>(
                   d->n, km_of(&d->h), d->h.grad_scale, dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv : NULL, master,
                   d->m, d->v, moment_dt(d), d->grad, d->grad_dtype, weight, d->weight_dtype)));
done:
    return st;
}

/* ---- multi-tensor AdamW: the whole list in two launches -----------------------------------
 * Launch 1 (one block) lays the tensors end to end: starts[i] = Σ n of the tensors before i,
 * starts[count] = the total (each thread sums its run of entries, then a block scan). Launch 2
 * strides over the flat range in chunks of MT_CHUNK elements: a chunk's first tensor is found
 * by binary search over starts, and each thread walks forward through the tensors as its
 * elements pass their ends (a chunk may span many small tensors). Per element it is k_adamw's
 * update with the tensor's own weight decay, grad scale and dtypes, so each tensor's result
 * is bit-identical to adamw() on it (and to the CPU reference). */
enum { MT_THREADS = 1024, MT_CHUNK = 4096 };

__global__ void __launch_bounds__(MT_THREADS) k_adamw_starts(const AdamWDesc *list, uint32_t count, uint64_t *starts)
{
    __shared__ uint64_t part[MT_THREADS];
    const uint32_t per = (count + MT_THREADS - 1) / MT_THREADS, b = threadIdx.x * per;
    uint64_t mine = 0;
    for (uint32_t i = b; i < b + per && i < count; i++) mine += list[i].n;
    part[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned o = 1; o < MT_THREADS; o <<= 1) { /* inclusive scan (Hillis-Steele) */
        uint64_t add = threadIdx.x >= o ? part[threadIdx.x - o] : 0;
        __syncthreads();
        part[threadIdx.x] += add;
        __syncthreads();
    }
    uint64_t at = part[threadIdx.x] - mine; /* exclusive: the elements before this thread's run */
    for (uint32_t i = b; i < b + per && i < count; i++) {
        starts[i] = at;
        at += list[i].n;
    }
    if (threadIdx.x == MT_THREADS - 1) starts[count] = part[threadIdx.x];
}

/* One tensor's pointers and factors in registers while a thread walks through it. */
struct MtTensor {
    KmAdam h;
    float gs, *master;
    void *m, *v;
    const void *grad;
    void *weight;
    Dtype gdt, wdt, mdt;
};

__device__ __forceinline__ MtTensor mt_tensor(const AdamWDesc *d, KmAdam h0)
{
    MtTensor x;
    x.h = h0;
    x.h.weight_decay = d->h.weight_decay;
    const int fp8 = d->grad_dtype == DT_E4M3 || d->grad_dtype == DT_E5M2;
    x.gs = fp8 ? KM_MUL(d->h.grad_scale, *d->grad_scale_inv) : d->h.grad_scale;
    x.master = d->master ? d->master : (float *)d->weight; /* no master: the FP32 working copy is it */
    x.weight = d->master ? d->weight : NULL;
    x.m = d->m, x.v = d->v, x.mdt = moment_dt(d);
    x.grad = d->grad, x.gdt = d->grad_dtype, x.wdt = d->weight_dtype;
    return x;
}

__global__ void k_adamw_multi(const AdamWDesc *list, uint32_t count, const uint64_t *starts, KmAdam h0)
{
    __shared__ uint32_t first;
    const uint64_t total = starts[count];
    for (uint64_t c0 = (uint64_t)blockIdx.x * MT_CHUNK; c0 < total; c0 += (uint64_t)gridDim.x * MT_CHUNK) {
        if (threadIdx.x == 0) { /* the last tensor starting at or before c0 */
            uint32_t lo = 0, hi = count - 1;
            while (lo < hi) {
                uint32_t mid = (lo + hi + 1) / 2;
                if (starts[mid] <= c0)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            first = lo;
        }
        __syncthreads();
        uint32_t t = first;
        __syncthreads(); /* everyone has read `first` before thread 0 writes the next chunk's */
        uint64_t lo = starts[t], hi = starts[t + 1];
        MtTensor x = mt_tensor(&list[t], h0);
        const uint64_t end = c0 + MT_CHUNK < total ? c0 + MT_CHUNK : total;
        for (uint64_t i = c0 + threadIdx.x; i < end; i += blockDim.x) {
            if (i >= hi) { /* past this tensor (and any empty ones after it) */
                do lo = hi, hi = starts[++t + 1];
                while (i >= hi);
                x = mt_tensor(&list[t], h0);
            }
            const uint64_t j = i - lo;
            float g = KM_MUL(dev_load(x.grad, x.gdt, j), x.gs);
            float mm = dev_load(x.m, x.mdt, j), vv = dev_load(x.v, x.mdt, j);
            float w = km_adam(&x.h, x.master[j], g, &mm, &vv);
            dev_store(x.m, x.mdt, j, mm);
            dev_store(x.v, x.mdt, j, vv);
            x.master[j] = w;
            if (x.weight) dev_store(x.weight, x.wdt, j, w);
        }
    }
}

Status cuda_adamw_multi(Backend *bk, const AdamWMultiDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    uint64_t total = 0;
    void *scratch = NULL;
    if (d->count > (1u << 20))
        return err_set(e, ST_UNAVAILABLE, "adamw_multi: %u tensors exceed the cuda backend's 1048576 per list",
                       d->count);
    for (uint32_t i = 0; i < d->count; i++) total += d->list[i].n;
    if (!total) return ST_OK;
    /* scratch: the starts, then (list_dev NULL) the backend's copy of the list, 256-byte aligned */
    const size_t starts_bytes = (((size_t)d->count + 1) * sizeof(uint64_t) + 255) & ~(size_t)255;
    const size_t list_bytes = d->list_dev ? 0 : (size_t)d->count * sizeof(AdamWDesc);
    const AdamWDesc *list = d->list_dev;
    ST_TRY(cuda_scratch(im, starts_bytes + list_bytes, &scratch, e));
    if (!list) list = (const AdamWDesc *)((char *)scratch + starts_bytes);
    ST_TRY(cuda_op_begin(im, BK_OPCAT_OPTIM, e));
    if (!d->list_dev) /* pageable: staged before the call returns, so the caller may reuse d->list */
        CU_TRY(cudaMemcpyAsync((void *)list, d->list, list_bytes, cudaMemcpyHostToDevice, im->stream), e);
    k_adamw_starts<<<1, MT_THREADS, 0, im->stream>>>(list, d->count, (uint64_t *)scratch);
    CU_LAUNCHED(e);
    k_adamw_multi<<<cuda_blocks(total, MT_CHUNK, (unsigned)im->info.sm_count * 8u), 256, 0, im->stream>>>(
        list, d->count, (const uint64_t *)scratch, km_of(&d->list[0].h));
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

Status cuda_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e)
{
    if (d->amax_out || d->amax_in) /* sharded FP8-LM states: several ranks run on the cpu backend only */
        return err_set(e, ST_UNAVAILABLE, "fp8_adam: the passes apart (amax agreed over ranks) are cpu-only");
    if (d->moment_dtype == DT_FP32) /* MS-AMP O1 (msamp-o1): no kernel reads FP32 moments beside an FP16 master */
        return err_set(e, ST_UNAVAILABLE,
                       "fp8_adam: FP32 moments beside a scaled FP16 weight (recipe msamp-o1) run on the cpu backend "
                       "only");
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!d->n) return ST_OK;
    Fp8AdamArgs a;
    a.n = d->n;
    a.h = km_of(&d->h);
    a.grad_scale = d->h.grad_scale;
    a.gsi = dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv : NULL;
    a.master = (uint16_t *)d->master;
    a.master_rec = d->master_rec;
    a.m = (uint8_t *)d->m;
    a.m_rec = d->m_rec;
    a.v = (uint16_t *)d->v;
    a.v_rec = d->v_rec;
    a.grad = d->grad;
    a.gdt = d->grad_dtype;
    a.weight = d->weight;
    a.wdt = d->weight_dtype;
    const unsigned blocks = opt_blocks(im, d->n);
    ST_TRY(cuda_op_begin(im, BK_OPCAT_OPTIM, e));
    CU_TRY(cudaMemsetAsync(&im->small->tmp[T_AW], 0, 3 * sizeof(float), im->stream), e);
    k_fp8_adam_amax<<<blocks, 256, 0, im->stream>>>(a, im->small);
    CU_LAUNCHED(e);
    k_fp8_adam_scales<<<1, 1, 0, im->stream>>>(a, d->margin, fp8_max(DT_E4M3), im->small);
    CU_LAUNCHED(e);
    k_fp8_adam_store<<<blocks, 256, 0, im->stream>>>(a, im->small);
    CU_LAUNCHED(e);
    k_fp8_adam_publish<<<1, 1, 0, im->stream>>>(a, im->small);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}
