/* tests/unit/test_exec_fp8lm_shard.c — FP8-LM's Adam with its two passes taken apart (Fp8AdamDesc
 * amax_out / amax_in), as the distributed optimizer runs it on sharded states: each rank's part
 * measured alone, the amaxes MAX-ed over the ranks, each part stored with the agreed scales — the
 * codes and records the whole tensor gets in one call. By hand, from test_oracle_optim.c's step 1
 * (lr 0.125, betas 0.5 / 0.75, eps 1, wd 0.5; stored master 2, -4 at scale 1, zero moments,
 * FP32 gradients 1, -1):
 *   new values: w 1.8125, -3.6875; m 0.5, -0.5; v 0.25, 0.25.
 *   part A = element 0: amaxes {1.8125, 0.5, 0.25}; part B = element 1: {3.6875, 0.5, 0.25};
 *   MAX over the parts {3.6875, 0.5, 0.25} = the whole tensor's.
 *   master scale 2^floor(log2(65504 / 3.6875 = 17763.5)) = 2^14: 1.8125 x 16384 = 29696 -> FP16
 *   0x7740, -3.6875 x 16384 = -60416 -> 0xFB60; m scale 2^9: +-256 -> E4M3 0x78 / 0xF8; v scale
 *   2^17: 2^15 -> FP16 0x7800. Records {16384, 2^-14, 3.6875}, {512, 2^-9, 0.5}, {131072, 2^-17,
 *   0.25} on both parts.
 *   Part A alone (its local amax 1.8125, the mutant this test is for): 65504 / 1.8125 = 36140.7 ->
 *   2^15, 1.8125 x 32768 = 59392 -> 0x7B40: another code. */
#include <string.h>

#include "exec/backend.h"
#include "test.h"

/* Part `i` (one element) of the step-1 tensor, in a desc over host memory (the cpu backend's). */
typedef struct {
    uint16_t master, v;
    uint8_t m;
    float g, rec[3][3];
} Part;

static Fp8AdamDesc desc(Part *p)
{
    AdamHyper h = {.lr = 0.125f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1.0f, .weight_decay = 0.5f};
    h.step = 1, h.grad_scale = 1.0f;
    return (Fp8AdamDesc){.n = 1,
                         .h = h,
                         .master = &p->master,
                         .master_rec = p->rec[0],
                         .m = &p->m,
                         .m_rec = p->rec[1],
                         .v = &p->v,
                         .v_rec = p->rec[2],
                         .grad = &p->g,
                         .grad_dtype = DT_FP32};
}

static void test_passes_apart(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    Part part[2] = {{.master = 0x4000, .g = 1.0f}, {.master = 0xC400, .g = -1.0f}}; /* FP16 2, -4 */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) part[i].rec[k][0] = part[i].rec[k][1] = 1.0f, part[i].rec[k][2] = 0.0f;
    float amax[2][3], agreed[3];
    for (int i = 0; i < 2; i++) { /* first pass: the amaxes only, nothing stored */
        Fp8AdamDesc d = desc(&part[i]);
        d.amax_out = amax[i];
        CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "%s", e.msg);
    }
    CHECK(amax[0][0] == 1.8125f && amax[0][1] == 0.5f && amax[0][2] == 0.25f);
    CHECK(amax[1][0] == 3.6875f && amax[1][1] == 0.5f && amax[1][2] == 0.25f);
    CHECK_EQ_U64(part[0].master, 0x4000);
    CHECK(part[0].rec[0][0] == 1.0f && part[1].rec[1][2] == 0.0f);
    for (int k = 0; k < 3; k++) agreed[k] = amax[0][k] > amax[1][k] ? amax[0][k] : amax[1][k];
    for (int i = 0; i < 2; i++) { /* second pass with the agreed amaxes */
        Fp8AdamDesc d = desc(&part[i]);
        d.amax_in = agreed;
        CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "%s", e.msg);
    }
    CHECK_EQ_U64(part[0].master, 0x7740);
    CHECK_EQ_U64(part[1].master, 0xFB60);
    CHECK_EQ_U64(part[0].m, 0x78);
    CHECK_EQ_U64(part[1].m, 0xF8);
    CHECK_EQ_U64(part[0].v, 0x7800);
    CHECK_EQ_U64(part[1].v, 0x7800);
    for (int i = 0; i < 2; i++) {
        CHECK(part[i].rec[0][0] == 16384.0f && part[i].rec[0][1] == 0x1p-14f && part[i].rec[0][2] == 3.6875f);
        CHECK(part[i].rec[1][0] == 512.0f && part[i].rec[1][1] == 0x1p-9f && part[i].rec[1][2] == 0.5f);
        CHECK(part[i].rec[2][0] == 131072.0f && part[i].rec[2][1] == 0x1p-17f && part[i].rec[2][2] == 0.25f);
    }
    /* an empty part (a rank owning none of the tensor) still takes the agreed records */
    Part none = {0};
    for (int k = 0; k < 3; k++) none.rec[k][0] = none.rec[k][1] = 1.0f;
    Fp8AdamDesc d = desc(&none);
    d.n = 0, d.amax_in = agreed;
    CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(none.rec[0][0] == 16384.0f && none.rec[1][0] == 512.0f && none.rec[2][0] == 131072.0f);
    CHECK_EQ_U64(none.master, 0);
    /* part A with its own amax only: another scale, another code */
    Part a = {.master = 0x4000, .g = 1.0f};
    for (int k = 0; k < 3; k++) a.rec[k][0] = a.rec[k][1] = 1.0f;
    d = desc(&a);
    CHECKF(bk->fp8_adam(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(a.master, 0x7B40);
    /* both at once is a malformed call */
    d = desc(&a);
    d.amax_out = amax[0], d.amax_in = agreed;
    CHECK(bk->fp8_adam(bk, &d, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "amax_out and amax_in together");
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_passes_apart);
    return test_summary();
}
