/* exec/backend.c — what every backend shares: GEMM descriptor validation
 * (including Hopper's TN-only FP8 rule), FP8 format maxima, and creating a
 * backend by name. */
#include "exec/backend.h"

#include <math.h>
#include <string.h>

#ifdef FP8PLAN_HAVE_CUDA /* the Makefile defines it when it builds exec/cuda/ with nvcc */
#include "exec/cuda_lib.h"
#endif

float backend_fp8_max(Dtype fmt)
{
    switch (fmt) {
    case DT_E4M3: return 448.0f;
    case DT_E5M2: return 57344.0f;
    default: return 0.0f;
    }
}

static int is_float_dtype(Dtype t) { return t == DT_FP32 || t == DT_FP16 || t == DT_BF16; }

static Status check_operand(const GemmOperand *o, const char *name, uint64_t rows, uint64_t k, Err *e)
{
    if (!o->ptr) return err_set(e, ST_USAGE, "gemm: operand %s has no data pointer", name);
    if (!is_float_dtype(o->dtype) && !dtype_is_fp8(o->dtype))
        return err_set(e, ST_USAGE, "gemm: operand %s has dtype %s (expected fp32, fp16, bf16, e4m3 or e5m2)", name,
                       dtype_name(o->dtype));
    if (o->layout != GEMM_K_INNER && o->layout != GEMM_K_OUTER)
        return err_set(e, ST_USAGE, "gemm: operand %s has an unknown layout %d", name, (int)o->layout);
    uint64_t packed = o->layout == GEMM_K_INNER ? k : rows;
    if (o->ld && o->ld < packed)
        return err_set(e, ST_USAGE, "gemm: operand %s leading dimension %llu is below its row length %llu", name,
                       (unsigned long long)o->ld, (unsigned long long)packed);
    if (dtype_is_fp8(o->dtype)) {
        if (o->layout != GEMM_K_INNER)
            return err_set(e, ST_USAGE,
                           "gemm: FP8 operand %s is stored K-outer; Hopper FP8 GEMMs are TN only, so pass the "
                           "transposed FP8 copy (K contiguous)",
                           name);
        if (!o->scale_inv) return err_set(e, ST_USAGE, "gemm: FP8 operand %s has no scale_inv", name);
        if (o->scale_gran != GRAN_TENSOR && o->scale_gran != GRAN_1X128 && o->scale_gran != GRAN_128X128)
            return err_set(e, ST_USAGE, "gemm: operand %s scale granularity %s is not tensor, 1x128 or 128x128", name,
                           gran_name(o->scale_gran));
    } else if (o->scale_inv) {
        return err_set(e, ST_USAGE, "gemm: operand %s is %s but has a scale_inv (only FP8 operands are scaled)", name,
                       dtype_name(o->dtype));
    }
    return ST_OK;
}

Status gemm_desc_check(const GemmDesc *g, Err *e)
{
    if (!g) return err_set(e, ST_USAGE, "gemm: no descriptor");
    if (!g->m || !g->n || !g->k)
        return err_set(e, ST_USAGE, "gemm: empty shape m=%llu n=%llu k=%llu", (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    Status st = check_operand(&g->a, "A", g->m, g->k, e);
    if (st) return st;
    if ((st = check_operand(&g->b, "B", g->n, g->k, e))) return st;
    if (dtype_is_fp8(g->a.dtype) != dtype_is_fp8(g->b.dtype))
        return err_set(e, ST_USAGE, "gemm: mixing FP8 and %s operands (A %s, B %s) is not supported",
                       dtype_is_fp8(g->a.dtype) ? dtype_name(g->b.dtype) : dtype_name(g->a.dtype),
                       dtype_name(g->a.dtype), dtype_name(g->b.dtype));
    if (g->a.dtype == DT_E5M2 && g->b.dtype == DT_E5M2)
        return err_set(e, ST_USAGE, "gemm: E5M2 x E5M2 is not supported by cuBLASLt (use E4M3 for one operand)");
    if (!dtype_is_fp8(g->a.dtype) && g->a.dtype != g->b.dtype)
        return err_set(e, ST_USAGE, "gemm: operands A %s and B %s must have the same dtype", dtype_name(g->a.dtype),
                       dtype_name(g->b.dtype));
    if (g->a.scale_inv && g->a.scale_gran == GRAN_128X128 && g->b.scale_gran == GRAN_128X128)
        return err_set(e, ST_USAGE, "gemm: 128x128 x 128x128 block scaling is not supported (one side must be 1x128)");
    if (!g->d.ptr) return err_set(e, ST_USAGE, "gemm: output D has no data pointer");
    if (!is_float_dtype(g->d.dtype) && !dtype_is_fp8(g->d.dtype))
        return err_set(e, ST_USAGE, "gemm: output D has dtype %s", dtype_name(g->d.dtype));
    if (g->d.ld && g->d.ld < g->n)
        return err_set(e, ST_USAGE, "gemm: output leading dimension %llu is below n=%llu", (unsigned long long)g->d.ld,
                       (unsigned long long)g->n);
    if (dtype_is_fp8(g->d.dtype)) {
        if (!g->d.scale) return err_set(e, ST_USAGE, "gemm: FP8 output D has no scale");
        /* cuBLASLt's FP8 table: E4M3 x E4M3 writes E4M3, BF16, FP16 or FP32, never E5M2 (only a
         * product with an E5M2 operand may) */
        if (g->d.dtype == DT_E5M2 && g->a.dtype == DT_E4M3 && g->b.dtype == DT_E4M3)
            return err_set(e, ST_USAGE,
                           "gemm: E4M3 x E4M3 -> E5M2 output is not supported by cuBLASLt (write E4M3, BF16 or "
                           "FP32, or use an E5M2 operand)");
        if (g->accum == GEMM_ACCUMULATE)
            return err_set(e, ST_USAGE, "gemm: accumulation into an FP8 output is not supported");
    } else if (g->d.scale) {
        return err_set(e, ST_USAGE, "gemm: output D is %s but has a scale (only FP8 outputs are scaled)",
                       dtype_name(g->d.dtype));
    }
    if (g->accum != GEMM_OVERWRITE && g->accum != GEMM_ACCUMULATE)
        return err_set(e, ST_USAGE, "gemm: unknown accumulate mode %d", (int)g->accum);
    if (g->bias && !is_float_dtype(g->bias_dtype))
        return err_set(e, ST_USAGE, "gemm: bias dtype %s (expected fp32, fp16 or bf16)", dtype_name(g->bias_dtype));
    return ST_OK;
}

Status backend_create(const char *name, Backend **out, Err *e)
{
    *out = NULL;
    if (!name || !strcmp(name, "cpu")) return backend_cpu_create(out, e);
    if (!strcmp(name, "cuda")) {
#ifdef FP8PLAN_HAVE_CUDA
        return cuda_lib_backend_create(out, e);
#else
        return err_set(e, ST_UNAVAILABLE,
                       "--backend cuda: fp8plan was built without CUDA (no nvcc at build time); rebuild with "
                       "CUDA_HOME pointing at a CUDA toolkit, or use --backend cpu");
#endif
    }
    return err_set(e, ST_USAGE, "--backend: unknown backend '%s' (known: cpu, cuda)", name);
}

Status comm_create(const char *name, Backend *bk, Comm **out, Err *e)
{
    *out = NULL;
    if (!name || !strcmp(name, "single")) return comm_single_create(out, e);
    if (!strcmp(name, "nccl")) {
#ifdef FP8PLAN_HAVE_CUDA
        if (!bk || strcmp(bk->name, "cuda"))
            return err_set(e, ST_UNAVAILABLE, "nccl: needs the cuda backend (this run uses %s)",
                           bk ? bk->name : "none");
        return cuda_lib_comm_create(bk, 0, 1, out, e);
#else
        (void)bk;
        return err_set(e, ST_UNAVAILABLE, "nccl: fp8plan was built without the CUDA backend");
#endif
    }
    return err_set(e, ST_USAGE, "unknown communicator '%s' (known: single, nccl)", name);
}

Status adam_hyper_check(const AdamHyper *h, const char *op, Err *e)
{
    if (!h->step) return err_set(e, ST_USAGE, "%s: step is 1-based (got 0)", op);
    if (!(h->beta1 >= 0.0f && h->beta1 < 1.0f) || !(h->beta2 >= 0.0f && h->beta2 < 1.0f))
        return err_set(e, ST_USAGE, "%s: betas must be in [0, 1)", op);
    if (!isfinite(h->lr) || !isfinite(h->eps) || !isfinite(h->weight_decay) || !isfinite(h->grad_scale))
        return err_set(e, ST_USAGE, "%s: non-finite hyper-parameter", op);
    return ST_OK;
}

Status adam_grad_check(const void *grad, Dtype dt, const float *scale_inv, const char *op, Err *e)
{
    if (!grad) return err_set(e, ST_USAGE, "%s: no gradient", op);
    if (dt != DT_FP32 && dt != DT_BF16 && !dtype_is_fp8(dt))
        return err_set(e, ST_USAGE, "%s: gradient dtype %s is not fp32, bf16, e4m3 or e5m2", op, dtype_name(dt));
    if (dtype_is_fp8(dt) && !scale_inv) return err_set(e, ST_USAGE, "%s: FP8 gradient without scale_inv", op);
    return ST_OK;
}
