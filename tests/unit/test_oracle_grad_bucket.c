/* tests/unit/test_oracle_grad_bucket.c — the gradient all-reduce's buckets, by hand: which gradients one call
 * reduces (exec/model/model_grad_bucket.c: one group, one class, one dtype, back to back in memory, an FP8 gradient
 * with its own scaling record alone), and the arena that puts a class's gradients back to back (exec/model/arena.c:
 * a packed term's tensors with no gap, exec/model/model_layout.c packs every gradient term; every other term's at
 * 256 B). */
#include <stdio.h>

#include "exec/backend/backend.h"
#include "exec/model/arena.h"
#include "exec/model/grad_bucket.h"
#include "test.h"

enum { F32 = DT_FP32, B16 = DT_BF16, E4 = DT_E4M3 };

/* Each case: spans in the order the parameters list them (param = their index), the buckets' first spans after
 * the sort by (group, class, dtype, address), as the parameters they start with. Spans are {param, group, class,
 * dtype, alone, address, bytes}. */
typedef struct {
    const char *what;
    uint32_t n;
    GradSpan v[6];
    uint32_t nb;
    uint32_t first_param[6];
} Case;

static const Case cases[] = {
    /* listed out of address order: sorted 1 [0, 64), 2 [64, 192), 0 [192, 196): one run, one call */
    {"back to back, any order",
     3,
     {{0, 0, 0, F32, 0, 192, 4}, {1, 0, 0, F32, 0, 0, 64}, {2, 0, 0, F32, 0, 64, 128}},
     1,
     {1}},
    /* 0 [0, 64), 1 starts at 80 (a 16 B gap): two calls */
    {"a gap", 2, {{0, 0, 0, F32, 0, 0, 64}, {1, 0, 0, F32, 0, 80, 16}}, 2, {0, 1}},
    /* sorted FP32 0, 1, 3 then BF16 2 (the Dtype enum's order, checked below): FP32 [0, 64) + [64, 128) one call,
     * FP32 3 at 160 another (its dtype's run ended at 128; the BF16 [128, 160) lies between), BF16 2 a third */
    {"one dtype a bucket",
     4,
     {{0, 0, 0, F32, 0, 0, 64}, {1, 0, 0, F32, 0, 64, 64}, {2, 0, 0, B16, 0, 128, 32}, {3, 0, 0, F32, 0, 160, 16}},
     3,
     {0, 3, 2}},
    /* experts over their own group, after the data-parallel one: 1 and 3 adjacent [64, 96) [96, 128) join;
     * 0 [0, 64) and 2 [128, 160) are not adjacent to each other: dp 0, dp 2, edp 1+3 */
    {"the expert group apart",
     4,
     {{0, 0, 0, F32, 0, 0, 64}, {1, 1, 2, F32, 0, 64, 32}, {2, 0, 0, F32, 0, 128, 32}, {3, 1, 2, F32, 0, 96, 32}},
     3,
     {0, 2, 1}},
    /* two classes back to back, one dtype (a linear weight's gradient region ending where the others' begins):
     * a bucket each, as the plan counts them (planner/plan_comm.c plan_dp_buckets) */
    {"a class a bucket", 2, {{0, 0, 0, F32, 0, 0, 64}, {1, 0, 1, F32, 0, 64, 64}}, 2, {0, 1}},
    /* FP8 gradients with their own scale: each alone, and the next one does not join them */
    {"FP8 alone", 3, {{0, 0, 0, E4, 1, 0, 16}, {1, 0, 0, E4, 1, 16, 16}, {2, 0, 0, E4, 0, 32, 16}}, 3, {0, 1, 2}},
    {"none", 0, {{0}}, 0, {0}},
};

static void test_buckets(void)
{
    /* the F32 / B16 case's order assumes DT_FP32 sorts before DT_BF16 */
    CHECKF((int)DT_FP32 < (int)DT_BF16, "Dtype order: fp32 %d, bf16 %d", (int)DT_FP32, (int)DT_BF16);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const Case *c = &cases[k];
        GradSpan v[6];
        uint32_t first[6] = {0};
        for (uint32_t i = 0; i < c->n; i++) v[i] = c->v[i];
        uint32_t nb = grad_buckets(v, c->n, first);
        CHECKF(nb == c->nb, "%s: %u buckets, expected %u", c->what, nb, c->nb);
        for (uint32_t b = 0; b < nb && b < c->nb; b++)
            CHECKF(v[first[b]].param == c->first_param[b], "%s: bucket %u starts at parameter %u, expected %u", c->what,
                   b, v[first[b]].param, c->first_param[b]);
    }
}

/* grad_other packed (as model_layout.c packs every gradient term): FP32 tensors of 7, 32 and 3 elements back to
 * back, 28 B at 0, 128 B at 28, 12 B at 28 + 128 = 156 (16 B apart they would start at 0, 32 and 160; at 256 B at
 * 0, 256 and 512): extent 168 = placed 28 + 128 + 12, region align256(168) = 256, padding (the aligned extent less
 * the bytes) 256 - 168 = 88. weight_other, the same three unpacked: at 0, 256, 512 (extent 524, region 768,
 * padding 768 - 168 = 600). */
static void test_arena_packs_grads(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    ArenaSpecs s = {0};
    s.packed[MT_GRAD_OTHER] = 1;
    float *g[3] = {0}, *w[3] = {0};
    const uint64_t n[3] = {7, 32, 3};
    for (int i = 0; i < 3; i++) arena_add(&s, MT_GRAD_OTHER, DT_FP32, n[i], &g[i], "g", 0);
    for (int i = 0; i < 3; i++) arena_add(&s, MT_WEIGHT_OTHER, DT_FP32, n[i], &w[i], "w", 0);
    Arena ar;
    CHECKF(arena_carve(&ar, bk, &s, NULL, &e) == ST_OK, "%s", e.msg);
    const uint64_t goff[3] = {0, 28, 156}, woff[3] = {0, 256, 512};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(s.v[i].offset - ar.region_offset[MT_GRAD_OTHER], goff[i]);
        CHECK_EQ_U64(s.v[3 + i].offset - ar.region_offset[MT_WEIGHT_OTHER], woff[i]);
    }
    CHECK_EQ_U64(ar.placed[MT_GRAD_OTHER], 168);
    CHECK_EQ_U64(ar.padding[MT_GRAD_OTHER], 88);
    CHECK_EQ_U64(ar.region_bytes[MT_GRAD_OTHER], 256);
    CHECK_EQ_U64(ar.padding[MT_WEIGHT_OTHER], 600);
    CHECK_EQ_U64(ar.region_bytes[MT_WEIGHT_OTHER], 768);
    CHECK((char *)g[1] == (char *)g[0] + 28 && (char *)g[2] == (char *)g[0] + 156);
    arena_release(&ar, bk);
    arena_specs_free(&s);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_buckets);
    RUN(test_arena_packs_grads);
    return test_summary();
}
