/* tests/unit/test_oracle_exec_core.c — the executor core's refusals and edge values, each worked
 * out by hand: the arena's per-term byte counts and what they read after an error
 * (exec/model/arena.c), a parameter kind outside the table (model_layout.c), the pipeline check on one
 * stage and on pipelines it cannot run (model_pp.c), a checkpoint's data position checked against
 * the stream it resumes (data.c), and the activation check the backends share for an MLP kind that
 * does not exist (backend_check.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/model/arena.h"
#include "exec/backend/backend.h"
#include "exec/backend/data.h"
#include "check/compare.h"
#include "exec/measure/device_measure.h"
#include "exec/measure/measurement.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* Per term: phase 0 summed, plus the largest phase. FP32 "a" 10 elements (40 B) and BF16 "b" 3 (6 B) in
 * phase 0, then phase 1 FP32 5 (20 B), phase 2 FP32 8 (32 B) and FP32 2 (8 B): 46 + max(20, 40) = 86 B.
 * A second term with one E4M3 tensor of 7 elements: 7 B; every other term 0. */
static void test_arena_bytes(void)
{
    ArenaSpecs s = {0};
    uint64_t bytes[ARENA_TERMS];
    Err e = {0};
    const ArenaTerm t = MT_TRANSIENT, u = MT_WEIGHT_GEMM;
    arena_add(&s, t, DT_FP32, 10, NULL, "a", -1);
    arena_add(&s, t, DT_BF16, 3, NULL, "b", -1);
    arena_add_phase(&s, t, 1, DT_FP32, 5, NULL, "p1");
    arena_add_phase(&s, t, 2, DT_FP32, 8, NULL, "p2a");
    arena_add_phase(&s, t, 2, DT_FP32, 2, NULL, "p2b");
    arena_add(&s, u, DT_E4M3, 7, NULL, "w", 0);
    CHECKF(arena_specs_bytes(&s, bytes, &e) == ST_OK, "%s", e.msg);
    for (int k = 0; k < ARENA_TERMS; k++) CHECK_EQ_U64(bytes[k], k == (int)t ? 86 : k == (int)u ? 7 : 0);
    /* a tensor whose bytes overflow 2^64 (2^62 FP32 elements = 2^64 bytes): the listing fails, and every term
     * then reads 0 bytes — not the sums so far, not any other value */
    arena_add(&s, t, DT_FP32, 1ull << 62, NULL, "huge", -1);
    e = (Err){0};
    CHECK_EQ_INT(arena_specs_bytes(&s, bytes, &e), ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "overflows 2^64");
    for (int k = 0; k < ARENA_TERMS; k++)
        CHECKF(bytes[k] == 0, "term %d: %llu bytes after the overflow", k, (unsigned long long)bytes[k]);
    arena_specs_free(&s);
    /* two tensors each below 2^64 whose sum is not: 2^61 FP32 elements (2^63 B) twice in one term */
    arena_add(&s, t, DT_FP32, 1ull << 61, NULL, "half1", -1);
    arena_add(&s, t, DT_FP32, 1ull << 61, NULL, "half2", -1);
    arena_add(&s, u, DT_E4M3, 7, NULL, "w", 0);
    e = (Err){0};
    CHECK_EQ_INT(arena_specs_bytes(&s, bytes, &e), ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, arena_term_name(t));
    for (int k = 0; k < ARENA_TERMS; k++) CHECK_EQ_U64(bytes[k], 0);
    arena_specs_free(&s);
}

/* Every kind outside [0, PK_COUNT) is "?", not a read past the table: the count itself, one past it, and a
 * negative kind (as unsigned, far past it). */
static void test_param_name_outside(void)
{
    CHECK_STR(model_param_name(PK_WTE), "wte");
    CHECK_STR(model_param_name(PK_LM_HEAD), "lm_head");
    CHECK_STR(model_param_name(PK_ROUTER_W), "router.w");
    CHECK_STR(model_param_name((ParamKind)(PK_COUNT - 1)), "mtp.final_norm.b");
    CHECK_STR(model_param_name(PK_COUNT), "?");
    CHECK_STR(model_param_name((ParamKind)(PK_COUNT + 1)), "?");
    CHECK_STR(model_param_name((ParamKind)(PK_COUNT + 7)), "?");
    CHECK_STR(model_param_name((ParamKind)-1), "?");
}

/* The pipeline check judges pipelines only: one stage passes whatever cp / vpp / stage fields hold
 * (model_check refuses cp itself, first, with its own message); two or more stages refuse cp > 1 and
 * vpp > 1 (ST_UNAVAILABLE, naming pp, cp and vpp) and a stage without layers (ST_USAGE). */
static void test_pp_check(void)
{
    ModelSpec m = fx_gpt(); /* 2 layers */
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p, q;
    Err e = {0};
    CHECKF(fx_plan_par(&m, &r, 1, 1, 1, 1, &p, &e) == ST_OK, "%s", e.msg);
    q = p;
    q.in.cp = 2;
    CHECKF(model_pp_check(&q, &e) == ST_OK, "pp 1 cp 2: %s", e.msg);
    q = p;
    q.in.vpp = 2;
    CHECKF(model_pp_check(&q, &e) == ST_OK, "pp 1 vpp 2: %s", e.msg);
    q = p;
    q.first_layers = q.mid_layers = q.last_layers = 0;
    CHECKF(model_pp_check(&q, &e) == ST_OK, "pp 1, no stage layers: %s", e.msg);
    q.in.cp = 0;
    CHECKF(model_pp_check(&q, &e) == ST_OK, "pp 1 cp 0: %s", e.msg);
    /* model_check's own refusal of cp (the public path) names context parallelism, not the pipeline */
    q = p;
    q.in.cp = 2;
    e = (Err){0};
    CHECK_EQ_INT(model_check(&q, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "context parallelism is not implemented");
    CHECK(strstr(e.msg, "--pp") == NULL);

    /* two stages of one layer each */
    CHECKF(fx_plan_par(&m, &r, 1, 1, 1, 2, &p, &e) == ST_OK, "%s", e.msg);
    CHECK(p.first_layers == 1 && p.last_layers == 1);
    CHECKF(model_pp_check(&p, &e) == ST_OK, "pp 2: %s", e.msg);
    q = p;
    q.in.vpp = 2;
    e = (Err){0};
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "--pp 2 with cp 1, vpp 2");
    q = p;
    q.in.cp = 2;
    e = (Err){0};
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "--pp 2 with cp 2, vpp 1");
    q = p;
    q.in.vpp = 1; /* vpp 1 is one chunk per stage: runs */
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_OK);
    q.first_layers = 0;
    e = (Err){0};
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--pp 2: a stage has no layers (first 0, middle 1, last 1)");
    q = p;
    q.last_layers = 0;
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_USAGE);
    q = p;
    q.mid_layers = 0; /* (the plan's 2-layer pp 2 split: first 1, middle 1, last 1) two stages need no middle */
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_OK);
    /* three stages need middle layers; two do not */
    q = p;
    q.in.pp = 3, q.mid_layers = 0;
    e = (Err){0};
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--pp 3: a stage has no layers (first 1, middle 0, last 1)");
    q.mid_layers = 1;
    CHECK_EQ_INT(model_pp_check(&q, &e), ST_OK);
}

/* A byte stream of 12 bytes: a checkpoint position inside it (0 .. 11) resumes there; 12 (the length) and
 * beyond are refused, naming the position, the file and its length. Another kind of stream, or other
 * content, is refused too. Resuming at 11 with windows of 3: 11 + 3 + 1 = 15 > 12, so the next window
 * starts again at 0 ("abc" -> targets "bcd"). */
static void test_data_position(void)
{
    char path[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fp8plan-data-core-%d.txt", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs("abcdefghijkl", f);
    fclose(f);
    DataStream d;
    Err e = {0};
    CHECKF(data_bytes_file(&d, path, 256, 3, &e) == ST_OK, "%s", e.msg);
    unlink(path);
    CHECK_EQ_U64(d.len, 12);
    DataState s = d.st;
    s.pos = 12;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "data position 12 is beyond");
    CHECK_CONTAINS(e.msg, "(12 bytes)");
    CHECK_EQ_U64(d.st.pos, 0); /* left as it was */
    s.pos = 1000;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    s.pos = 11, s.batches = 5;
    CHECKF(data_restore(&d, &s, &e) == ST_OK, "%s", e.msg);
    CHECK(d.st.pos == 11 && d.st.batches == 5);
    int32_t in[3], tgt[3];
    data_next(&d, 1, 3, in, tgt);
    CHECK(in[0] == 'a' && in[2] == 'c' && tgt[0] == 'b' && tgt[2] == 'd');
    CHECK(d.st.pos == 3 && d.st.batches == 6);
    s = d.st;
    s.source ^= 1;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "other data than");
    s = d.st;
    s.kind = DATA_SYNTHETIC;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "trained on synthetic data, this run uses byte-level text data");
    data_free(&d);

    /* synthetic over 64 tokens: 64 symbols, the current one must be below 64 */
    CHECK_EQ_INT(data_synthetic(&d, 64, 3, &e), ST_OK);
    CHECK_EQ_INT((int)d.k, 64);
    s = d.st;
    s.pos = 1u << 30; /* no meaning for a synthetic stream: not checked */
    s.prev = 63;
    CHECKF(data_restore(&d, &s, &e) == ST_OK, "%s", e.msg);
    s.prev = 64;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "symbol 64 of 64");
    s.prev = 0, s.kind = DATA_BYTES;
    CHECK_EQ_INT(data_restore(&d, &s, &e), ST_DATA);
    CHECK_CONTAINS(e.msg, "trained on byte-level text data, this run uses synthetic data");
    data_free(&d);
}

/* GELU and SwiGLU are the MLP kinds; any other value, below or above them, is refused by both activation
 * operations before any memory is read (ST_USAGE naming the operation and the value). */
static void test_act_kind_refused(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    float x[4] = {1, 2, 3, 4}, y[4] = {0}, dy[4] = {1, 1, 1, 1}, dx[4] = {0};
    const int bad[3] = {MLP_COUNT_, MLP_COUNT_ + 5, -1};
    for (int i = 0; i < 3; i++) {
        ActFwdDesc f = {.mlp = (MlpType)bad[i], .rows = 1, .cols = 2, .dtype = DT_FP32, .in = x, .out = y};
        ActBwdDesc b = {.mlp = (MlpType)bad[i], .rows = 1, .cols = 2, .dtype = DT_FP32, .in = x, .dout = dy, .din = dx};
        char want[64];
        e = (Err){0};
        CHECK_EQ_INT(bk->act_fwd(bk, &f, &e), ST_USAGE);
        snprintf(want, sizeof want, "act_fwd: unknown activation %d", bad[i]);
        CHECK_CONTAINS(e.msg, want);
        e = (Err){0};
        CHECK_EQ_INT(bk->act_bwd(bk, &b, &e), ST_USAGE);
        snprintf(want, sizeof want, "act_bwd: unknown activation %d", bad[i]);
        CHECK_CONTAINS(e.msg, want);
        CHECK(y[0] == 0 && dx[0] == 0); /* nothing written */
    }
    /* the two real kinds pass: GELU(0) = 0 and SwiGLU(gate 0, up 5) = silu(0) x 5 = 0 */
    float z[2] = {0, 5}, o[2] = {7, 7};
    ActFwdDesc g = {.mlp = MLP_GELU, .rows = 1, .cols = 1, .dtype = DT_FP32, .in = z, .out = o};
    CHECKF(bk->act_fwd(bk, &g, &e) == ST_OK, "%s", e.msg);
    CHECK(o[0] == 0.0f);
    ActFwdDesc sw = {.mlp = MLP_SWIGLU, .rows = 1, .cols = 1, .dtype = DT_FP32, .in = z, .out = o + 1};
    CHECKF(bk->act_fwd(bk, &sw, &e) == ST_OK, "%s", e.msg);
    CHECK(o[1] == 0.0f);
    bk->destroy(bk);
}

/* The optimizers' shared checks, each refusal from a descriptor that otherwise runs: ST_USAGE naming the
 * operation and what is wrong, the weight left as it was. The valid update, by hand (AdamW, FP32 master 2,
 * zero moments, gradient 1, lr 0.125, betas 0.5 / 0.75, eps 1, no decay, step 1): m = 0.5, v = 0.25,
 * m̂ = 0.5 / (1 - 0.5) = 1, v̂ = 0.25 / (1 - 0.75) = 1, w = 2 - 0.125 x 1 / (1 + 1) = 1.9375. */
typedef struct {
    float master, m, v, g, w;
    float rec[3];
} Slot;

static AdamWDesc adamw_desc(Slot *s)
{
    *s = (Slot){.master = 2, .g = 1, .w = 2, .rec = {1, 1, 0}};
    return (AdamWDesc){.n = 1,
                       .h = {.lr = 0.125f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1.0f, .step = 1, .grad_scale = 1.0f},
                       .master = &s->master,
                       .m = &s->m,
                       .v = &s->v,
                       .grad = &s->g,
                       .grad_dtype = DT_FP32,
                       .weight = &s->w,
                       .weight_dtype = DT_FP32};
}

static void expect_adamw(Backend *bk, const AdamWDesc *d, const Slot *s, const char *msg)
{
    Err e = {0};
    CHECKF(bk->adamw(bk, d, &e) == ST_USAGE, "'%s' not refused", msg);
    CHECK_CONTAINS(e.msg, msg);
    CHECKF(s->master == 2 && s->w == 2 && s->m == 0 && s->v == 0, "refused ('%s') but written", msg);
}

static void test_optim_refusals(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    Slot s;
    AdamWDesc d = adamw_desc(&s);
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(s.master == 1.9375f && s.w == 1.9375f && s.m == 0.5f && s.v == 0.25f);
    e = (Err){0};
    CHECK_EQ_INT(bk->adamw(bk, NULL, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "adamw: no descriptor");
    d = adamw_desc(&s), d.h.step = 0;
    expect_adamw(bk, &d, &s, "adamw: step is 1-based (got 0)");
    const float betas[4] = {1.0f, -0.25f, NAN, 1.5f};
    for (int i = 0; i < 4; i++) {
        d = adamw_desc(&s), d.h.beta1 = betas[i];
        expect_adamw(bk, &d, &s, "adamw: betas must be in [0, 1)");
        d = adamw_desc(&s), d.h.beta2 = betas[i];
        expect_adamw(bk, &d, &s, "adamw: betas must be in [0, 1)");
    }
    d = adamw_desc(&s), d.h.beta1 = 0.0f, d.h.beta2 = 0.0f; /* 0 is inside [0, 1): m = g, v = g² -> 1.9375 too */
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "betas 0: %s", e.msg);
    CHECK(s.master == 1.9375f);
    for (int k = 0; k < 4; k++) {
        d = adamw_desc(&s);
        float *f = k == 0 ? &d.h.lr : k == 1 ? &d.h.eps : k == 2 ? &d.h.weight_decay : &d.h.grad_scale;
        *f = k % 2 ? NAN : INFINITY;
        expect_adamw(bk, &d, &s, "adamw: non-finite hyper-parameter");
    }
    d = adamw_desc(&s), d.grad = NULL;
    expect_adamw(bk, &d, &s, "adamw: no gradient");
    d = adamw_desc(&s), d.grad_dtype = DT_FP16;
    expect_adamw(bk, &d, &s, "adamw: gradient dtype fp16 is not fp32, bf16, e4m3 or e5m2");
    d = adamw_desc(&s), d.grad_dtype = DT_E8M0;
    expect_adamw(bk, &d, &s, "adamw: gradient dtype e8m0 is not");
    d = adamw_desc(&s), d.grad_dtype = DT_E4M3;
    expect_adamw(bk, &d, &s, "adamw: FP8 gradient without scale_inv");
    d = adamw_desc(&s), d.weight_dtype = DT_E4M3;
    expect_adamw(bk, &d, &s, "adamw: working weight dtype e4m3");
    d = adamw_desc(&s), d.m = NULL;
    expect_adamw(bk, &d, &s, "adamw: missing state");
    d = adamw_desc(&s), d.v = NULL;
    expect_adamw(bk, &d, &s, "adamw: missing state");
    /* without a master the working weight is updated itself: it must exist and be FP32 */
    d = adamw_desc(&s), d.master = NULL, d.weight = NULL;
    expect_adamw(bk, &d, &s, "adamw: without a master the working weight must be fp32");
    d = adamw_desc(&s), d.master = NULL, d.weight_dtype = DT_BF16;
    expect_adamw(bk, &d, &s, "adamw: without a master the working weight must be fp32");
    d = adamw_desc(&s), d.master = NULL; /* FP32 weight 2 -> 1.9375 in place */
    CHECKF(bk->adamw(bk, &d, &e) == ST_OK, "%s", e.msg);
    CHECK(s.w == 1.9375f && s.master == 2);

    /* FP8-LM's Adam: the same hyper-parameter and gradient checks, its states all needed, one amax pass */
    uint16_t master = 0x4000; /* FP16 2 */
    uint8_t m8 = 0;
    uint16_t v16 = 0;
    float g = 1, rec[3][3] = {{1, 1, 2}, {1, 1, 0}, {1, 1, 0}}, amax[3] = {0};
    Fp8AdamDesc f = {.n = 1,
                     .h = {.lr = 0.125f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1.0f, .step = 0, .grad_scale = 1.0f},
                     .master = &master,
                     .master_rec = rec[0],
                     .m = &m8,
                     .m_rec = rec[1],
                     .v = &v16,
                     .v_rec = rec[2],
                     .grad = &g,
                     .grad_dtype = DT_FP32};
    e = (Err){0};
    CHECK_EQ_INT(bk->fp8_adam(bk, &f, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "fp8_adam: step is 1-based (got 0)");
    f.h.step = 1, f.grad = NULL;
    CHECK_EQ_INT(bk->fp8_adam(bk, &f, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "fp8_adam: no gradient");
    f.grad = &g, f.amax_out = amax, f.amax_in = amax;
    CHECK_EQ_INT(bk->fp8_adam(bk, &f, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "fp8_adam: amax_out and amax_in together");
    f.amax_out = NULL, f.amax_in = NULL;
    void **state[3] = {(void **)&f.master, (void **)&f.m, (void **)&f.v};
    for (int k = 0; k < 3; k++) {
        void *keep = *state[k];
        *state[k] = NULL;
        e = (Err){0};
        CHECK_EQ_INT(bk->fp8_adam(bk, &f, &e), ST_USAGE);
        CHECK_CONTAINS(e.msg, "fp8_adam: missing state");
        *state[k] = keep;
    }
    CHECK(master == 0x4000 && m8 == 0 && v16 == 0);
    bk->destroy(bk);
}

/* The collective rows are per step: the run's counts over its steps. 2 steps that moved 1,100 bus bytes and
 * 2,200 payload bytes in 11 calls: 550, 1,100 and 5.5 per step. A run that stopped before its first step
 * completed (0 steps) shows what it counted as it is: 1,100, 2,200, 11 (one step's worth, not / 0 and not
 * scaled). */
static void test_compare_per_step(void)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    static Measurement ms;
    static Comparison c;
    Err e = {0};
    CHECKF(fx_plan_dp(&m, &r, 1, 1, 2, SHARD_NONE, &p, &e) == ST_OK, "%s", e.msg);
    const char *name = coll_name(CO_DP_GRAD_AR);
    CHECK(p.coll[CO_DP_GRAD_AR].calls > 0);
    char pay[48], calls[48];
    snprintf(pay, sizeof pay, "%s.payload", name);
    snprintf(calls, sizeof calls, "%s.calls", name);
    Backend *bk = NULL;
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    CHECKF(measure_init(&ms, bk, 2, &e) == ST_OK, "%s", e.msg);
    ms.coll[CO_DP_GRAD_AR].bus_bytes = 1100, ms.coll[CO_DP_GRAD_AR].payload_bytes = 2200;
    ms.coll[CO_DP_GRAD_AR].calls = 11;
    const uint32_t steps[2] = {2, 0};
    const double want[2][3] = {{550, 1100, 5.5}, {1100, 2200, 11}};
    for (int k = 0; k < 2; k++) {
        ms.steps = steps[k];
        compare(&p, &ms, NULL, &c);
        CHECK_NEAR(fx_row(&c, name)->measured, want[k][0], 0);
        CHECK_NEAR(fx_row(&c, pay)->measured, want[k][1], 0);
        CHECK_NEAR(fx_row(&c, calls)->measured, want[k][2], 0);
    }
    measure_free(&ms);
    bk->destroy(bk);
}

/* The device measurements when the backend's device_info fails mid-run (a GPU backend's hooks, scripted: memory
 * in use by hand, in MiB). 600 in use when the first step begins, the forward loads 40 of kernels, the
 * collectives 64 of buffers; device_info answers (no private scratch: 0) until the step ends, then fails.
 * The first step's lazy rise is 704 - 600 - 64 - (private scratch: unknown, so 0) = 40 MiB exactly; the
 * failure is kept (status and message) for the run to report. */
static uint64_t fk_used;
static int fk_info_fails;

static Status fk_mem(Backend *bk, uint64_t *fr, uint64_t *tot, Err *e)
{
    (void)bk, (void)e;
    *tot = 1ull << 40, *fr = *tot - fk_used;
    return ST_OK;
}

static Status fk_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)bk;
    memset(out, 0, sizeof *out);
    if (fk_info_fails) return err_set(e, ST_UNAVAILABLE, "device_info: the device is gone");
    snprintf(out->name, sizeof out->name, "scripted");
    return ST_OK;
}

static Status fk_times(Backend *bk, int enable, double s[BK_OPCAT_COUNT], Err *e)
{
    (void)bk, (void)enable, (void)e;
    for (int i = 0; s && i < BK_OPCAT_COUNT; i++) s[i] = 0;
    return ST_OK;
}

static void test_devm_info_fails(void)
{
    const uint64_t MiB = 1ull << 20;
    Backend bk = {.name = "scripted", .mem_info = fk_mem, .device_info = fk_info, .op_times = fk_times};
    DevMeasure m;
    fk_used = 600 * MiB, fk_info_fails = 0;
    devm_init(&m, &bk);
    CHECK(m.have);
    double sec[BK_OPCAT_COUNT];
    devm_step_begin(&m, &bk);
    devm_phase(&m, &bk, -1);
    fk_used += 40 * MiB;
    devm_phase(&m, &bk, PHASE_FWD);
    devm_phase(&m, &bk, PHASE_BWD);
    fk_used += 64 * MiB;
    devm_phase(&m, &bk, PHASE_COMM);
    devm_phase(&m, &bk, PHASE_OPT);
    fk_info_fails = 1;
    CHECK(devm_step_end(&m, &bk, sec));
    CHECK_EQ_U64(m.first_begin, 600 * MiB);
    CHECK_EQ_U64(m.private0, 0);
    CHECK_EQ_U64(m.grew[PHASE_COMM], 64 * MiB);
    CHECK_EQ_U64(m.lazy, 40 * MiB);
    CHECK_EQ_INT(m.st, ST_UNAVAILABLE);
    CHECK_CONTAINS(m.msg, "the device is gone");
}

int main(void)
{
    RUN(test_arena_bytes);
    RUN(test_param_name_outside);
    RUN(test_pp_check);
    RUN(test_data_position);
    RUN(test_act_kind_refused);
    RUN(test_optim_refusals);
    RUN(test_compare_per_step);
    RUN(test_devm_info_fails);
    return test_summary();
}
