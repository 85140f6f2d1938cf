/* tests/unit/test_exec_gpuready.c — lifetime and ordering rules of the CUDA
 * path that the CPU can check: the GEMM workspace slice does not outlive the
 * arena that holds it; the dtype an FP8 collective travels in for the NCCL
 * the process loaded. */
#include <string.h>

#include "exec/model/arena.h"
#include "exec/comm/comm_wire.h"
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
    arena_add(&specs, MT_TRANSIENT, DT_FP32, 1000, &x, "x", -1);
    arena_add_(&specs, MT_WORKSPACE, DT_NONE, 1, 4096, ADST_VOID, (void *)&bk->gemm_workspace, "ws", -1);
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
    arena_add(&s2, MT_TRANSIENT, DT_FP32, 10, &x, "x", -1);
    CHECK(!arena_carve(&a, bk, &s2, NULL, &e));
    arena_release(&a, bk);
    CHECK(bk->gemm_workspace == elsewhere);
    arena_specs_free(&specs);
    arena_specs_free(&s2);
    bk->gemm_workspace = NULL;
    bk->destroy(bk);
}

/* By hand: NCCL 2.24.0 is code 22400 (2·10000 + 24·100 + 0); 2.23.4 is 22304,
 * 2.27.7 22707. FP8
 * travels natively only when the loaded library, the build's headers and (for
 * a reduction) an sm_90 GPU all allow it; otherwise as BF16. */
static void test_fp8_wire_dtype(void)
{
    CHECK_EQ_INT(comm_nccl_code(2, 24, 0), 22400);
    CHECK_EQ_INT(comm_nccl_code(2, 23, 4), 22304);
    CHECK_EQ_INT(comm_nccl_code(2, 27, 7), 22707);
    const int new_ = 22707, old = 22304, h200 = 9, l4 = 8;
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, new_, new_, h200), DT_E4M3);
    CHECK_EQ_INT(comm_wire_dtype(DT_E5M2, 0, new_, new_, h200), DT_E5M2);
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, old, new_, h200), DT_BF16);    /* an older library loaded */
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 0, new_, old, h200), DT_BF16);    /* built with older headers */
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, 22400, 22400, h200), DT_E4M3); /* exactly 2.24.0 */
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, 22399, 22400, h200), DT_BF16);
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, new_, new_, l4), DT_BF16); /* FP8 reductions need sm_90 */
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 0, new_, new_, l4), DT_E4M3); /* a gather does not reduce */
    CHECK_EQ_INT(comm_wire_dtype(DT_E4M3, 1, 0, new_, h200), DT_BF16);  /* version unknown */
    const Dtype keep[3] = {DT_FP32, DT_BF16, DT_FP16};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(comm_wire_dtype(keep[i], 1, 0, 0, 0), keep[i]);
}

int main(void)
{
    RUN(test_workspace_cleared_with_its_arena);
    RUN(test_fp8_wire_dtype);
    return test_summary();
}
