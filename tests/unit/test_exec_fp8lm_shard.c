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
 *   2^15, 1.8125 x 32768 = 59392 -> 0x7B40: another code.
 *
 * Then the sharded fp8lm model itself (no MPI: a single-rank communicator told it is rank r of 4,
 * as tests/unit/test_exec_shard.c does), on that file's 1-layer model (hidden 33, FFN 67): linear
 * weights E = 8,778 (QKV 3,267 at flat 0, proj 1,089 at 3,267, FC1 2,211 at 4,356, FC2 2,211 at
 * 6,567), shards of S = ceil(8,778 / 4) = 2,195: the FP16 master shard 2,195 x 2 = 4,390 B, E4M3 m
 * 2,195 B, FP16 v 4,390 B; the scaling records stay whole (4 linears x master, grad, m, v x 3 floats
 * x 4 B = 192 B). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
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

static ModelSpec odd(void)
{
    ModelSpec m = fx_gpt();
    m.layers = 1, m.hidden = 33, m.heads = m.kv_heads = 3, m.head_dim = 11, m.ffn_hidden = 67, m.seq_len = 5;
    return m;
}

static Model *rank_model(Backend *bk, int r, uint32_t dp)
{
    ModelSpec m = odd();
    Recipe rc = fx_recipe("fp8lm");
    rc.comm_dp_grad = rc.comm_param_gather = DT_E4M3; /* recipes.csv's fp8lm row: E4M3 gradients and copies */
    return fx_rank_model(bk, &m, &rc, r, dp);
}

static void drop(Model *m) { fx_rank_drop(m); }

/* Every rank's FP16 master part is the one rank's codes at its elements, its pointer element
 * own_lo − r·S + flat of the FP16 shard, its records the whole tensor's (the same on every rank).
 * (Its FP8 copies: tests/unit/test_exec_fp8lm_copies.c, and over MPI tests/cli/mpi_zero.sh.) */
static void test_sharded_model(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    if (!bk) return;
    Model *one = rank_model(bk, 0, 1);
    CHECK(one != NULL);
    for (int r = 0; one && r < 4; r++) {
        Model *m = rank_model(bk, r, 4);
        CHECK(m != NULL);
        if (!m) continue;
        CHECK(m->shard_elems[MODEL_CLASS_GEMM] == 2195);
        CHECK_EQ_U64(m->arena.placed[MT_MASTER_GEMM], 4390);
        CHECK_EQ_U64(m->arena.placed[MT_OPTIM_M_GEMM], 2195);
        CHECK_EQ_U64(m->arena.placed[MT_OPTIM_V_GEMM], 4390);
        CHECK_EQ_U64(m->arena.placed[MT_SCALE_STATE], 192);
        CHECK_EQ_U64(m->arena.placed[MT_FP8_ROWWISE], 8778); /* the E4M3 copy whole */
        uint64_t owned = 0;
        for (uint32_t i = 0; i < m->nparams; i++) {
            const ModelParam *q = &m->params[i], *q1 = &one->params[i];
            CHECK_EQ_INT(model_shard_copies(m, q), q->gemm);
            if (!q->gemm) continue;
            CHECK(!memcmp(q->master_rec, q1->master_rec, 3 * sizeof(float))); /* the whole tensor's scale */
            owned += q->own_n;
            CHECK((q->master != NULL) == (q->own_n != 0));
            if (!q->own_n) continue;
            uint64_t at = q->flat + q->own_lo - (uint64_t)r * 2195;
            CHECK((uint16_t *)q->master == (uint16_t *)m->shard_buf[MODEL_CLASS_GEMM][STATE_MASTER] + at);
            CHECK(!memcmp(q->master, (uint16_t *)q1->master + q->own_lo, q->own_n * sizeof(uint16_t)));
        }
        CHECK_EQ_U64(owned, r == 3 ? 2193 : 2195);
        drop(m);
    }
    drop(one);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_passes_apart);
    RUN(test_sharded_model);
    return test_summary();
}
