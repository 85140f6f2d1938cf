/* tests/unit/test_oracle_exec_more.c — more of the executor core's rules, each against a value or a
 * verdict worked out by hand: which recipes the executor runs (exec/backend/recipe.c: granularity matters only
 * with FP8 GEMMs, an amax history only with delayed scaling), the delayed-scaling bank check
 * (exec/backend/backend_check.c), what ZeRO-1 / the distributed optimizer refuse (exec/model/model_shard.c), the
 * per-category memory totals of measured versus planned (check/compare.c), and the zeroed Adam
 * moments `fp8plan calibrate` times AdamW on (exec/measure/calibrate_host.c), and how the CPU backend cuts
 * a GEMM into panels (exec/cpu/cpu_gemm.c), seen through the per-worker scratch it sizes for them, and that a
 * pipeline checkpoint's save gives back every buffer it gathers into (exec/ckpt/ckpt_layout.c); the arena's regions
 * and offsets (exec/model/arena.c), the CPU backend's aligned per-worker scratch and its refusal of an arena larger
 * than the machine's memory (exec/cpu/cpu_backend.c). */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "exec/model/arena.h"
#include "exec/backend/backend.h"
#include "exec/ckpt/ckpt.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/measure/calibrate.h"
#include "check/compare.h"
#include "exec/measure/measurement.h"
#include "exec/model/model_internal.h"
#include "exec/backend/par.h"
#include "exec/backend/recipe.h"
#include "support/exec_fixtures.h"
#include "test.h"

/* Scale granularity is a property of FP8 GEMMs: a BF16 recipe whose (unused) granularity columns say 1x128 /
 * 128x128 runs as it would with per-tensor ones; the same columns on te-fp8 are refused (block scales run
 * with current scaling, DeepSeek-V3's combination), and so is MXFP8's 1x32. */
static void test_recipe_granularity(void)
{
    Err e = {0};
    Recipe r = fx_recipe("megatron-bf16");
    r.act_gran = GRAN_1X128, r.weight_gran = GRAN_128X128;
    CHECKF(exec_recipe_check(&r, &e) == ST_OK, "%s", e.msg);
    r = fx_recipe("te-fp8");
    r.act_gran = GRAN_1X128, r.weight_gran = GRAN_128X128;
    e = (Err){0};
    CHECK_EQ_INT(exec_recipe_check(&r, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "recipe te-fp8: block scales run with current scaling");
    r.scaling = SCALING_CURRENT;
    CHECKF(exec_recipe_check(&r, &e) == ST_OK, "%s", e.msg);
    r.act_gran = r.weight_gran = GRAN_1X32;
    CHECK_EQ_INT(exec_recipe_check(&r, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "1x32/1x32 scale granularity is not run by the executor yet");
}

/* An amax history is what delayed scaling reads: delayed scaling with none is refused (ST_USAGE); current
 * scaling keeps no history, so 0 is fine there. */
static void test_recipe_history(void)
{
    Err e = {0};
    Recipe r = fx_recipe("te-fp8");
    r.amax_history = 0;
    CHECK_EQ_INT(exec_recipe_check(&r, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "recipe te-fp8: delayed scaling needs an amax history of at least 1");
    r = fx_recipe("te-fp8-current");
    r.amax_history = 0;
    e = (Err){0};
    CHECKF(exec_recipe_check(&r, &e) == ST_OK, "%s", e.msg);
    r.amax_history = 1;
    CHECKF(exec_recipe_check(&r, &e) == ST_OK, "%s", e.msg);
}

/* The bank check takes the two algorithms fp8/delayed.h names (0 max, 1 most recent) and refuses any other,
 * naming it, before a backend reads the history with it. */
static void test_bank_algo(void)
{
    float hist[2] = {1.0f, 2.0f}, scale[1] = {1.0f}, scale_inv[1] = {1.0f};
    ScalingBank b = {
        .n = 1, .history_len = 2, .fmt = DT_E4M3, .amax_history = hist, .scale = scale, .scale_inv = scale_inv};
    Err e = {0};
    b.algo = AMAX_ALGO_MAX;
    CHECKF(backend_check_scaling_delayed_update(NULL, &b, &e) == ST_OK, "%s", e.msg);
    b.algo = AMAX_ALGO_MOST_RECENT;
    CHECKF(backend_check_scaling_delayed_update(NULL, &b, &e) == ST_OK, "%s", e.msg);
    const int bad[2] = {2, -1};
    for (int i = 0; i < 2; i++) {
        b.algo = (AmaxAlgo)bad[i];
        e = (Err){0};
        CHECK_EQ_INT(backend_check_scaling_delayed_update(NULL, &b, &e), ST_USAGE);
        char want[64];
        snprintf(want, sizeof want, "delayed scaling: unknown amax algorithm %d", bad[i]);
        CHECK_CONTAINS(e.msg, want);
    }
}

/* The distributed optimizer shards what the recipe's shard masks name. Megatron-BF16 with the linear-weight
 * class's master, m and v sharded and nothing of the other-parameter class: that class is replicated, so how
 * its weights would be gathered (here FP32, unlike its BF16 weights — a mismatch the check refuses for a
 * sharded class) does not matter, and the layout runs. Shard the other class's m too and the same mismatch
 * is refused, naming the class and both dtypes. */
static void test_shard_only_sharded_classes(void)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    r.gemm.shard_mask = 1u << STATE_MASTER | 1u << STATE_M | 1u << STATE_V;
    r.other.shard_mask = 0;
    r.other_comm_param_gather = DT_FP32;
    static Plan p;
    Err e = {0};
    CHECKF(fx_plan_dp(&m, &r, 1, 1, 2, SHARD_DIST_OPT, &p, &e) == ST_OK, "%s", e.msg);
    CHECKF(model_shard_check(&p, &e) == ST_OK, "%s", e.msg);
    r.other.shard_mask = 1u << STATE_M;
    e = (Err){0};
    CHECKF(fx_plan_dp(&m, &r, 1, 1, 2, SHARD_DIST_OPT, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(model_shard_check(&p, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "recipe megatron-bf16, dist-opt: other-parameter weights are gathered in fp32 but kept "
                          "in bf16");
}

/* FP8-LM's linears as the catalog's fp8lm has them: the fixture's fp8lm states, with the FP8 copies gathered
 * and the gradients reduce-scattered in E4M3 (fx_recipe keeps Megatron's BF16 gather and FP32 reduce). */
static Recipe fp8lm_sharded(void)
{
    Recipe r = fx_recipe("fp8lm");
    r.comm_param_gather = r.comm_dp_grad = DT_E4M3;
    return r;
}

/* Scaled states outside FP8-LM's linears are refused under ZeRO-1, and the message says what is sharded
 * instead, every clause of it. fp8lm_sharded itself passes; each case changes one clause alone: current scaling;
 * an FP16 -> FP32 master; a kept working weight (BF16); FP8 copies gathered in BF16; forward GEMMs and
 * their gather in E5M2 while the row copy stays E4M3 (a copy not in the forward format, E4M3 < E5M2 in
 * enum order); the amax reduced over TP only; E4M3 gradients reduce-scattered in E5M2. */
static void test_shard_scaled_refusal(void)
{
    enum { SCALING, MASTER, WEIGHT, GATHER, ROW, AMAX, GRAD, NCASE };
    static const char *const what[NCASE] = {"current scaling",        "FP32 master", "BF16 weight",     "BF16 gather",
                                            "E4M3 row, E5M2 forward", "TP amax",     "E5M2 grad reduce"};
    ModelSpec m = fx_gpt();
    static Plan p;
    Err e = {0};
    Recipe r = fp8lm_sharded();
    CHECKF(fx_plan_dp(&m, &r, 1, 1, 2, SHARD_ZERO1, &p, &e) == ST_OK, "%s", e.msg);
    CHECKF(model_shard_check(&p, &e) == ST_OK, "fp8lm as it is: %s", e.msg);
    CHECK_EQ_INT(r.fp8_row, DT_E4M3); /* the cases below start from these */
    CHECK_EQ_INT(r.gemm_fwd, DT_E4M3);
    CHECK_EQ_INT(r.amax_reduce, AMAX_ALL);
    for (int k = 0; k < NCASE; k++) {
        r = fp8lm_sharded();
        snprintf(r.name, sizeof r.name, "fp8lm-%d", k);
        switch (k) {
        case SCALING: r.scaling = SCALING_CURRENT; break;
        case MASTER: r.gemm.dt[STATE_MASTER] = DT_FP32; break;
        case WEIGHT: r.gemm.dt[STATE_WEIGHT] = DT_BF16; break;
        case GATHER: r.comm_param_gather = DT_BF16; break;
        case ROW: r.gemm_fwd = r.comm_param_gather = DT_E5M2; break;
        case AMAX: r.amax_reduce = AMAX_TP; break;
        case GRAD: r.comm_dp_grad = DT_E5M2; break;
        }
        e = (Err){0};
        Status st = fx_plan_dp(&m, &r, 1, 1, 2, SHARD_ZERO1, &p, &e);
        CHECKF(st == ST_OK, "%s: the plan: %s", what[k], e.msg);
        if (st) continue;
        e = (Err){0};
        CHECKF(model_shard_check(&p, &e) == ST_UNAVAILABLE, "%s: not refused", what[k]);
        char want[64];
        snprintf(want, sizeof want, "recipe fp8lm-%d, zero1: linear-weight states with", k);
        CHECKF(strstr(e.msg, want) != NULL, "%s: '%s'", what[k], e.msg);
        CHECKF(strstr(e.msg, "sharded only as FP8-LM's linears are (scaled FP16 master, no working weight, FP8 "
                             "copies gathered in the forward format, delayed scaling with the amax reduced over "
                             "all ranks, gradients reduced in their own dtype)") != NULL,
               "%s: '%s'", what[k], e.msg);
    }
}

/* The memory totals per category. GPT fixture, megatron-bf16, one rank: parameters 28,032 — wte 64 x 32 =
 * 2,048, wpe 16 x 32 = 512, per layer 2 LayerNorms 2 x 64 = 128, QKV 96 x 32 + 96 = 3,168, proj 32 x 32 + 32
 * = 1,056, FC1 128 x 32 + 128 = 4,224, FC2 32 x 128 + 32 = 4,128 (12,704 a layer, 25,408 for 2), final norm
 * 64; at 2 (BF16 weight) + 4 (FP32 master) + 4 (FP32 grad) + 4 + 4 (FP32 m, v) = 18 B each: the planned state
 * total is 28,032 x 18 = 504,576 B. Measured, placed[t] = 2^t bytes for every term t: the state terms are
 * t = 0, 1 (weights), 4, 5 (masters), 6, 7 (grads), 8, 9 (m), 10, 11 (v): 1 + 2 + 16 + 32 + 64 + 128 + 256 +
 * 512 + 1,024 + 2,048 = 4,083 B, checked byte for byte (exact). The activation total is a bound (the transient
 * term in it is one). */
static void test_compare_category_totals(void)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    static Measurement ms;
    static Comparison c;
    Err e = {0};
    CHECKF(fx_plan(&m, &r, 1, 1, &p, &e) == ST_OK, "%s", e.msg);
    Backend *bk = NULL;
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    CHECKF(measure_init(&ms, bk, 2, &e) == ST_OK, "%s", e.msg);
    for (int t = 0; t < MT_COUNT_; t++) ms.placed[t] = 1ull << t;
    compare(&p, &ms, NULL, &c);
    const MeasureRow *s = fx_row(&c, "total_state");
    CHECK_EQ_INT(s->section, CMP_MEMORY);
    CHECK_EQ_INT(s->mode, MEASURE_EXACT);
    CHECK(s->has_planned && s->has_measured);
    CHECK_NEAR(s->planned, 504576.0, 0.0);
    CHECK_NEAR(s->measured, 4083.0, 0.0);
    CHECK_EQ_INT(s->verdict, VERDICT_MISMATCH);
    const MeasureRow *a = fx_row(&c, "total_activation");
    CHECK_EQ_INT(a->mode, MEASURE_BOUND);
    measure_free(&ms);
    bk->destroy(bk);
}

/* `fp8plan calibrate` times AdamW on moments it zeroed: its first AdamW call must find m = v = 0 in every one
 * of its n elements — n = Vp·C + L·Σ out·in = 128 x 32 + 2 x 12,288 = 28,672 for the GPT fixture (see
 * test_oracle_exec_calibrate.c) — even when the backend hands out memory full of 0xFF bytes (NaN as FP32),
 * as a reused device allocation may be. It calls AdamW as a run's optimizer does, adamw_multi with a desc a tensor:
 * the embedding (128 x 32 = 4,096), then each layer's QKV 96 x 32 = 3,072, proj 32 x 32 = 1,024, FC1 128 x 32 =
 * 4,096 and FC2 32 x 128 = 4,096: 1 + 2 x 4 = 9 tensors, back to back in the buffers. */
static Backend *cal_bk;
static Status (*cal_alloc)(Backend *, uint64_t, void **, Err *);
static Status (*cal_adamw_multi)(Backend *, const AdamWMultiDesc *, Err *);
static int cal_calls, cal_tensors, cal_adjacent;
static uint64_t cal_n, cal_nonzero, cal_first;

static Status poison_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    Status st = cal_alloc(bk, bytes, out, e);
    if (!st && *out) memset(*out, 0xFF, (size_t)bytes);
    return st;
}

static Status watch_adamw_multi(Backend *bk, const AdamWMultiDesc *md, Err *e)
{
    if (cal_calls++ == 0) {
        cal_tensors = (int)md->count, cal_adjacent = 1;
        cal_first = md->count ? md->list[0].n : 0;
        for (uint32_t t = 0; t < md->count; t++) {
            const AdamWDesc *d = &md->list[t];
            if (t && (const float *)d->m != (const float *)md->list[t - 1].m + md->list[t - 1].n) cal_adjacent = 0;
            cal_n += d->n;
            for (uint64_t i = 0; i < d->n; i++)
                cal_nonzero += ((const float *)d->m)[i] != 0.0f || ((const float *)d->v)[i] != 0.0f;
        }
    }
    return cal_adamw_multi(bk, md, e);
}

static void test_calibrate_zeroed_moments(void)
{
    Err e = {0};
    CHECKF(backend_cpu_create(&cal_bk, &e) == ST_OK, "%s", e.msg);
    CHECK(cal_bk != NULL);
    if (!cal_bk) return;
    cal_alloc = cal_bk->alloc, cal_adamw_multi = cal_bk->adamw_multi;
    cal_bk->alloc = poison_alloc, cal_bk->adamw_multi = watch_adamw_multi;
    Calibration *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    ModelSpec m = fx_gpt();
    if (c) CHECKF(calibrate_host(cal_bk, NULL, &m, 1, 1, c, &e) == ST_OK, "%s", e.msg);
    CHECK(cal_calls >= 1);
    CHECK_EQ_U64(cal_n, 28672);
    CHECK_EQ_INT(cal_tensors, 9);
    CHECK_EQ_U64(cal_first, 4096);
    CHECK(cal_adjacent);
    CHECK_EQ_U64(cal_nonzero, 0);
    free(c);
    cal_bk->alloc = cal_alloc, cal_bk->adamw_multi = cal_adamw_multi;
    cal_bk->destroy(cal_bk);
}

/* The CPU GEMM's tiles (exec/cpu/cpu_gemm.c panel_rows): below 2·M·N·K = 4e6 FLOPs one tile, the whole streamed
 * extent; above, strips of at most 512 rows, their count rounded up to a multiple of 4 but no strip under 128
 * rows, each a multiple of 16 rows. Seen in the per-worker tile buffers it sizes (scratch slot 1, floats):
 * bias 0 + tile (panel x shared extent, rounded up to 16) x workers + 16 alignment floats, FP32 operands (no
 * decoded panel), FP8PLAN_THREADS = 2 workers (set in main). M = 16, N = 1,024: N >= M, so D's columns (N)
 * are streamed, s = 1,024, and M = 16 is shared.
 *   K = 64:  2 x 16 x 1,024 x 64 = 2,097,152 < 4e6: one panel of 1,024: 1,024 x 16 = 16,384; 2 x 16,384 + 16
 *            = 32,784 floats.
 *   K = 256: 8,388,608 >= 4e6: ceil(1,024 / 512) = 2 strips, rounded up to 4; 1,024 / 128 = 8 >= 4 keeps 4;
 *            ceil(1,024 / 4) = 256 rows (a multiple of 16): 256 x 16 = 4,096; 2 x 4,096 + 16 = 8,208 floats.
 * D itself: A all 1, B all 0.5, so every element is K x 0.5 = 32 and 128, exactly. */
static void gemm_scratch(uint64_t k, uint64_t want_floats, float want_d)
{
    enum { M = 16, N = 1024 };
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    float *a = malloc(M * k * sizeof *a), *b = malloc(N * k * sizeof *b), *d = calloc(M * N, sizeof *d);
    CHECK(bk && a && b && d);
    if (bk && a && b && d) {
        for (uint64_t i = 0; i < M * k; i++) a[i] = 1.0f;
        for (uint64_t i = 0; i < N * k; i++) b[i] = 0.5f;
        GemmDesc g = {.m = M, .n = N, .k = k, .accum = GEMM_OVERWRITE};
        g.a = (GemmOperand){.ptr = a, .dtype = DT_FP32, .layout = GEMM_K_INNER};
        g.b = (GemmOperand){.ptr = b, .dtype = DT_FP32, .layout = GEMM_K_INNER};
        g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
        CHECKF(bk->gemm(bk, &g, &e) == ST_OK, "%s", e.msg);
        CHECK_EQ_U64(((CpuImpl *)bk->impl)->cap[1], want_floats);
        uint64_t off = 0;
        for (uint64_t i = 0; i < M * N; i++) off += d[i] != want_d;
        CHECK_EQ_U64(off, 0);
    }
    free(a), free(b), free(d);
    if (bk) bk->destroy(bk);
}

static void test_gemm_panels(void)
{
    CHECK_EQ_INT(par_threads(), 2);
    gemm_scratch(64, 32784, 32.0f);
    gemm_scratch(256, 8208, 128.0f);
}

/* A pipeline checkpoint (pp 2) is saved by rank 0 from every stage's part: the parts' lengths are all-gathered,
 * then the parts gathered into one buffer of (longest part) x ranks bytes, written, and freed. Rank 0 of a
 * 2-stage GPT fixture (megatron-bf16, mbs 2, 2 micro-batches) is built on a communicator that only says its rank
 * and size; its all-gather puts this rank's length in its slot and 0 (no part) in the other, its gather (not
 * MPI) copies this rank's block. The stage's part holds at least its FP32 masters — wte 64 x 32 + wpe 16 x 32 +
 * one layer's 12,704 = 15,264 parameters x 4 B = 61,056 B — so a gathered buffer left behind would be over
 * 2 x 61,056 = 122,112 B per save; 4 saves after a first one must leave at most 4 KiB (allocator noise) more in
 * use (glibc's own count, as test_oracle_measure.c). */
static Status gather_own(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t count,
                         Dtype dtype, Err *e)
{
    (void)id, (void)bk, (void)e;
    size_t b = (size_t)count * dtype_bytes(dtype);
    memset(recv, 0, b * (size_t)c->size);
    memcpy((char *)recv + b * (size_t)c->rank, send, b);
    return ST_OK;
}

static size_t in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void test_layout_save_frees(void)
{
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    Err e = {0};
    CHECKF(fx_plan_par(&s, &r, 2, 2, 1, 2, &p, &e) == ST_OK, "%s", e.msg);
    Backend *bk = NULL;
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    Comm c;
    memset(&c, 0, sizeof c);
    c.name = "fake", c.rank = 0, c.size = 2, c.all_gather = gather_own;
    Model *m = NULL;
    CHECKF(model_create(&p, NULL, bk, &c, &m, &e) == ST_OK, "%s", e.msg);
    char dir[600], path[640];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fp8plan-more-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/pp2.ckpt", dir);
    DataState ds;
    memset(&ds, 0, sizeof ds);
    if (m) {
        CHECKF(ckpt_save(path, m, &ds, &e) == ST_OK, "%s", e.msg); /* once first: what stays for good */
        size_t before = in_use();
        for (int i = 0; i < 4; i++) CHECKF(ckpt_save(path, m, &ds, &e) == ST_OK, "%s", e.msg);
        size_t after = in_use();
        CHECKF(after <= before + 4096, "4 pp-2 checkpoint saves: %zu bytes more in use (%zu -> %zu)", after - before,
               before, after);
        model_destroy(m);
    }
    remove(path);
    remove(dir);
    bk->destroy(bk);
}

/* The arena's layout, no plan (regions as large as their tensors need), every start a multiple of 256 B.
 * weight_gemm (term 0): w1 256 B at 0, w2 7 B at 256 (256 is already aligned): extent 263, region 512,
 * padding 512 - 263 = 249. Terms 1 .. before transient: empty, 0 B at 512. transient: phase 0 "a" 40 B at 0,
 * "b" 6 B at 256 (extent 262, aligned 512 = where the phases start); phase 1 "p1" 20 B at 512 + 0; phase 2
 * "p2a" 32 B at 512 + 0 and "p2b" 8 B at 512 + 256 (extent 264): extent 512 + max(20, 264) = 776, region
 * align(776) = 1,024 at 512, placed 46 + max(20, 40) = 86, padding 776 - 86 = 690; the empty terms after it
 * at 512 + 1,024 = 1,536. Total 1,536 B;
 * tensor offsets from the base: w1 0, w2 256, a 512, b 768, p1 1,024, p2a 1,024, p2b 1,280. */
static void test_arena_layout(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    ArenaSpecs s = {0};
    const ArenaTerm t = MT_TRANSIENT, u = MT_WEIGHT_GEMM;
    float *a = NULL, *b = NULL, *p1 = NULL, *p2a = NULL, *p2b = NULL;
    uint8_t *w1 = NULL, *w2 = NULL;
    arena_add(&s, u, DT_E4M3, 256, &w1, "w1", 0);
    arena_add(&s, u, DT_E4M3, 7, &w2, "w2", 0);
    arena_add(&s, t, DT_FP32, 10, &a, "a", -1);
    arena_add(&s, t, DT_BF16, 3, &b, "b", -1);
    arena_add_phase(&s, t, 1, DT_FP32, 5, &p1, "p1");
    arena_add_phase(&s, t, 2, DT_FP32, 8, &p2a, "p2a");
    arena_add_phase(&s, t, 2, DT_FP32, 2, &p2b, "p2b");
    Arena ar;
    CHECKF(arena_carve(&ar, bk, &s, NULL, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(ar.bytes, 1536);
    for (int k = 0; k < ARENA_TERMS; k++) {
        uint64_t off = k == (int)u ? 0 : k <= (int)t ? 512 : 1536, len = k == (int)u ? 512 : k == (int)t ? 1024 : 0;
        uint64_t placed = k == (int)u ? 263 : k == (int)t ? 86 : 0, pad = k == (int)u ? 249 : k == (int)t ? 690 : 0;
        CHECKF(ar.region_offset[k] == off && ar.region_bytes[k] == len && ar.placed[k] == placed &&
                   ar.padding[k] == pad,
               "term %d: region %llu + %llu, placed %llu, padding %llu", k, (unsigned long long)ar.region_offset[k],
               (unsigned long long)ar.region_bytes[k], (unsigned long long)ar.placed[k],
               (unsigned long long)ar.padding[k]);
    }
    const uint64_t want[7] = {0, 256, 512, 768, 1024, 1024, 1280};
    for (uint32_t i = 0; i < s.n; i++) CHECK_EQ_U64(s.v[i].offset, want[i]);
    char *base = ar.base;
    CHECK((char *)w1 == base && (char *)w2 == base + 256 && (char *)a == base + 512 && (char *)b == base + 768);
    CHECK((char *)p1 == base + 1024 && (char *)p2a == base + 1024 && (char *)p2b == base + 1280);
    /* arena_guard: the tensors cover [0, 263) w1+w2, [512, 552) a, [768, 774) b, [1024, 1056) p2a over p1,
     * [1280, 1288) p2b — 263 + 40 + 6 + 32 + 8 = 349 B; the rest of 1536 B is free: 1536 - 349 = 1187 B
     * (249 + 216 + 250 + 224 + 248), counted byte by byte. Only an ASan build poisons; a plain one does not. */
    int guarded = arena_guard(&ar, &s, bk);
#ifdef __SANITIZE_ADDRESS__
    CHECK(guarded == 1 && ar.guarded == 1);
    uint64_t poisoned = 0;
    for (uint64_t i = 0; i < ar.bytes; i++) poisoned += __asan_address_is_poisoned(base + i) != 0;
    CHECK_EQ_U64(poisoned, 1187);
    const uint64_t inside[] = {0, 262, 512, 551, 768, 773, 1024, 1055, 1280, 1287};
    const uint64_t outside[] = {263, 511, 552, 767, 774, 1023, 1056, 1279, 1288, 1535};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++)
        CHECKF(!__asan_address_is_poisoned(base + inside[i]), "byte %llu is a tensor's: addressable",
               (unsigned long long)inside[i]);
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        CHECKF(__asan_address_is_poisoned(base + outside[i]), "byte %llu is free: poisoned",
               (unsigned long long)outside[i]);
    /* entering a phase: the transient overlay starts after a and b's aligned 262 B, at 512 + 512 = 1024, and
     * runs to the region's end, 1536; only the phase's tensors stay addressable in it */
    arena_enter_phase(&ar, &s, 1); /* p1 [1024, 1044) */
    CHECK(!__asan_address_is_poisoned(base + 1043) && __asan_address_is_poisoned(base + 1044));
    CHECK(__asan_address_is_poisoned(base + 1055) && __asan_address_is_poisoned(base + 1280));
    CHECK(!__asan_address_is_poisoned(base + 512) && !__asan_address_is_poisoned(base + 262)); /* phase 0 */
    arena_enter_phase(&ar, &s, 2); /* p2a [1024, 1056), p2b [1280, 1288) */
    CHECK(!__asan_address_is_poisoned(base + 1055) && __asan_address_is_poisoned(base + 1056));
    CHECK(!__asan_address_is_poisoned(base + 1280) && !__asan_address_is_poisoned(base + 1287));
    CHECK(__asan_address_is_poisoned(base + 1288) && __asan_address_is_poisoned(base + 1535));
#else
    CHECK(guarded == 0 && ar.guarded == 0);
#endif
    CHECK_EQ_U64(ar.overlay_offset[t], 1024);
    CHECK_EQ_U64(ar.overlay_offset[u], 512); /* after w1 and w2's aligned 263 B; the term has no phases */
    arena_release(&ar, bk);
    CHECK(ar.guarded == 0);
    arena_specs_free(&s);
    bk->destroy(bk);
}

/* Per-worker scratch starts on a 64-byte boundary (16 floats) whatever address the allocator returns (glibc's are
 * 16-byte aligned, so 64-byte aligned by luck one time in four): 2^16 floats a worker, stride 2^16 (already a
 * multiple of 16), the regions of the 2 workers inside the block, in every one of the 4 scratch slots (each its
 * own block), so one lucky address cannot pass for the rule; then 100 floats: stride 112, the next multiple of
 * 16. */
static void test_scratch_aligned(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    uint64_t stride = 0;
    CpuImpl *impl = bk->impl;
    float *p = NULL;
    for (int slot = 0; slot < CPU_SCRATCH_SLOTS; slot++) { /* each slot its own block: its own address */
        p = cpu_scratch_workers(bk, slot, 1u << 16, &stride, &e);
        CHECKF(p != NULL, "%s", e.msg);
        CHECKF((uintptr_t)p % 64 == 0, "slot %d: %p", slot, (void *)p);
        CHECK_EQ_U64(stride, 1u << 16);
        CHECK(p >= impl->buf[slot] && p + 2 * stride <= impl->buf[slot] + impl->cap[slot]);
    }
    p = cpu_scratch_workers(bk, 3, 100, &stride, &e); /* 100 floats: stride 112, the next multiple of 16 */
    CHECK(p != NULL && (uintptr_t)p % 64 == 0);
    CHECK_EQ_U64(stride, 112);
    bk->destroy(bk);
}

/* An arena larger than this machine's memory (its pages x page size, plus one byte) is refused before any
 * allocation, naming both sizes. */
static void test_alloc_over_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    CHECK(pages > 0 && psize > 0);
    if (pages <= 0 || psize <= 0) return;
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    void *p = (void *)&e;
    CHECK_EQ_INT(bk->alloc(bk, (uint64_t)pages * (uint64_t)psize + 1, &p, &e), ST_NOMEM);
    CHECK(p == NULL);
    CHECK_CONTAINS(e.msg, "cpu backend: the arena needs ");
    CHECK_CONTAINS(e.msg, " bytes of memory; reduce --layers, --hidden, --seq, --mbs or --vocab");
    if (p && p != (void *)&e) bk->free(bk, p);
    bk->destroy(bk);
}

/* The arena's bound on one term, at the edge: a term may reserve up to 2^64 - 1 - 2 x 256 = 2^64 - 513 bytes (its
 * region rounds up to the next multiple of 256, 2^64 - 512); one byte more is refused as overflow before any
 * allocation. No tensors, every other term planned at 0 B. 2^64 - 513 passes the bound and reaches the CPU backend,
 * whose over-RAM refusal (ST_NOMEM) names the arena's 2^64 - 512 = 18,446,744,073,709,551,104 B; 2^64 - 512 is
 * ST_OVERFLOW naming the term. Then the offset bound: the first term at 2^64 - 513 (region 2^64 - 512) and the last
 * at 257 B (region 512) would end at 2^64: ST_OVERFLOW naming the last term; with the last at 256 B (region 256)
 * they end at 2^64 - 256 = 18,446,744,073,709,551,360 B, and it is ST_NOMEM again. */
static void test_arena_term_bound(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    CHECK(bk != NULL);
    if (!bk) return;
    const int last = ARENA_TERMS - 1;
    const struct {
        int term;
        uint64_t bytes, last_bytes;
        Status want;
        const char *named; /* the term an overflow names, or the bytes the no-memory refusal gives */
    } cases[] = {
        {last, UINT64_MAX - 512, 0, ST_NOMEM, "the arena needs 18,446,744,073,709,551,104 bytes"},
        {last, UINT64_MAX - 511, 0, ST_OVERFLOW, arena_term_name(last)},
        {0, UINT64_MAX - 512, 257, ST_OVERFLOW, arena_term_name(last)},
        {0, UINT64_MAX - 512, 256, ST_NOMEM, "the arena needs 18,446,744,073,709,551,360 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ArenaSpecs s = {0};
        uint64_t planned[ARENA_TERMS] = {0};
        planned[cases[i].term] = cases[i].bytes;
        if (cases[i].term != last) planned[last] = cases[i].last_bytes;
        Arena ar;
        e = (Err){0};
        Status st = arena_carve(&ar, bk, &s, planned, &e);
        CHECKF(st == cases[i].want, "case %zu: status %d, want %d (%s)", i, (int)st, (int)cases[i].want, e.msg);
        CHECK(ar.base == NULL);
        if (st == ST_OVERFLOW) {
            char want[128];
            snprintf(want, sizeof want, "arena: term %s does not fit in 2^64 bytes", cases[i].named);
            CHECK_CONTAINS(e.msg, want);
        } else {
            CHECK_CONTAINS(e.msg, cases[i].named);
        }
        if (st == ST_OK) arena_release(&ar, bk);
        arena_specs_free(&s);
    }
    bk->destroy(bk);
}

/* The executor's TP check, on what the planner cannot build (it pads the vocabulary to a multiple of 64 x tp and
 * refuses a sequence tp does not divide): a GPT fixture plan at tp 2, mbs 2 (2 x 16 = 32 tokens), its padded
 * vocabulary then set to 129 by hand. 2 does not divide 129: refused (ST_USAGE), the message giving the 32 tokens
 * and the 129. */
static void test_tp_check_message(void)
{
    ModelSpec m = fx_gpt();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    Err e = {0};
    CHECKF(fx_plan_par(&m, &r, 2, 1, 2, 1, &p, &e) == ST_OK, "%s", e.msg);
    CHECKF(model_tp_check(&p, &e) == ST_OK, "%s", e.msg);
    p.vocab_padded = 129;
    e = (Err){0};
    CHECK_EQ_INT(model_tp_check(&p, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--tp 2 must divide the tokens of a micro-batch (32) and the padded vocabulary 129");
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "2", 1); /* before the pool's first use: test_gemm_panels counts 2 workers */
    RUN(test_recipe_granularity);
    RUN(test_recipe_history);
    RUN(test_bank_algo);
    RUN(test_shard_only_sharded_classes);
    RUN(test_shard_scaled_refusal);
    RUN(test_compare_category_totals);
    RUN(test_calibrate_zeroed_moments);
    RUN(test_gemm_panels);
    RUN(test_layout_save_frees);
    RUN(test_arena_layout);
    RUN(test_scratch_aligned);
    RUN(test_alloc_over_ram);
    RUN(test_arena_term_bound);
    RUN(test_tp_check_message);
    return test_summary();
}
