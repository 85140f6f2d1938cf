/* tests/unit/test_oracle_backend_check.c — the shared check every backend
 * operation passes first (exec/backend/backend_check.c, wired by BACKEND_OPS): an
 * operation called without its descriptor is refused with ST_USAGE and a
 * message naming the operation, before any backend code reads it — never a
 * crash. Through the CPU backend's table, so the wiring is checked too. */
#include <stdio.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "test.h"

static void expect_refused(Status st, const Err *e, const char *op)
{
    char want[64];
    snprintf(want, sizeof want, "%s: no descriptor", op);
    CHECKF(st == ST_USAGE, "%s without a descriptor: status %d, expected ST_USAGE", op, (int)st);
    CHECKF(strstr(e->msg, want) != NULL, "%s without a descriptor: message '%s'", op, e->msg);
}

static void test_no_descriptor(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    /* one per operation that takes a descriptor, in BACKEND_OPS order */
    e = (Err){0}, expect_refused(bk->gemm(bk, NULL, &e), &e, "gemm");
    e = (Err){0}, expect_refused(bk->cast_transpose(bk, NULL, &e), &e, "cast_transpose");
    e = (Err){0}, expect_refused(bk->norm_fwd(bk, NULL, &e), &e, "norm_fwd");
    e = (Err){0}, expect_refused(bk->norm_bwd(bk, NULL, &e), &e, "norm_bwd");
    e = (Err){0}, expect_refused(bk->attention_fwd(bk, NULL, &e), &e, "attention_fwd");
    e = (Err){0}, expect_refused(bk->attention_bwd(bk, NULL, &e), &e, "attention_bwd");
    e = (Err){0}, expect_refused(bk->rope(bk, NULL, &e), &e, "rope");
    e = (Err){0}, expect_refused(bk->act_fwd(bk, NULL, &e), &e, "act_fwd");
    e = (Err){0}, expect_refused(bk->act_bwd(bk, NULL, &e), &e, "act_bwd");
    e = (Err){0}, expect_refused(bk->adamw(bk, NULL, &e), &e, "adamw");
    e = (Err){0}, expect_refused(bk->fp8_adam(bk, NULL, &e), &e, "fp8_adam");
    e = (Err){0}, expect_refused(bk->router_topk(bk, NULL, &e), &e, "router_topk");
    e = (Err){0}, expect_refused(bk->router_bwd(bk, NULL, &e), &e, "router_bwd");
    e = (Err){0}, expect_refused(bk->router_aux_loss(bk, NULL, &e), &e, "router_aux_loss");
    e = (Err){0}, expect_refused(bk->moe_permute(bk, NULL, &e), &e, "moe_permute");
    e = (Err){0}, expect_refused(bk->moe_unpermute(bk, NULL, &e), &e, "moe_unpermute");
    e = (Err){0}, expect_refused(bk->moe_unpermute_bwd(bk, NULL, &e), &e, "moe_unpermute_bwd");
    e = (Err){0}, expect_refused(bk->grouped_gemm(bk, NULL, &e), &e, "grouped_gemm");
    e = (Err){0}, expect_refused(bk->grouped_gemm_wgrad(bk, NULL, &e), &e, "grouped_gemm_wgrad");
    bk->destroy(bk);
}

/* AdamW without a master updates the working copy itself, so that copy must be FP32 (backend_desc.h): a BF16
 * one is refused, an FP32 one accepted (lr 0.125, betas 0.5 / 0.75, eps 1, step 1, g 1: w 2 -> 1.9375). */
static void test_adamw_without_master(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    float g = 1.0f, m = 0.0f, v = 0.0f, w = 2.0f;
    uint16_t wb = 0x4000; /* BF16 2 */
    AdamWDesc d = {.n = 1,
                   .h = {.lr = 0.125f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1.0f, .step = 1, .grad_scale = 1.0f},
                   .m = &m,
                   .v = &v,
                   .grad = &g,
                   .grad_dtype = DT_FP32,
                   .weight = &wb,
                   .weight_dtype = DT_BF16};
    CHECK_EQ_INT(bk->adamw(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "adamw: without a master the working weight must be fp32");
    CHECK(wb == 0x4000 && m == 0.0f && v == 0.0f); /* nothing written */
    d.weight = NULL;
    CHECK_EQ_INT(bk->adamw(bk, &d, &e), ST_USAGE);
    /* m = 0.5, v = 0.25; m^ = 1, v^ = 1; w = 2 - 0.125 x 1 / (1 + 1) = 1.9375 */
    d.weight = &w, d.weight_dtype = DT_FP32;
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(bk->sync(bk, &e) == ST_OK);
    CHECK(w == 1.9375f && m == 0.5f && v == 0.25f);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_no_descriptor);
    RUN(test_adamw_without_master);
    return test_summary();
}
