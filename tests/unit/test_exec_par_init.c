/* tests/unit/test_exec_par_init.c — the initial weights of a tensor-parallel
 * rank are slices of the one-rank tensors, and a pipeline stage's are the
 * one-rank model's layers (and a tied head the embedding), so the loss curves
 * of several ranks compare with one rank's. The models are built with a
 * communicator that only says its rank and size (initialisation moves
 * nothing); the slices are written out by hand below for the fixtures' shapes. */
#include <string.h>

#include "support/exec_fixtures.h"
#include "test.h"

static Backend *bk;

/* A communicator of `size` ranks seen from `rank`: no collective is called while a model is built. */
static Comm fake_comm(int rank, int size)
{
    Comm c;
    memset(&c, 0, sizeof c);
    c.name = "fake";
    c.rank = rank, c.size = size;
    return c;
}

/* The FP32 master of parameter (k, layer) — model layer index — as a host pointer (CPU backend). */
static const float *master(Model *m, ParamKind k, int layer)
{
    for (uint32_t i = 0; i < m->nparams; i++)
        if (m->params[i].kind == k && m->params[i].layer == layer) return m->params[i].master;
    return NULL;
}

static uint64_t rows_of(Model *m, ParamKind k, int layer)
{
    for (uint32_t i = 0; i < m->nparams; i++)
        if (m->params[i].kind == k && m->params[i].layer == layer) return m->params[i].rows;
    return 0;
}

/* shard (rows, cols) row i, column c == whole (.., W) row map[i], column c0 + c, for every element */
static int slice_ok(const float *shard, const float *whole, uint64_t rows, uint64_t cols, const uint64_t *map,
                    uint64_t W, uint64_t c0)
{
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t c = 0; c < cols; c++)
            if (shard[i * cols + c] != whole[map[i] * W + c0 + c]) return 0;
    return 1;
}

/* fx-llama (H 4, KV 2, D 8, C 32, SwiGLU F 48) at TP 2. Rank r's QKV rows: q heads 2r, 2r+1 = whole rows
 * 16r .. 16r+15; its KV head r: k rows 32 + 8r .., v rows 48 + 8r ..; FC1 (gate 48 | up 48): gate rows
 * 24r .., up rows 48 + 24r ..; proj (32, 32) columns 16r ..; FC2 (32, 48) columns 24r ..; the untied
 * head and the embedding (vocabulary 64, padded to 128 at TP 2: 64 rows a rank) rows 64r .., rank 1's
 * all padding (0). */
static void test_tp_slices(void)
{
    ModelSpec s = fx_llama();
    Recipe r = fx_recipe("fp32");
    Comm *one = NULL;
    Model *m1 = NULL;
    Err e;
    CHECK(!comm_single_create(&one, &e));
    CHECK(one && !fx_model(&s, &r, 2, 1, NULL, bk, one, &m1, &e));
    if (!m1) return;
    static Plan p;
    CHECK(!fx_plan_par(&s, &r, 2, 1, 2, 1, &p, &e));
    for (int rank = 0; rank < 2; rank++) {
        Comm c = fake_comm(rank, 2);
        Model *m = NULL;
        CHECK(!model_create(&p, NULL, bk, &c, &m, &e));
        if (!m) continue;
        uint64_t map[96];
        for (int l = 0; l < 2; l++) {
            for (uint64_t i = 0; i < 32; i++)
                map[i] = i < 16 ? 16 * rank + i : i < 24 ? 32 + 8 * rank + (i - 16) : 48 + 8 * rank + (i - 24);
            CHECK(rows_of(m, PK_QKV_W, l) == 32);
            CHECK(slice_ok(master(m, PK_QKV_W, l), master(m1, PK_QKV_W, l), 32, 32, map, 32, 0));
            for (uint64_t i = 0; i < 48; i++) map[i] = i < 24 ? 24 * rank + i : 48 + 24 * rank + (i - 24);
            CHECK(slice_ok(master(m, PK_FC1_W, l), master(m1, PK_FC1_W, l), 48, 32, map, 32, 0));
            for (uint64_t i = 0; i < 32; i++) map[i] = i;
            CHECK(slice_ok(master(m, PK_PROJ_W, l), master(m1, PK_PROJ_W, l), 32, 16, map, 32, 16 * (uint64_t)rank));
            CHECK(slice_ok(master(m, PK_FC2_W, l), master(m1, PK_FC2_W, l), 32, 24, map, 48, 24 * (uint64_t)rank));
            CHECK(slice_ok(master(m, PK_NORM1_W, l), master(m1, PK_NORM1_W, l), 32, 1, map, 1, 0)); /* whole */
        }
        for (int k = 0; k < 2; k++) {
            ParamKind pk = k ? PK_LM_HEAD : PK_WTE;
            const float *sh = master(m, pk, -1);
            CHECK(rows_of(m, pk, -1) == 64);
            if (rank == 0) {
                for (uint64_t i = 0; i < 64; i++) map[i] = i;
                CHECK(slice_ok(sh, master(m1, pk, -1), 64, 32, map, 32, 0));
            } else {
                int zero = 1;
                for (uint64_t i = 0; i < 64 * 32; i++) zero &= sh[i] == 0.0f;
                CHECK(zero);
            }
        }
        model_destroy(m);
    }
    model_destroy(m1);
    one->destroy(one);
}

/* FP8-LM's scaled FP16 masters take the power-of-two scale of their tensor's amax (65504 / amax, rounded down to a
 * power of two); an all-zero tensor (init_std 0) has amax 0 and keeps scale 1: record {1, 1, 0}, on one rank and
 * on a TP rank, whose amax is taken over its own slice (model_tp_fill) and every other piece's must be zero (a
 * stray 2.4e-38 would give scale 2^127). */
static void test_zero_weights_keep_scale_one(void)
{
    ModelSpec s = fx_gpt(); /* wide enough that a TP rank's FC1 slice, 512 x 256 = 131,072 elements, fills two
                             * initialisation pieces of 65,536 (when there are two threads) */
    s.layers = 1, s.hidden = 256, s.heads = s.kv_heads = 4, s.head_dim = 64, s.ffn_hidden = 1024;
    Recipe r = fx_recipe("fp8lm");
    ModelHyper h = model_hyper_default();
    h.init_std = 0.0f;
    static Plan p1, p2;
    Err e;
    CHECK(!fx_plan(&s, &r, 2, 1, &p1, &e) && !fx_plan_par(&s, &r, 2, 1, 2, 1, &p2, &e));
    for (int tp = 1; tp <= 2; tp++) {
        Comm *c = NULL; /* FP8-LM's first copies call the communicator: a single rank told its size */
        Model *m = NULL;
        CHECK(!comm_single_create(&c, &e));
        if (!c) continue;
        c->size = tp, c->rank = 0;
        CHECKF(!model_create(tp == 1 ? &p1 : &p2, &h, bk, c, &m, &e), "%s", e.msg);
        if (!m) {
            c->destroy(c);
            continue;
        }
        int recs = 0, wrong = 0;
        for (uint32_t i = 0; i < m->nparams; i++) {
            const float *rec = m->params[i].master_rec;
            if (!rec) continue;
            recs++;
            wrong += !(rec[0] == 1.0f && rec[1] == 1.0f && rec[2] == 0.0f);
        }
        CHECKF(recs > 0 && wrong == 0, "tp %d: %d of %d scaled masters not {1, 1, 0}", tp, wrong, recs);
        model_destroy(m);
        c->destroy(c);
    }
}

/* fx-gpt (2 layers, tied) at PP 2: stage 1 holds layer 1 (the model's index, so the one-rank layer 1's
 * values), the final LayerNorm and the head as its own copy of the embedding; stage 0 layer 0, the
 * embedding and the positions, and neither the final norm nor a head. */
static void test_pp_stages(void)
{
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("fp32");
    Comm *one = NULL;
    Model *m1 = NULL;
    Err e;
    CHECK(!comm_single_create(&one, &e));
    CHECK(one && !fx_model(&s, &r, 2, 2, NULL, bk, one, &m1, &e));
    if (!m1) return;
    static Plan p;
    CHECK(!fx_plan_par(&s, &r, 2, 2, 1, 2, &p, &e));
    uint64_t map[128];
    for (uint64_t i = 0; i < 128; i++) map[i] = i;
    for (int rank = 0; rank < 2; rank++) {
        Comm c = fake_comm(rank, 2);
        Model *m = NULL;
        CHECK(!model_create(&p, NULL, bk, &c, &m, &e));
        if (!m) continue;
        CHECK(m->spec.layers == 1 && m->layer0 == (uint32_t)rank && m->slots == (uint32_t)(2 - rank));
        CHECK(master(m, PK_QKV_W, 1 - rank) == NULL);
        CHECK(slice_ok(master(m, PK_QKV_W, rank), master(m1, PK_QKV_W, rank), 96, 32, map, 32, 0));
        CHECK(slice_ok(master(m, PK_FC2_W, rank), master(m1, PK_FC2_W, rank), 32, 128, map, 128, 0));
        CHECK(slice_ok(master(m, PK_WTE, -1), master(m1, PK_WTE, -1), 64, 32, map, 32, 0)); /* table or head */
        CHECK((master(m, PK_WPE, -1) != NULL) == (rank == 0));
        CHECK((master(m, PK_NORMF_W, -1) != NULL) == (rank == 1));
        model_destroy(m);
    }
    model_destroy(m1);
    one->destroy(one);
}

int main(void)
{
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    RUN(test_tp_slices);
    RUN(test_pp_stages);
    RUN(test_zero_weights_keep_scale_one);
    bk->destroy(bk);
    return test_summary();
}
