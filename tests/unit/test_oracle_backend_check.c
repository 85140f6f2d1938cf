/* tests/unit/test_oracle_backend_check.c — the shared check every backend
 * operation passes first (exec/backend_check.c, wired by BACKEND_OPS): an
 * operation called without its descriptor is refused with ST_USAGE and a
 * message naming the operation, before any backend code reads it — never a
 * crash. Through the CPU backend's table, so the wiring is checked too. */
#include <stdio.h>
#include <string.h>

#include "exec/backend.h"
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
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_no_descriptor);
    return test_summary();
}
