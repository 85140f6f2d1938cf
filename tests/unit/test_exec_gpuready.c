/* tests/unit/test_exec_gpuready.c — lifetime and ordering rules of the CUDA
 * path that the CPU can check: the GEMM workspace slice does not outlive the
 * arena that holds it. */
#include <string.h>

#include "exec/arena.h"
#include "test.h"

/* A workspace slice carved from an arena is cleared when the arena goes; a
 * workspace that is not in it (another owner's) is left alone. */
static void test_workspace_cleared_with_its_arena(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    ArenaSpecs specs = {0};
    float *x = NULL;
    arena_add(&specs, TERM_TRANSIENT, DT_FP32, 1000, &x, "x", -1);
    arena_add_(&specs, TERM_GEMM_WORKSPACE, DT_NONE, 1, 4096, ADST_VOID, (void *)&bk->gemm_workspace, "ws", -1);
    Arena a;
    CHECK(!arena_carve(&a, bk, &specs, NULL, &e));
    const char *base = a.base, *ws = bk->gemm_workspace;
    CHECK(ws && ws >= base && ws < base + a.bytes);
    arena_release(&a, bk);
    CHECK(bk->gemm_workspace == NULL);
    CHECK(a.base == NULL);
    /* a second arena without a workspace: a foreign pointer survives its release */
    static char elsewhere[256];
    bk->gemm_workspace = elsewhere;
    ArenaSpecs s2 = {0};
    arena_add(&s2, TERM_TRANSIENT, DT_FP32, 10, &x, "x", -1);
    CHECK(!arena_carve(&a, bk, &s2, NULL, &e));
    arena_release(&a, bk);
    CHECK(bk->gemm_workspace == elsewhere);
    arena_specs_free(&specs);
    arena_specs_free(&s2);
    bk->gemm_workspace = NULL;
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_workspace_cleared_with_its_arena);
    return test_summary();
}
