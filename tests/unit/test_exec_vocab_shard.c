/* tests/unit/test_exec_vocab_shard.c — the CPU backend's vocabulary-parallel
 * operations (tensor parallelism): a vocabulary shard's embedding lookup and
 * gradient, and the three-phase cross-entropy over vocabulary shards, with the
 * reduction between the phases done here as the ranks' all-reduces would.
 * Expected values worked by hand. */
#include <math.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/cpu/cpu_ops.h"
#include "test.h"

static Backend *bk;

/* The shard holding vocabulary rows 2 and 3 of a 4-token vocabulary, width 2:
 * token 0 and 1 are another rank's (rows of zeros here), 3 and 2 its rows. */
static void test_embed_shard(void)
{
    const float wte[4] = {1, 2, 3, 4}; /* row 0 = token 2, row 1 = token 3 */
    const int32_t tok[4] = {0, 3, 2, 1};
    float out[8];
    Err e;
    CHECK(!bk->embed_shard_fwd(bk, tok, 4, 2, 2, 2, wte, DT_FP32, out, DT_FP32, &e));
    const float want[8] = {0, 0, 3, 4, 1, 2, 0, 0};
    for (int i = 0; i < 8; i++) CHECK_REL(out[i], want[i], 0.0);
    /* gradient: tokens 2, 3, 2, 0 with rows (1,1), (2,2), (4,4), (8,8): token 2 gets 1 + 4 = 5, token 3
     * gets 2, token 0 (not this shard's) nothing; added to what is there (10, 20, 30, 40) */
    const int32_t tg[4] = {2, 3, 2, 0};
    const float dout[8] = {1, 1, 2, 2, 4, 4, 8, 8};
    float dw[4] = {10, 20, 30, 40};
    CHECK(!bk->embed_shard_bwd(bk, tg, 4, 2, 2, 2, dout, DT_FP32, dw, &e));
    const float wdw[4] = {15, 25, 32, 42};
    for (int i = 0; i < 4; i++) CHECK_REL(dw[i], wdw[i], 0.0);
    /* a negative token is refused, naming it */
    const int32_t bad[1] = {-1};
    CHECK_EQ_INT(bk->embed_shard_fwd(bk, bad, 1, 2, 2, 2, wte, DT_FP32, out, DT_FP32, &e), ST_USAGE);
    CHECK(strstr(e.msg, "-1") != NULL);
}

/* Vocabulary 3 padded to 4, two shards of 2 columns: shard 0 = columns 0, 1, shard 1 = column 2 and
 * the padding column 3. One row, logits z = (0, ln 2, 0 | 99 padding).
 *   phase 0: shard maxima ln 2 and 0 → M = ln 2 (MAX over the shards)
 *   phase 1: sums e^(0 − ln 2) + e^0 = 1.5 and e^(−ln 2) = 0.5 → S = 2 (SUM); the target's logit
 *            (target 1: shard 0's) ln 2 and 0 → ln 2
 *   phase 2: loss = ln S + M − z_t = ln 2; softmax (1/4, 1/2, 1/4); d = dloss (p − one-hot) with
 *            dloss 1: (1/4, −1/2 | 1/4, 0 padding)
 * A second row with the target in shard 1 (target 2): loss = ln 2 + ln 2 − 0 = 2 ln 2, d = (1/4, 1/2 |
 * −3/4, 0). */
static void test_xent_shard(void)
{
    const float ln2 = 0.693147182f;
    float z0[4] = {0, ln2, 0, ln2}, z1[4] = {0, 99, 0, 99}; /* shard s, rows 0 and 1: (rows, 2) */
    const int32_t tgt[2] = {1, 2};
    float s0[6], s1[6], l0[2], l1[2];
    Err e;
    CHECK(!bk->xent_shard(bk, z0, 2, 2, 0, 3, tgt, s0, 0, 1.0f, l0, &e));
    CHECK(!bk->xent_shard(bk, z1, 2, 2, 2, 3, tgt, s1, 0, 1.0f, l1, &e));
    CHECK_REL(s0[0], ln2, 0.0);
    CHECK_REL(s1[0], 0.0, 0.0);                                      /* the padding column's 99 is not a logit */
    for (int r = 0; r < 2; r++) s0[r] = s1[r] = fmaxf(s0[r], s1[r]); /* the MAX all-reduce */
    CHECK(!bk->xent_shard(bk, z0, 2, 2, 0, 3, tgt, s0, 1, 1.0f, l0, &e));
    CHECK(!bk->xent_shard(bk, z1, 2, 2, 2, 3, tgt, s1, 1, 1.0f, l1, &e));
    CHECK_REL(s0[2], 1.5, 1e-6);
    CHECK_REL(s1[2], 0.5, 1e-6);
    CHECK_REL(s0[4], ln2, 0.0); /* row 0's target is shard 0's */
    CHECK_REL(s1[4], 0.0, 0.0);
    CHECK_REL(s0[5], 0.0, 0.0);                                /* row 1's target is shard 1's: z = 0 */
    for (int i = 2; i < 6; i++) s0[i] = s1[i] = s0[i] + s1[i]; /* the SUM all-reduce */
    CHECK(!bk->xent_shard(bk, z0, 2, 2, 0, 3, tgt, s0, 2, 1.0f, l0, &e));
    CHECK(!bk->xent_shard(bk, z1, 2, 2, 2, 3, tgt, s1, 2, 1.0f, l1, &e));
    CHECK_REL(l0[0], ln2, 1e-6);
    CHECK_REL(l1[0], ln2, 1e-6);
    CHECK_REL(l0[1], 2 * ln2, 1e-6);
    const float w0[4] = {0.25f, -0.5f, 0.25f, 0.5f}, w1[4] = {0.25f, 0.0f, -0.75f, 0.0f};
    for (int i = 0; i < 4; i++) {
        CHECK(fabsf(z0[i] - w0[i]) <= 1e-6f);
        CHECK(fabsf(z1[i] - w1[i]) <= 1e-6f);
    }
    /* a shard wholly in the padding (first 4 ≥ vocabulary 3): max −inf, sum 0, gradient all 0 */
    float zp[2] = {5, 6}, sp[3];
    const int32_t t1[1] = {0};
    CHECK(!bk->xent_shard(bk, zp, 1, 2, 4, 3, t1, sp, 0, 1.0f, l0, &e));
    CHECK(isinf(sp[0]) && sp[0] < 0);
    sp[0] = 0.0f;
    CHECK(!bk->xent_shard(bk, zp, 1, 2, 4, 3, t1, sp, 1, 1.0f, l0, &e));
    CHECK_REL(sp[1], 0.0, 0.0);
    sp[1] = 1.0f;
    CHECK(!bk->xent_shard(bk, zp, 1, 2, 4, 3, t1, sp, 2, 1.0f, l0, &e));
    CHECK(zp[0] == 0.0f && zp[1] == 0.0f);
    /* refused: a phase other than 0-2, a target outside the vocabulary */
    CHECK_EQ_INT(bk->xent_shard(bk, z0, 2, 2, 0, 3, tgt, s0, 3, 1.0f, l0, &e), ST_USAGE);
    const int32_t far[2] = {1, 3};
    CHECK_EQ_INT(bk->xent_shard(bk, z0, 2, 2, 0, 3, far, s0, 0, 1.0f, l0, &e), ST_USAGE);
    CHECK(strstr(e.msg, "target 3") != NULL);
}

int main(void)
{
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    RUN(test_embed_shard);
    RUN(test_xent_shard);
    bk->destroy(bk);
    return test_summary();
}
