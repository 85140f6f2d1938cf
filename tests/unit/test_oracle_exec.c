/* tests/unit/test_oracle_exec.c — executor pieces against values worked out
 * by hand, through the public API: the single-rank communicator's accounting,
 * the model's tensor list, one step's gradient all-reduces, the data streams,
 * the GEMM descriptor's output rule and the parameter names.
 *
 * The model is tests/support's tiny GPT: 2 layers, C 32, 4 heads, FFN 128,
 * T 16, micro-batch 4 (BT = 64 tokens), vocabulary 64 (padded 64), tied
 * embeddings, biases (layernorm, GELU, learned positions). Per layer: LN 2 x (32 + 32) = 128, QKV 96 x 32 + 96 = 3168,
 * proj 32 x 32 + 32 = 1056, FC1 128 x 32 + 128 = 4224, FC2 32 x 128 + 32 = 4128:
 * 12704; two layers 25408, token embedding 64 x 32 = 2048, positions 16 x 32 =
 * 512, final LN 64: 28032 parameters in 2 x 12 + 4 = 28 tensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "fp8/codec.h"
#include "exec/backend/data.h"
#include "exec/backend/recipe.h"
#include "exec/backend/rng.h"
#include "exec/model/model_internal.h" /* model_param_name */
#include "support/exec_fixtures.h"
#include "support/fixtures.h"
#include "test.h"

/* One rank: an all-reduce is the identity, gathers and scatters are copies; every call counts its
 * payload (elements x dtype bytes) and no bus bytes (the ring factors 2(n-1)/n and (n-1)/n are 0).
 *   all_reduce of 10 FP32: 40 B; all_gather of 3 BF16 out of place: 6 B; reduce_scatter of 4 E4M3: 4 B
 *   -> 3 calls, 50 B payload, 0 bus bytes in all; per plan row, the row each call names: CO_DP_GRAD_AR
 *   1 call 40 B, CO_DP_PARAM_AG 1 call 6 B, CO_DP_GRAD_RS 1 call 4 B. */
static void test_single_rank_comm(void)
{
    Backend *bk = NULL;
    Comm *c = NULL;
    Err e = {0};
    CHECK(backend_cpu_create(&bk, &e) == ST_OK && comm_single_create(&c, &e) == ST_OK);
    if (!bk || !c) return;
    CHECK(c->rank == 0 && c->size == 1 && !strcmp(c->name, "single"));
    float *buf = NULL;
    uint16_t *src = NULL, *dst = NULL;
    uint8_t *q = NULL, *r = NULL;
    CHECK(!bk->alloc(bk, 40, (void **)&buf, &e) && !bk->alloc(bk, 6, (void **)&src, &e) &&
          !bk->alloc(bk, 6, (void **)&dst, &e) && !bk->alloc(bk, 4, (void **)&q, &e) &&
          !bk->alloc(bk, 4, (void **)&r, &e));
    if (!buf || !src || !dst || !q || !r) return;
    const float ten[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const uint16_t three[3] = {0x3F80, 0x4000, 0x4040}; /* BF16 1, 2, 3 */
    const uint8_t four[4] = {0x38, 0x40, 0x44, 0x48};   /* E4M3 1, 2, 3, 4 */
    CHECK(!bk->copy_to_device(bk, buf, ten, sizeof ten, &e) && !bk->copy_to_device(bk, src, three, 6, &e) &&
          !bk->copy_to_device(bk, q, four, 4, &e) && !bk->memset0(bk, dst, 6, &e) && !bk->memset0(bk, r, 4, &e));
    CHECKF(c->all_reduce(c, CO_DP_GRAD_AR, bk, buf, 10, DT_FP32, COMM_SUM, &e) == ST_OK, "%s", e.msg);
    CHECKF(c->all_gather(c, CO_DP_PARAM_AG, bk, src, dst, 3, DT_BF16, &e) == ST_OK, "%s", e.msg);
    CHECKF(c->reduce_scatter(c, CO_DP_GRAD_RS, bk, q, r, 4, DT_E4M3, COMM_MAX, &e) == ST_OK, "%s", e.msg);
    float back[10];
    uint16_t g[3];
    uint8_t s[4];
    CHECK(!bk->copy_to_host(bk, back, buf, sizeof back, &e) && !bk->copy_to_host(bk, g, dst, 6, &e) &&
          !bk->copy_to_host(bk, s, r, 4, &e));
    CHECK(!memcmp(back, ten, sizeof ten)); /* the sum over one rank is the value itself */
    CHECK(!memcmp(g, three, sizeof three));
    CHECK(!memcmp(s, four, sizeof four));
    CHECK_EQ_U64(c->total.calls, 3);
    CHECK_EQ_U64(c->total.payload_bytes, 50);
    CHECK(c->total.bus_bytes == 0.0);
    CHECK_EQ_U64(c->stats[CO_DP_GRAD_AR].calls, 1);
    CHECK_EQ_U64(c->stats[CO_DP_GRAD_AR].payload_bytes, 40);
    CHECK_EQ_U64(c->stats[CO_DP_PARAM_AG].calls, 1);
    CHECK_EQ_U64(c->stats[CO_DP_PARAM_AG].payload_bytes, 6);
    CHECK_EQ_U64(c->stats[CO_DP_GRAD_RS].calls, 1);
    CHECK_EQ_U64(c->stats[CO_DP_GRAD_RS].payload_bytes, 4);
    /* a dtype without a size is refused by every collective, and is not counted */
    CHECK(c->all_reduce(c, CO_DP_GRAD_AR, bk, buf, 1, DT_NONE, COMM_SUM, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "has no size");
    CHECK(c->all_gather(c, CO_DP_PARAM_AG, bk, src, dst, 1, DT_NONE, &e) == ST_USAGE);
    CHECK(c->reduce_scatter(c, CO_DP_GRAD_RS, bk, q, r, 1, DT_NONE, COMM_SUM, &e) == ST_USAGE);
    CHECK(c->all_reduce(c, CO_DP_GRAD_AR, bk, NULL, 4, DT_FP32, COMM_SUM, &e) == ST_USAGE); /* no buffer */
    CHECK_EQ_U64(c->total.calls, 3);
    bk->free(bk, buf), bk->free(bk, src), bk->free(bk, dst), bk->free(bk, q), bk->free(bk, r);
    c->destroy(c);
    bk->destroy(bk);
}

static const ArenaSpec *find(const ArenaSpecs *sp, ArenaTerm t, const char *name, int layer)
{
    for (uint32_t i = 0; i < sp->n; i++)
        if (sp->v[i].term == t && !strcmp(sp->v[i].name, name) && sp->v[i].layer == layer) return &sp->v[i];
    return NULL;
}

static uint64_t spec_bytes(const ArenaSpecs *sp, ArenaTerm t, const char *name, int layer)
{
    const ArenaSpec *a = find(sp, t, name, layer);
    CHECKF(a != NULL, "no %s '%s' (layer %d)", arena_term_name(t), name, layer);
    return a ? a->bytes : 0;
}

/* te-fp8 (BF16 working weights, FP32 master/grad/m/v, E4M3 copies both ways):
 *   wte: BF16 64 x 32 x 2 = 4096 B, FP32 master 8192 B; qkv.w of layer 1: BF16 96 x 32 x 2 = 6144 B, each FP8
 *   copy 3072 B; FP32 logits 64 x 64 x 4 = 16384 B; BF16 d(logits) 8192 B, live only in the LM-head
 *   backward; token ids 64 x 4 = 256 B.
 * Totals per term: linear weights (3072 + 1024 + 4096 + 4096) x 2 layers x 2 B = 49152 B; their FP32
 *   gradients 98304 B; other weights (2048 + 512 + 64 + 2 x (128 + 96 + 32 + 128 + 32)) x 2 B = 6912 B.
 * With BF16 gradients for the other parameters, their FP32 staging holds the embeddings' gradients
 *   (64 x 32 + 16 x 32) x 4 = 10240 B; untied, the LM head's too: + 64 x 32 x 4 = 18432 B. */
/* The model's tensor list for a fixture: its plan (micro-batch 4, one micro-batch), then model_layout. */
static Status layout(const ModelSpec *s, const Recipe *r, ArenaSpecs *sp, Err *e)
{
    static Plan p;
    Status st = fx_plan(s, r, 4, 1, &p, e);
    return st ? st : model_layout(&p, sp, e);
}

static void test_tensor_list(void)
{
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    ArenaSpecs sp = {0};
    Err e = {0};
    CHECKF(layout(&s, &r, &sp, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(spec_bytes(&sp, MT_WEIGHT_OTHER, "wte", -1), 4096);
    CHECK_EQ_U64(spec_bytes(&sp, MT_MASTER_OTHER, "wte", -1), 8192);
    CHECK_EQ_U64(spec_bytes(&sp, MT_WEIGHT_GEMM, "qkv.w", 1), 6144);
    CHECK_EQ_U64(spec_bytes(&sp, MT_FP8_ROWWISE, "qkv.w", 1), 3072);
    CHECK_EQ_U64(spec_bytes(&sp, MT_FP8_COLWISE, "qkv.w", 1), 3072);
    CHECK_EQ_U64(spec_bytes(&sp, MT_ACT_OUTPUT, "logits", -1), 16384);
    CHECK_EQ_U64(spec_bytes(&sp, MT_TRANSIENT, "dlogits", -1), 8192);
    const ArenaSpec *dl = find(&sp, MT_TRANSIENT, "dlogits", -1);
    CHECK(dl && dl->phase == MODEL_PHASE_HEAD);
    CHECK_EQ_U64(spec_bytes(&sp, XT_IO, "tokens", -1), 256);
    CHECK(find(&sp, MT_TRANSIENT, "grad_stage_emb", -1) == NULL); /* FP32 gradients need no staging */
    uint64_t by[ARENA_TERMS];
    CHECK(arena_specs_bytes(&sp, by, &e) == ST_OK);
    CHECK_EQ_U64(by[MT_WEIGHT_GEMM], 49152);
    CHECK_EQ_U64(by[MT_GRAD_GEMM], 98304);
    CHECK_EQ_U64(by[MT_WEIGHT_OTHER], 6912);
    arena_specs_free(&sp);

    r.other.dt[STATE_GRAD] = DT_BF16;
    ArenaSpecs sp2 = {0};
    if (layout(&s, &r, &sp2, &e) == ST_OK) {
        CHECK_EQ_U64(spec_bytes(&sp2, MT_TRANSIENT, "grad_stage_emb", -1), 10240);
        arena_specs_free(&sp2);
        s.tied_embeddings = 0;
        ArenaSpecs sp3 = {0};
        CHECK(layout(&s, &r, &sp3, &e) == ST_OK);
        CHECK_EQ_U64(spec_bytes(&sp3, MT_TRANSIENT, "grad_stage_emb", -1), 18432);
        arena_specs_free(&sp3);
    } else {
        CHECKF(0, "model_layout refused BF16 gradients for the other parameters: %s", e.msg);
    }
}

/* One training step all-reduces every parameter's gradient once, in buckets (exec/model/model_grad_bucket.c):
 * te-fp8 keeps every gradient in FP32, so 28032 x 4 = 112128 B, in 2 calls, a class each: the GEMM gradients
 * (per layer qkv 96x32, proj 32x32, fc1 128x32, fc2 32x128: 12,288 x 4 = 49,152 B, x 2 layers = 98,304 B = 384 x
 * 256) back to back, and the other class's (wte 64x32, wpe 16x32, norms and biases of 32, 96 and 128) in its own
 * buffer; the classes stay apart though the other class's region starts where the GEMM one ends. It also
 * max-reduces the current amax row of each scaling bank before the scales update (TE's amax reduction): the
 * forward bank holds x and w of 4 linears x 2 layers = 16 FP32, the backward bank dy of 8: 2 more calls, 96 B.
 * Total 4 calls, 112224 B; on one rank no bus bytes. */
static void test_step_reduces_every_gradient(void)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Err e = {0};
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("te-fp8");
    ModelHyper h = model_hyper_default();
    Model *g = NULL;
    CHECKF(bk && comm && !fx_model(&s, &r, 4, 1, &h, bk, comm, &g, &e), "%s", e.msg);
    if (!g) return;
    CHECK_EQ_U64(g->nparams, 28);
    CHECK_EQ_U64(model_weight_count(g), 28032);
    int32_t in[64], tgt[64];
    CHECK_EQ_U64(model_step_tokens(g), 64);
    fx_tokens(g, 7, in, tgt);
    float loss = 0;
    CHECKF(model_step(g, in, tgt, &loss, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(comm->total.calls, 4);
    CHECK_EQ_U64(comm->total.payload_bytes, 112224);
    CHECK(comm->total.bus_bytes == 0.0);
    CHECK_EQ_U64(comm->stats[CO_DP_GRAD_AR].calls, 2);
    CHECK_EQ_U64(comm->stats[CO_DP_GRAD_AR].payload_bytes, 112128);
    CHECK_EQ_U64(comm->stats[CO_AMAX_AR].calls, 2);
    CHECK_EQ_U64(comm->stats[CO_AMAX_AR].payload_bytes, 96);
    /* a fresh model predicts about uniformly: the first loss is near ln 64 = 4.16 */
    CHECK(fabsf(loss - logf(64.0f)) < 0.1f);
    model_destroy(g);
    comm->destroy(comm);
    bk->destroy(bk);
}

/* Byte-level text "abcdefghij" with T = 3: rows are windows of T + 1 bytes that advance by T and wrap
 * when the next window would pass the end: abcd, defg, ghij, then (9 + 4 > 10) abcd again. */
static void test_byte_stream(void)
{
    char path[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fp8plan-data-oracle-%d.txt", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs("abcdefghij", f);
    fclose(f);
    DataStream d;
    Err e = {0};
    CHECKF(data_bytes_file(&d, path, 256, 3, &e) == ST_OK, "%s", e.msg);
    int32_t in[6], tgt[6];
    data_next(&d, 2, 3, in, tgt);
    const int32_t in1[6] = {'a', 'b', 'c', 'd', 'e', 'f'}, tg1[6] = {'b', 'c', 'd', 'e', 'f', 'g'};
    CHECK(!memcmp(in, in1, sizeof in1) && !memcmp(tgt, tg1, sizeof tg1));
    data_next(&d, 1, 3, in, tgt);
    CHECK(in[0] == 'g' && in[2] == 'i' && tgt[2] == 'j');
    data_next(&d, 1, 3, in, tgt);
    CHECK(in[0] == 'a' && tgt[2] == 'd');
    CHECK_EQ_U64(d.st.batches, 3);
    CHECK_EQ_U64(d.st.pos, 3);
    CHECK(data_entropy_floor(&d) == -1.0); /* unknown for text */
    data_free(&d);
    unlink(path);
    CHECK(data_bytes_file(&d, path, 256, 3, &e) == ST_NOINPUT); /* gone */
    CHECK(data_bytes_file(&d, path, 255, 3, &e) == ST_USAGE);   /* bytes need 256 tokens */
}

/* The synthetic stream's entropy: K = min(V, 256) symbols, the successor with probability 0.9 + 0.1/K,
 * each other symbol 0.1/K: H = -p ln p - (K - 1) q ln q. For V = 64: q = 0.1/64 = 0.0015625,
 * p = 0.9015625 (H = 0.7307 nats); for V = 50257: K = 256, q = 0.000390625, p = 0.900390625 (0.8760). */
static void test_synthetic_entropy(void)
{
    DataStream d;
    Err e = {0};
    CHECK(data_synthetic(&d, 64, 3, &e) == ST_OK);
    CHECK_REL(data_entropy_floor(&d), -(0.9015625 * log(0.9015625)) - 63 * 0.0015625 * log(0.0015625), 1e-12);
    int32_t in[32], tgt[32];
    data_next(&d, 2, 16, in, tgt);
    for (int i = 0; i < 31; i++)
        if ((i + 1) % 16) CHECK(tgt[i] == in[i + 1]); /* the target is the next token */
    for (int i = 0; i < 32; i++) CHECK(in[i] >= 0 && in[i] < 64);
    data_free(&d);
    CHECK(data_synthetic(&d, 50257, 3, &e) == ST_OK);
    CHECK_REL(data_entropy_floor(&d), -(0.900390625 * log(0.900390625)) - 255 * 0.000390625 * log(0.000390625), 1e-12);
    data_free(&d);
}

/* A GEMM output must be a float or FP8 type */
static void test_gemm_output_dtype(void)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, d[4];
    GemmDesc g = {.m = 2,
                  .n = 2,
                  .k = 2,
                  .a = {.ptr = a, .dtype = DT_FP32},
                  .b = {.ptr = b, .dtype = DT_FP32},
                  .d = {.ptr = d, .dtype = DT_FP32}};
    Err e = {0};
    CHECKF(gemm_desc_check(&g, &e) == ST_OK, "%s", e.msg);
    const Dtype bad[] = {DT_NONE, DT_E8M0};
    for (int i = 0; i < 2; i++) {
        g.d.dtype = bad[i];
        CHECK(gemm_desc_check(&g, &e) == ST_USAGE);
        CHECK_CONTAINS(e.msg, "output D has dtype");
    }
}

/* Parameter names as checkpoints and reports print them */
static void test_param_names(void)
{
    static const char *const names[PK_COUNT] = {"wte",
                                                "wpe",
                                                "norm1.w",
                                                "norm1.b",
                                                "qkv.w",
                                                "qkv.b",
                                                "proj.w",
                                                "proj.b",
                                                "norm2.w",
                                                "norm2.b",
                                                "fc1.w",
                                                "fc1.b",
                                                "fc2.w",
                                                "fc2.b",
                                                "normf.w",
                                                "normf.b",
                                                "lm_head",
                                                "router.w",
                                                "router.b",
                                                "experts.fc1.w",
                                                "experts.fc2.w",
                                                "q_norm.w",
                                                "k_norm.w",
                                                "q_down.w",
                                                "q_latent_norm.w",
                                                "q_up.w",
                                                "kv_down.w",
                                                "kv_latent_norm.w",
                                                "kv_up.w",
                                                "mtp.enorm.w",
                                                "mtp.enorm.b",
                                                "mtp.hnorm.w",
                                                "mtp.hnorm.b",
                                                "mtp.eh_proj.w",
                                                "mtp.final_norm.w",
                                                "mtp.final_norm.b"};
    for (int k = 0; k < PK_COUNT; k++) CHECK_STR(model_param_name((ParamKind)k), names[k]);
    CHECK_STR(model_param_name(PK_COUNT), "?");
}

/* A GEMM large enough for the CPU backend to split over threads (160 x 128 x 256 = 5.2e6 multiply-adds),
 * with small integer inputs: every product and partial sum is an integer below 2^24, so FP32
 * arithmetic in any order is exact and the expected D is integer arithmetic done here. A is not
 * square against B, so operands swapped between threads cannot go unnoticed. */
static void test_threaded_gemm_exact(void)
{
    enum { M = 160, N = 128, K = 256 };
    float *a = malloc(sizeof *a * M * K), *b = malloc(sizeof *b * N * K), *d = malloc(sizeof *d * M * N);
    CHECK(a && b && d);
    if (!a || !b || !d) return;
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7 + 3) % 5 - 2); /* -2 .. 2 */
    for (int i = 0; i < N * K; i++) b[i] = (float)((i * 11 + 1) % 5 - 2);
    Backend *bk = NULL;
    Err e = {0};
    CHECK(backend_cpu_create(&bk, &e) == ST_OK);
    float *da = NULL, *db = NULL, *dd = NULL;
    if (bk && !bk->alloc(bk, sizeof *a * M * K, (void **)&da, &e) &&
        !bk->alloc(bk, sizeof *b * N * K, (void **)&db, &e) && !bk->alloc(bk, sizeof *d * M * N, (void **)&dd, &e)) {
        CHECK(!bk->copy_to_device(bk, da, a, sizeof *a * M * K, &e) &&
              !bk->copy_to_device(bk, db, b, sizeof *b * N * K, &e));
        GemmDesc g = {.m = M,
                      .n = N,
                      .k = K,
                      .a = {.ptr = da, .dtype = DT_FP32},
                      .b = {.ptr = db, .dtype = DT_FP32},
                      .d = {.ptr = dd, .dtype = DT_FP32}};
        CHECKF(bk->gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
        CHECK(!bk->copy_to_host(bk, d, dd, sizeof *d * M * N, &e));
        int bad = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                long acc = 0;
                for (int k = 0; k < K; k++) acc += (long)a[i * K + k] * (long)b[j * K + k];
                bad += d[i * N + j] != (float)acc;
            }
        CHECK_EQ_INT(bad, 0);
    } else {
        CHECKF(0, "backend allocation: %s", e.msg);
    }
    if (bk) bk->free(bk, da), bk->free(bk, db), bk->free(bk, dd), bk->destroy(bk);
    free(a), free(b), free(d);
}

/* SM counts of the catalog's GPU rows, from the vendors' datasheets: H100 SXM 132, H100 PCIe 114, H200 132,
 * A100 SXM 108, L40S 142, B200 148; no row, none. */
static void test_catalog_sms(void)
{
    Catalog *c = fx_catalog();
    const char *rows[] = {"h100-sxm", "h100-pcie", "h200", "a100-sxm", "l40s", "b200"};
    const int sms[] = {132, 114, 132, 108, 142, 148};
    for (int i = 0; i < 6; i++) {
        const GpuSpec *g = catalog_gpu(c, rows[i]);
        CHECKF(g != NULL, "no row %s", rows[i]);
        CHECKF(g && g->sms == (uint32_t)sms[i], "%s: %u SMs", rows[i], g ? g->sms : 0);
    }
    free(c);
}

/* splitmix64 (Vigna's reference): from state 0 the outputs are mix(γ), mix(2γ), mix(3γ) with γ =
 * 0x9E3779B97F4A7C15 and mix(z) = z ^= z >> 30, *= 0xBF58476D1CE4E5B9; z ^= z >> 27, *= 0x94D049BB133111EB;
 * z ^ z >> 31 — 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, the published first outputs for
 * seed 0. rng_at(key, i) is the (i+1)-th of them for state key; for key 12345, number 0 is
 * mix(12345 + γ) = 0x22118258A9D111A0 (computed with a separate implementation of the same steps). The
 * weights of every run come from these numbers. */
/* fx_llama under megatron-bf16 (BF16 activations), micro-batch 4: B·T = 4 x 16 = 64 tokens.
 *   d_act, SwiGLU's gradient at the gate/up product (B·T, F): 64 x 48 x 2 B = 6144 B, block backward only;
 *   d_a, the widest linear output's gradient: FC1 is 2F = 96 wide (QKV: (4 + 2 x 2) x 8 = 64), so
 *   64 x 96 x 2 B = 12288 B, block backward only;
 *   attn_scores, one sequence's heads in FP32: 4 x 16 x 16 x 4 B = 4096 B, forward only. */
static void test_tensor_list_swiglu(void)
{
    ModelSpec s = fx_llama();
    Recipe r = fx_recipe("megatron-bf16");
    ArenaSpecs sp = {0};
    Err e = {0};
    CHECKF(layout(&s, &r, &sp, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(spec_bytes(&sp, MT_TRANSIENT, "d_act", -1), 6144);
    CHECK_EQ_U64(spec_bytes(&sp, MT_TRANSIENT, "d_a", -1), 12288);
    CHECK_EQ_U64(spec_bytes(&sp, MT_TRANSIENT, "attn_scores", -1), 4096);
    const ArenaSpec *da = find(&sp, MT_TRANSIENT, "d_act", -1), *sc = find(&sp, MT_TRANSIENT, "attn_scores", -1);
    CHECK(da && da->phase == MODEL_PHASE_BLOCKS);
    CHECK(sc && sc->phase == MODEL_PHASE_FWD);
    arena_specs_free(&sp);
}

static void test_rng_reference(void)
{
    Rng r = {0};
    const uint64_t want[3] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull, 0x06C45D188009454Full};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(rng_u64(&r), want[i]);
        CHECK_EQ_U64(rng_at(0, (uint64_t)i), want[i]);
    }
    CHECK_EQ_U64(rng_at(12345, 0), 0x22118258A9D111A0ull);
}

/* Activations are in the other parameters' working dtype when it is a float type, BF16 otherwise
 * (a recipe that keeps no separate working weight for them). */
static void test_act_dtype_default(void)
{
    Recipe r = fx_recipe("megatron-bf16");
    const Dtype w[5] = {DT_FP32, DT_FP16, DT_BF16, DT_NONE, DT_E4M3},
                want[5] = {DT_FP32, DT_FP16, DT_BF16, DT_BF16, DT_BF16};
    for (int i = 0; i < 5; i++) {
        r.other.dt[STATE_WEIGHT] = w[i];
        CHECKF(exec_act_dtype(&r) == want[i], "other weights %s: activations %s", dtype_name(w[i]),
               dtype_name(exec_act_dtype(&r)));
    }
}

/* The FP8 collectives with an agreed scale decode and re-encode the codes on the host, so they take the cpu
 * backend's memory only: another backend's buffers are refused before anything is reduced (no call counted).
 * With the cpu backend on one rank the group's amax is this rank's: E4M3 codes of 1, 2, 3, 4 at scale_inv 1 ->
 * amax 4, shared scale 448 / (1 x 4) = 112, the record becomes {112, 1/112, amax of the sum 4}; the codes are
 * the values x 112 rounded to E4M3: 112 = 1.75 x 2^6, 224 = 1.75 x 2^7, 448 = 1.75 x 2^8 exact; 336 lies halfway
 * between 320 (1.25 x 2^8) and 352 (1.375 x 2^8), ties to the even mantissa -> 320. */
static void test_fp8_collective_needs_host_memory(void)
{
    Backend *bk = NULL;
    Comm *c = NULL;
    Err e = {0};
    CHECK(backend_cpu_create(&bk, &e) == ST_OK && comm_single_create(&c, &e) == ST_OK);
    if (!bk || !c) return;
    uint8_t q[4] = {0x38, 0x40, 0x44, 0x48}; /* E4M3 1, 2, 3, 4 */
    float rec[3] = {1.0f, 1.0f, 4.0f};       /* scale, scale_inv, amax */
    Backend other = *bk;
    other.name = "cuda";
    CHECK(comm_all_reduce_fp8(c, CO_DP_GRAD_AR, &other, q, rec, 4, DT_E4M3, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "needs host memory");
    CHECK_CONTAINS(e.msg, "cuda");
    CHECK_EQ_U64(c->total.calls, 0);
    CHECKF(comm_all_reduce_fp8(c, CO_DP_GRAD_AR, bk, q, rec, 4, DT_E4M3, &e) == ST_OK, "%s", e.msg);
    CHECK(rec[0] == 112.0f && rec[1] == 1.0f / 112.0f && rec[2] == 4.0f);
    const float want[4] = {112, 224, 320, 448};
    for (int i = 0; i < 4; i++)
        CHECKF(fp8_decode(DT_E4M3, q[i]) == want[i], "code %d decodes to %g, expected %g", i,
               (double)fp8_decode(DT_E4M3, q[i]), (double)want[i]);
    c->destroy(c);
    bk->destroy(bk);
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "2", 0); /* split large GEMMs even on a one-core machine (unless set) */
    RUN(test_single_rank_comm);
    RUN(test_fp8_collective_needs_host_memory);
    RUN(test_tensor_list);
    RUN(test_tensor_list_swiglu);
    RUN(test_step_reduces_every_gradient);
    RUN(test_byte_stream);
    RUN(test_synthetic_entropy);
    RUN(test_gemm_output_dtype);
    RUN(test_param_names);
    RUN(test_threaded_gemm_exact);
    RUN(test_catalog_sms);
    RUN(test_rng_reference);
    RUN(test_act_dtype_default);
    return test_summary();
}
