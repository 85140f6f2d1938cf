/* exec/backend/backend_check_optim.c — the shared descriptor checks of the optimizer operations
 * (exec/backend/backend.h: adamw, adamw_multi, fp8_adam; the descriptors are exec/backend/backend_desc.h's), as
 * exec/backend/backend_check.c does for the others: ST_USAGE naming the operation and the field. */
#include <math.h>
#include <stdio.h>

#include "exec/backend/backend.h"
#include "exec/backend/backend_check_internal.h"

/* step ≥ 1, betas in [0, 1), finite hyper-parameters. */
static Status hyper_check(const AdamHyper *h, const char *op, Err *e)
{
    if (!h->step) return err_set(e, ST_USAGE, "%s: step is 1-based (got 0)", op);
    if (!(h->beta1 >= 0.0f && h->beta1 < 1.0f) || !(h->beta2 >= 0.0f && h->beta2 < 1.0f))
        return err_set(e, ST_USAGE, "%s: betas must be in [0, 1)", op);
    if (!isfinite(h->lr) || !isfinite(h->eps) || !isfinite(h->weight_decay) || !isfinite(h->grad_scale))
        return err_set(e, ST_USAGE, "%s: non-finite hyper-parameter", op);
    return ST_OK;
}

/* A gradient that exists, is FP32, BF16 or FP8, and carries a scale_inv when FP8;
 * a working weight, when there is one, in a float dtype. */
static Status tensors_check(const void *grad, Dtype dt, const float *scale_inv, const void *weight, Dtype wdt,
                            const char *op, Err *e)
{
    if (!grad) return err_set(e, ST_USAGE, "%s: no gradient", op);
    if (dt != DT_FP32 && dt != DT_BF16 && !dtype_is_fp8(dt))
        return err_set(e, ST_USAGE, "%s: gradient dtype %s is not fp32, bf16, e4m3 or e5m2", op, dtype_name(dt));
    if (dtype_is_fp8(dt) && !scale_inv) return err_set(e, ST_USAGE, "%s: FP8 gradient without scale_inv", op);
    if (weight && !is_float(wdt)) return err_set(e, ST_USAGE, "%s: working weight dtype %s", op, dtype_name(wdt));
    return ST_OK;
}

/* A descriptor's hyper-parameters (h NULL: there is no descriptor). */
static Status optim_check(const AdamHyper *h, const char *op, Err *e)
{
    return h ? hyper_check(h, op, e) : err_set(e, ST_USAGE, "%s: no descriptor", op);
}

Status backend_check_adamw(Backend *bk, const AdamWDesc *d, Err *e)
{
    (void)bk;
    Status st = optim_check(d ? &d->h : NULL, "adamw", e);
    if (!st) st = tensors_check(d->grad, d->grad_dtype, d->grad_scale_inv, d->weight, d->weight_dtype, "adamw", e);
    if (st) return st;
    if (!d->m || !d->v) return err_set(e, ST_USAGE, "adamw: missing state");
    if (d->moment_dtype != DT_NONE && d->moment_dtype != DT_FP32 && d->moment_dtype != DT_BF16)
        return err_set(e, ST_USAGE, "adamw: moments in %s (fp32 or bf16)", dtype_name(d->moment_dtype));
    if (!d->master && (!d->weight || d->weight_dtype != DT_FP32))
        return err_set(e, ST_USAGE, "adamw: without a master the working weight must be fp32");
    return ST_OK;
}

Status backend_check_adamw_multi(Backend *bk, const AdamWMultiDesc *d, Err *e)
{
    if (!d) return err_set(e, ST_USAGE, "adamw_multi: no descriptor");
    if (!d->count) return ST_OK;
    if (!d->list) return err_set(e, ST_USAGE, "adamw_multi: missing tensor list");
    const AdamHyper *h0 = &d->list[0].h;
    for (uint32_t i = 0; i < d->count; i++) {
        const AdamWDesc *t = &d->list[i];
        Status st = backend_check_adamw(bk, t, e);
        if (st) {
            if (e) {
                char msg[sizeof e->msg];
                snprintf(msg, sizeof msg, "%s", e->msg);
                err_set(e, st, "adamw_multi: tensor %u: %s", i, msg);
            }
            return st;
        }
        if (t->h.lr != h0->lr || t->h.beta1 != h0->beta1 || t->h.beta2 != h0->beta2 || t->h.eps != h0->eps ||
            t->h.step != h0->step)
            return err_set(e, ST_USAGE, "adamw_multi: tensor %u: lr, betas, eps and step must equal tensor 0's", i);
    }
    return ST_OK;
}

Status backend_check_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e)
{
    (void)bk;
    Status st = optim_check(d ? &d->h : NULL, "fp8_adam", e);
    if (!st) st = tensors_check(d->grad, d->grad_dtype, d->grad_scale_inv, d->weight, d->weight_dtype, "fp8_adam", e);
    if (!st && d->amax_out && d->amax_in) st = err_set(e, ST_USAGE, "fp8_adam: amax_out and amax_in together");
    if (!st && d->moment_dtype != DT_NONE && d->moment_dtype != DT_FP32)
        st = err_set(e, ST_USAGE, "fp8_adam: moments in %s (E4M3 m and FP16 v, or FP32 both)",
                     dtype_name(d->moment_dtype));
    if (!st && d->moment_dtype == DT_FP32 && (d->m_rec || d->v_rec))
        st = err_set(e, ST_USAGE, "fp8_adam: FP32 moments carry no scaling record");
    if (st) return st;
    return need(d->master && d->m && d->v, e, "fp8_adam", "missing state");
}
