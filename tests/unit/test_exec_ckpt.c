/* tests/unit/test_exec_ckpt.c — checkpoint and resume.
 *
 * A run of 2N steps and a run of N steps, saved, restored into a fresh model
 * and continued for N steps must agree bit for bit: the same losses and the
 * same bytes in every persistent tensor (weights, FP8 copies, master, grads,
 * Adam states, scales and amax histories). Bad checkpoints are refused with a
 * message naming the file and the problem, and leave the model untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/ckpt/ckpt.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum { HALF = 4, BT = 64 };

static char dir[512];

static Model *make(const char *recipe, const ModelSpec *s, Backend *bk, Comm *comm)
{
    Recipe r = fx_recipe(recipe);
    ModelHyper h = model_hyper_default();
    Model *g = NULL;
    Err e;
    if (fx_model(s, &r, 4, 1, &h, bk, comm, &g, &e)) fprintf(stderr, "  %s\n", e.msg);
    return g;
}

static int run(Model *g, DataStream *d, int steps, float *losses)
{
    int32_t in[BT], tgt[BT];
    Err e;
    for (int i = 0; i < steps; i++) {
        data_next(d, g->batch, g->seq, in, tgt);
        if (model_step(g, in, tgt, &losses[i], &e)) {
            fprintf(stderr, "  %s\n", e.msg);
            return -1;
        }
    }
    return 0;
}

/* 1 when every persistent tensor of a and b holds the same bytes. */
static int same_state(const Model *a, const Model *b)
{
    if (a->specs.n != b->specs.n) return 0;
    for (uint32_t i = 0; i < a->specs.n; i++) {
        const ArenaSpec *p = &a->specs.v[i];
        if (!arena_term_persistent(p->term)) continue;
        if (memcmp((char *)a->arena.base + p->offset, (char *)b->arena.base + b->specs.v[i].offset, p->bytes)) return 0;
    }
    return 1;
}

static void resume_case(const char *recipe, ModelSpec s)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    Model *ga = make(recipe, &s, bk, comm), *gb = make(recipe, &s, bk, comm), *gc = make(recipe, &s, bk, comm);
    CHECK(ga && gb && gc);
    if (!ga || !gb || !gc) return;
    DataStream da, db;
    CHECK(!data_synthetic(&da, s.vocab, 5, &e) && !data_synthetic(&db, s.vocab, 5, &e));
    float la[2 * HALF], lb[2 * HALF];
    CHECK(!run(ga, &da, 2 * HALF, la));
    CHECK(!run(gb, &db, HALF, lb));
    char path[600];
    snprintf(path, sizeof path, "%s/%s-%s.ckpt", dir, s.name, recipe);
    CHECK_EQ_INT(ckpt_save(path, gb, &db.st, &e), ST_OK);
    DataState ds;
    CHECK_EQ_INT(ckpt_load(path, gc, &ds, &e), ST_OK);
    CHECK_EQ_INT(gc->step, HALF);
    CHECK(same_state(gb, gc));
    CHECK(!data_restore(&db, &ds, &e));
    CHECK(!run(gc, &db, HALF, lb + HALF));
    CHECK(!memcmp(la, lb, sizeof la)); /* every loss bit-identical */
    CHECK(same_state(ga, gc));
    data_free(&da);
    data_free(&db);
    model_destroy(ga);
    model_destroy(gb);
    model_destroy(gc);
    comm->destroy(comm);
    bk->destroy(bk);
}

static void test_resume_megatron_bf16(void) { resume_case("megatron-bf16", fx_gpt()); }
static void test_resume_te_fp8(void) { resume_case("te-fp8", fx_gpt()); }
static void test_resume_fp8lm(void) { resume_case("fp8lm", fx_gpt()); }
/* MS-AMP O1: the scaled FP16 weight and its record (weight_rec) are state the checkpoint must carry */
static void test_resume_msamp_o1(void) { resume_case("msamp-o1", fx_gpt()); }
static void test_resume_llama_te_fp8(void) { resume_case("te-fp8", fx_llama()); }
/* MoE layers: the router, the routed experts' states and a sigmoid router's bias (moved after every step from
 * the step's loads) survive a checkpoint, so the resumed run routes every token as the continuous one */
static void test_resume_moe_bf16(void)
{
    resume_case("megatron-bf16", fx_moe(ROUTER_SOFTMAX));
    resume_case("megatron-bf16", fx_moe(ROUTER_SIGMOID));
}

/* Write `n` bytes of `src` (the good checkpoint) to path, optionally flipping byte `flip`. */
static void write_variant(const char *path, const char *src, long n, long flip)
{
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    for (long i = 0; in && out && i < n; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(i == flip ? c ^ 0x10 : c, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

static void test_bad_checkpoints(void)
{
    Backend *bk;
    Comm *comm;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Model *g = make("te-fp8", &s, bk, comm);
    CHECK(g != NULL); /* a model that cannot be built fails the test, never skips its checks */
    if (!g) return;
    DataState ds = {.kind = DATA_SYNTHETIC};
    char good[600], bad[600];
    snprintf(good, sizeof good, "%s/good.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    CHECK(!ckpt_save(good, g, &ds, &e));
    FILE *f = fopen(good, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);

    CHECK_EQ_INT(ckpt_load("/nonexistent/dir/x.ckpt", g, &ds, &e), ST_NOINPUT);
    CHECK_CONTAINS(e.msg, "/nonexistent/dir/x.ckpt");

    write_variant(bad, good, size - 100, -1); /* truncated */
    CHECK_EQ_INT(ckpt_load(bad, g, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "truncated");

    write_variant(bad, good, size, size / 2); /* one flipped bit in the data */
    CHECK_EQ_INT(ckpt_load(bad, g, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "checksum mismatch");

    write_variant(bad, good, size, 0); /* bad magic */
    CHECK_EQ_INT(ckpt_load(bad, g, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "not an fp8plan checkpoint");

    /* another recipe: named, with the field that differs */
    Model *g2 = make("megatron-bf16", &s, bk, comm);
    CHECK_EQ_INT(ckpt_load(good, g2, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "recipe 'te-fp8', this run uses 'megatron-bf16'");
    model_destroy(g2);

    /* another shape */
    ModelSpec s2 = s;
    s2.layers = 3;
    Model *g3 = make("te-fp8", &s2, bk, comm);
    CHECK_EQ_INT(ckpt_load(good, g3, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "layers 2, this run has 3");
    model_destroy(g3);

    /* another family's column: grouped-query attention */
    s2 = s;
    s2.kv_heads = 2;
    g3 = make("te-fp8", &s2, bk, comm);
    CHECK_EQ_INT(ckpt_load(good, g3, &ds, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "KV heads 4, this run has 2");
    model_destroy(g3);

    /* a failed load leaves the model untouched: corrupt data, then compare */
    Model *g4 = make("te-fp8", &s, bk, comm);
    write_variant(bad, good, size, size - 20);
    CHECK_EQ_INT(ckpt_load(bad, g4, &ds, &e), ST_DATA);
    CHECK(same_state(g, g4));
    model_destroy(g4);

    /* an unwritable target leaves nothing behind */
    CHECK(ckpt_save("/nonexistent/dir/x.ckpt", g, &ds, &e) != ST_OK);
    CHECK(access("/nonexistent/dir/x.ckpt", F_OK) != 0);
    unlink(good);
    unlink(bad);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fp8plan-ckpt-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
    if (!mkdtemp(dir)) return 1;
    RUN(test_resume_megatron_bf16);
    RUN(test_resume_te_fp8);
    RUN(test_resume_fp8lm);
    RUN(test_resume_msamp_o1);
    RUN(test_resume_llama_te_fp8);
    RUN(test_resume_moe_bf16);
    RUN(test_bad_checkpoints);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return test_summary();
}
