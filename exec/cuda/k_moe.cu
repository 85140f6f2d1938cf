/* exec/cuda/k_moe.cu — the mixture-of-experts operations (exec/backend/backend.h:
 * router_topk, router_bwd, router_aux_loss, moe_permute, moe_unpermute,
 * moe_unpermute_bwd, grouped_gemm, grouped_gemm_wgrad). The executor does not
 * run MoE models yet
 * (fp8plan run refuses them); the CPU backend holds the reference of every
 * one, and these say so if called. */
#include "exec/cuda/cuda_impl.h"

static Status not_yet(const char *op, Err *e)
{
    return err_set(e, ST_UNAVAILABLE,
                   "%s: the cuda backend has no mixture-of-experts kernels yet (the cpu backend has the reference)",
                   op);
}

Status cuda_router_topk(Backend *bk, const RouterDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("router_topk", e);
}

Status cuda_router_bwd(Backend *bk, const RouterBwdDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("router_bwd", e);
}

Status cuda_router_aux_loss(Backend *bk, const RouterAuxDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("router_aux_loss", e);
}

Status cuda_moe_permute(Backend *bk, const MoePermuteDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("moe_permute", e);
}

Status cuda_moe_unpermute(Backend *bk, const MoeUnpermuteDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("moe_unpermute", e);
}

Status cuda_moe_unpermute_bwd(Backend *bk, const MoeUnpermuteBwdDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("moe_unpermute_bwd", e);
}

Status cuda_grouped_gemm(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("grouped_gemm", e);
}

Status cuda_grouped_gemm_wgrad(Backend *bk, const GroupedWgradDesc *d, Err *e)
{
    (void)bk, (void)d;
    return not_yet("grouped_gemm_wgrad", e);
}
