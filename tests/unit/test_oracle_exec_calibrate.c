/* tests/unit/test_oracle_exec_calibrate.c — what `fp8plan calibrate --backend cpu` measures
 * (exec/measure/calibrate_host.c), on one rank, against shapes, FLOPs and bytes worked out by
 * hand. The times are this machine's, so they are not asserted; what is asserted is every shape,
 * name and byte count, and that each rate is exactly the hand-worked FLOPs (bytes) over the summed
 * median times the profile reports beside it.
 *
 * GPT fixture (support/exec_fixtures.h): L 2, C 32, 4 heads of 8 (KV 4), FFN 128 (GELU), V 64 padded
 * to Vp 128, mbs 1 x seq 16: T = 16 rows. Linear (out, in): QKV (32 + 2 x 32 = 96, 32), proj (32, 32),
 * FC1 (128, 32), FC2 (32, 128); Σ out·in = 3,072 + 1,024 + 4,096 + 4,096 = 12,288.
 *   GEMMs per path: fprop (T, out, in), dgrad (T, in, out), wgrad (out, in, T), each 2·T·out·in FLOPs:
 *   6 x 16 x 12,288 = 1,179,648 FLOPs (FP8, FP32); BF16 adds the LM head's fprop (16, 128, 32),
 *   dgrad (16, 32, 128), wgrad (128, 32, 16): 6 x 16 x 128 x 32 = 393,216 -> 1,572,864.
 *   Kernels (x = T·C = 512, f = T·F = 2,048): norm 4x + 8T = 2,176; GELU 4f = 8,192; add 6x = 3,072;
 *   cast 4x = 2,048; cross-entropy 16·T·Vp = 32,768; AdamW 30 B x (Vp·C + L·Σ out·in = 4,096 + 24,576
 *   = 28,672) = 860,160. Element-wise weights per micro-batch (norm 4L, act 2L, add 4L, cast 4L, xent
 *   1 = 8, 4, 8, 8, 1): 8 x 2,176 + 4 x 8,192 + 8 x 3,072 + 8 x 2,048 + 32,768 = 123,904 B.
 * LLaMA fixture: KV 2, FFN 48 (SwiGLU: FC1 96 wide). QKV (32 + 2 x 16 = 64, 32), proj (32, 32),
 * FC1 (96, 32), FC2 (32, 48): Σ = 2,048 + 1,024 + 3,072 + 1,536 = 7,680.
 *   6 x 16 x 7,680 = 737,280 FLOPs (FP8, FP32); BF16 + 393,216 = 1,130,496.
 *   SwiGLU reads gate and up: 6f = 6 x 768 = 4,608; AdamW 30 x (4,096 + 15,360 = 19,456) = 583,680;
 *   weighted 8 x 2,176 + 4 x 4,608 + 8 x 3,072 + 8 x 2,048 + 32,768 = 109,568 B.
 * FP8-LM's optimizer over the same parameters, as the planner counts it: 17 B each (E4M3 grad 1, FP16
 * master 2 + E4M3 m 1 + FP16 v 2 read and written 10, the second pass reading the four again 6):
 *   GPT 17 x 28,672 = 487,424 B; LLaMA 17 x 19,456 = 330,752 B. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/measure/calibrate.h"
#include "catalog/catalog.h"
#include "support/exec_fixtures.h"
#include "support/fixtures.h"
#include "test.h"

typedef struct {
    const char *what;
    int path;
    uint64_t m, n, k;
    Dtype out; /* D's dtype */
    int accum; /* added into D */
} WantGemm;

typedef struct {
    uint64_t lin[4][2];               /* (out, in) of QKV, proj, FC1, FC2 */
    double flops[CAL_PATHS];          /* per path */
    double kbytes[10], weighted_elem; /* norm, act, add, cast, xent, amax, cast_row, adamw, fp8lm, msamp-o1; the
                                         weighted sum of the first five */
} Want;

static void check_profile(const ModelSpec *m, const Want *w)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    Calibration *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    if (!c) {
        bk->destroy(bk);
        return;
    }
    CHECKF(calibrate_host(bk, NULL, m, 1, 3, c, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(c->reps, 3);
    CHECK_EQ_INT(c->ranks, 1);
    CHECK_STR(c->backend, "cpu");
    CHECK(c->mem_bytes > 0);
    CHECK(c->ncoll == 0 && c->link_bw == 0 && c->link_lat == 0); /* one rank: no link sweep */

    /* the 39 GEMMs, in order: per path (FP8, BF16, FP32) the four linears' fprop, dgrad, wgrad; then the head */
    static const char *const lin[4] = {"qkv", "proj", "fc1", "fc2"};
    static const char *const pass[3] = {"fprop", "dgrad", "wgrad"};
    CHECK_EQ_INT(c->ngemm, 39);
    WantGemm g[39];
    int n = 0;
    for (int p = 0; p < CAL_PATHS; p++)
        for (int k = 0; k < 4; k++) {
            uint64_t out = w->lin[k][0], in = w->lin[k][1], T = 16;
            Dtype o16 = p == CAL_PATH_FP32 ? DT_FP32 : DT_BF16; /* fprop/dgrad outputs as the executor's */
            g[n++] = (WantGemm){pass[0], p, T, out, in, o16, 0};
            g[n++] = (WantGemm){pass[1], p, T, in, out, o16, 0};
            g[n++] = (WantGemm){pass[2], p, out, in, T, DT_FP32, 1}; /* into the FP32 weight gradient */
        }
    g[n++] = (WantGemm){"head fprop", CAL_PATH_BF16, 16, 128, 32, DT_FP32, 0}; /* FP32 logits, written */
    g[n++] = (WantGemm){"head dgrad", CAL_PATH_BF16, 16, 32, 128, DT_BF16, 0};
    g[n++] = (WantGemm){"head wgrad", CAL_PATH_BF16, 128, 32, 16, DT_FP32, 1};
    double secs[CAL_PATHS] = {0}, spread[CAL_PATHS] = {0}, wiqr[CAL_PATHS] = {0};
    for (int i = 0; i < 39 && i < c->ngemm; i++) {
        const CalGemm *q = &c->gemm[i];
        char what[24];
        if (i < 36)
            snprintf(what, sizeof what, "%s %s", lin[i % 12 / 3], g[i].what);
        else
            snprintf(what, sizeof what, "%s", g[i].what);
        CHECKF(!strcmp(q->what, what), "gemm %d is '%s', expected '%s'", i, q->what, what);
        CHECKF(q->path == g[i].path && q->m == g[i].m && q->n == g[i].n && q->k == g[i].k,
               "gemm %d (%s): path %d %llu x %llu x %llu, expected path %d %llu x %llu x %llu", i, what, q->path,
               (unsigned long long)q->m, (unsigned long long)q->n, (unsigned long long)q->k, g[i].path,
               (unsigned long long)g[i].m, (unsigned long long)g[i].n, (unsigned long long)g[i].k);
        CHECKF(q->out_dtype == g[i].out && q->accum == g[i].accum, "gemm %d (%s): output %s%s, expected %s%s", i, what,
               dtype_name(q->out_dtype), q->accum ? " accumulated" : "", dtype_name(g[i].out),
               g[i].accum ? " accumulated" : "");
        CHECKF(q->seconds > 0, "gemm %d (%s) timed %g s", i, what, q->seconds);
        secs[g[i].path] += q->seconds;
        if (q->spread > spread[g[i].path]) spread[g[i].path] = q->spread;
        CHECKF(q->iqr >= 0 && q->iqr <= q->spread, "gemm %d (%s): iqr %g outside [0, spread %g]", i, what, q->iqr,
               q->spread);
        wiqr[g[i].path] += q->iqr * q->seconds;
    }
    /* rate = the path's FLOPs over the sum of its shapes' median times: rate x Σ seconds gives the FLOPs back */
    for (int p = 0; p < CAL_PATHS; p++) {
        CHECKF(c->rate[p] > 0, "path %d rate %g", p, c->rate[p]);
        CHECK_REL(c->rate[p] * secs[p], w->flops[p], 1e-12);
        CHECK_NEAR(c->rate_spread[p], spread[p], 0);
        /* the spread the profile is judged on: the shapes' iqr weighted by their median times */
        CHECK_REL(c->rate_iqr[p] * secs[p], wiqr[p], 1e-12);
    }

    /* the ten kernels: names, bytes by hand; AdamW gives the streaming rate, FP8-LM's the scaled optimizer's,
     * MS-AMP O1's its own, the first five the weighted element rate, the amax and the row-wise cast only their own
     * (elem_kind_bw) */
    static const char *const kname[10] = {"norm",          "activation",   "residual add",      "fp8 cast+transpose",
                                          "cross-entropy", "amax",         "fp8 cast fp32 row", "adamw",
                                          "fp8lm adam",    "msamp-o1 adam"};
    static const double calls[5] = {8, 4, 8, 8, 1};
    static const ElemKind kind[7] = {ELEM_NORM, ELEM_ACT, ELEM_ADD, ELEM_CAST, ELEM_XENT, ELEM_AMAX, ELEM_CAST_ROW};
    CHECK_EQ_INT(c->nkern, 10);
    double ksecs = 0, kspread = 0, kwiqr = 0;
    for (int k = 0; k < 10 && k < c->nkern; k++) {
        CHECK_STR(c->kern[k].what, kname[k]);
        CHECK_NEAR(c->kern[k].bytes, w->kbytes[k], 0);
        CHECKF(c->kern[k].seconds > 0, "kernel %s timed %g s", kname[k], c->kern[k].seconds);
        if (k < 5) {
            ksecs += calls[k] * c->kern[k].seconds;
            kwiqr += calls[k] * c->kern[k].seconds * c->kern[k].iqr;
            if (c->kern[k].spread > kspread) kspread = c->kern[k].spread;
        }
        if (k < 7 && c->kern[k].seconds > 0)
            CHECK_REL(c->elem_kind_bw[kind[k]] * c->kern[k].seconds, w->kbytes[k], 1e-12);
    }
    if (c->nkern == 10) {
        CHECK_REL(c->o1_optim_bw * c->kern[9].seconds, w->kbytes[9], 1e-12);
        CHECK_NEAR(c->o1_optim_spread, c->kern[9].spread, 0);
        CHECK_NEAR(c->o1_optim_iqr, c->kern[9].iqr, 0);
        CHECK_REL(c->scaled_optim_bw * c->kern[8].seconds, w->kbytes[8], 1e-12);
        CHECK_NEAR(c->scaled_optim_spread, c->kern[8].spread, 0);
        CHECK_NEAR(c->scaled_optim_iqr, c->kern[8].iqr, 0);
        CHECK_REL(c->mem_bw * c->kern[7].seconds, w->kbytes[7], 1e-12);
        CHECK_NEAR(c->mem_spread, c->kern[7].spread, 0);
        CHECK_NEAR(c->mem_iqr, c->kern[7].iqr, 0);
    }
    CHECK_REL(c->elem_iqr * ksecs, kwiqr, 1e-12);
    CHECK_REL(c->elem_bw * ksecs, w->weighted_elem, 1e-12);
    CHECK_NEAR(c->elem_spread, kspread, 0);
    CHECK(c->launch_s > 0);
    free(c);
    bk->destroy(bk);
}

static void test_gpt_profile(void)
{
    ModelSpec m = fx_gpt();
    Want w = {.lin = {{96, 32}, {32, 32}, {128, 32}, {32, 128}},
              .flops = {1179648, 1572864, 1179648},
              /* amax 2 x 16 x 32 = 1,024 B; the row-wise cast of FC1's gradient 5 x 32 x 128 = 20,480 B; the
               * optimizers over 28,672 parameters: AdamW 30 B, FP8-LM's 17 B, MS-AMP O1's 32 B = 917,504 B */
              .kbytes = {2176, 8192, 3072, 2048, 32768, 1024, 20480, 860160, 487424, 917504},
              .weighted_elem = 123904};
    check_profile(&m, &w);
}

static void test_llama_profile(void)
{
    ModelSpec m = fx_llama();
    Want w = {.lin = {{64, 32}, {32, 32}, {96, 32}, {32, 48}},
              .flops = {737280, 1130496, 737280},
              /* amax 2 x 16 x 32 = 1,024 B; the row-wise cast of FC1's gradient 5 x 32 x 48 = 7,680 B; the
               * optimizers over 19,456 parameters: 30, 17 and 32 B each (MS-AMP O1's 622,592 B) */
              .kbytes = {2176, 4608, 3072, 2048, 32768, 1024, 7680, 583680, 330752, 622592},
              .weighted_elem = 109568};
    check_profile(&m, &w);
}

/* Repetitions outside [1, 64] are refused before anything runs (cal_median holds 64), naming the value. */
static void test_reps_refused(void)
{
    Backend *bk = NULL;
    Err e = {0};
    CHECKF(backend_cpu_create(&bk, &e) == ST_OK, "%s", e.msg);
    if (!bk) return;
    ModelSpec m = fx_gpt();
    Calibration *c = calloc(1, sizeof *c);
    if (c) {
        const int bad[2] = {0, 65};
        for (int i = 0; i < 2; i++) {
            e = (Err){0};
            c->ngemm = 7;
            CHECK_EQ_INT(calibrate_host(bk, NULL, &m, 1, bad[i], c, &e), ST_USAGE);
            char want[64];
            snprintf(want, sizeof want, "repetitions %d outside [1, 64]", bad[i]);
            CHECK_CONTAINS(e.msg, want);
            CHECK_EQ_INT(c->ngemm, 0); /* the profile is cleared, nothing measured */
        }
        e = (Err){0};
        CHECKF(calibrate_host(bk, NULL, &m, 1, 64, c, &e) == ST_OK, "%s", e.msg); /* 64 is the limit, allowed */
        CHECK_EQ_INT(c->reps, 64);
        free(c);
    }
    bk->destroy(bk);
}

/* A catalog GPU row rewritten with the latency column (cal_gpu_row_of: what `calibrate` does to the other rows
 * of gpus.csv) reads back as the same GPU: a host row with a measured link of 1.5 us per ring step and an
 * element-wise rate of 4 GB/s, and a GPU row with neither (both columns blank, read back as 0). Rates are
 * written in the catalog's units (GB/s, TFLOP/s, us) with 9 significant digits: 1e-9 relative at most. */
static void check_row_back(const GpuSpec *g)
{
    char row[4096], text[8192];
    Err e = {0};
    CHECKF(cal_gpu_row_of(g, row, sizeof row, &e) == ST_OK, "%s", e.msg);
    snprintf(text, sizeof text, "%s\n%s\n", cal_gpu_header, row);
    Catalog *cat = calloc(1, sizeof *cat);
    CHECK(cat != NULL);
    if (!cat) return;
    CHECKF(catalog_parse_gpus(cat, text, strlen(text), "gpus.csv", &e) == ST_OK, "%s: %s", row, e.msg);
    const GpuSpec *b = catalog_gpu(cat, g->name);
    CHECKF(b != NULL, "%s", row);
    if (b) {
        CHECK(b->host == g->host && b->sm == g->sm && b->sms == g->sms && b->link == g->link);
        CHECK(b->hbm_bytes == g->hbm_bytes && b->gpus_per_node == g->gpus_per_node);
        CHECK_REL(b->hbm_bw, g->hbm_bw, 1e-9);
        CHECK_REL(b->flops_bf16, g->flops_bf16, 1e-9);
        CHECK_REL(b->flops_fp8, g->flops_fp8, 1e-9);
        CHECK_REL(b->flops_fp32, g->flops_fp32, 1e-9);
        CHECK_REL(b->mamf_bf16, g->mamf_bf16, 1e-9);
        CHECK_REL(b->sustained, g->sustained, 1e-9);
        CHECK_REL(b->intra_bw, g->intra_bw, 1e-9);
        CHECK_REL(b->inter_bw, g->inter_bw, 1e-9);
        CHECKF(fabs(b->link_lat - g->link_lat) <= 1e-9 * g->link_lat, "%s: link_lat %g, wrote %g", row, b->link_lat,
               g->link_lat);
        CHECKF(fabs(b->elem_bw - g->elem_bw) <= 1e-9 * g->elem_bw, "%s: elem_bw %g, wrote %g", row, b->elem_bw,
               g->elem_bw);
        CHECK_STR(b->source, g->source);
    }
    free(cat);
}

static void test_gpu_row_back(void)
{
    GpuSpec h = fx_gpu();
    snprintf(h.name, sizeof h.name, "host-a");
    snprintf(h.source, sizeof h.source, "fp8plan calibrate, \"by hand\"");
    h.host = 1, h.sm = 0, h.sms = 1, h.link = LINK_HOST, h.gpus_per_node = 2, h.hbm_bytes = 1ull << 34;
    h.flops_bf16 = h.mamf_bf16 = 100e9, h.flops_fp8 = h.mamf_fp8 = 50e9, h.flops_fp32 = 25e9;
    h.hbm_bw = 10e9, h.sustained = 1, h.intra_bw = h.inter_bw = 3e9, h.link_lat = 1.5e-6, h.elem_bw = 4e9;
    check_row_back(&h);
    h.link_lat = 0.25e-6; /* below one microsecond: still written (0.25) */
    check_row_back(&h);
    GpuSpec g = fx_gpu();
    snprintf(g.name, sizeof g.name, "gpu-b");
    snprintf(g.source, sizeof g.source, "a datasheet");
    g.sms = 132, g.sustained = 0.75, g.mamf_bf16 = 700e12, g.mamf_fp8 = 1400e12, g.link_lat = 0, g.elem_bw = 0;
    check_row_back(&g);
}

/* The launch floor: the smallest calls a layer makes, 16 of each kind in turn (4 x 16 = 64 samples) — a 16 x 16 x 16
 * BF16 GEMM, a residual add of 256 values, a norm and an activation of one 256-wide row — and their median. A
 * backend whose timestamps give each call a scripted time (GEMM 4 us, add 1 us, norm 2 us, activation 3 us; every
 * other timed call 1 ms) and that counts those calls: 16 samples each of 1, 2, 3, 4 us, sorted, have the 32nd and
 * 33rd at 2 and 3 us, so the median is 2.5 us and the spread (4 - 1) / 2.5 = 1.2. */
static struct {
    Backend *cpu;
    int last; /* the kind of the last call: 0 GEMM, 1 add, 2 norm, 3 activation of the launch sizes; -1 else */
    int count[4];
} lf;

static Status lf_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    lf.last = g->m == 16 && g->n == 16 && g->k == 16 ? 0 : -1;
    if (lf.last == 0) lf.count[0]++;
    return lf.cpu->gemm(bk, g, e);
}

static Status lf_add(Backend *bk, const void *a, const void *b, void *out, Dtype dt, uint64_t n, Err *e)
{
    lf.last = n == 256 ? 1 : -1;
    if (lf.last == 1) lf.count[1]++;
    return lf.cpu->add(bk, a, b, out, dt, n, e);
}

static Status lf_norm(Backend *bk, const NormFwdDesc *d, Err *e)
{
    lf.last = d->rows == 1 && d->cols == 256 ? 2 : -1;
    if (lf.last == 2) lf.count[2]++;
    return lf.cpu->norm_fwd(bk, d, e);
}

static Status lf_act(Backend *bk, const ActFwdDesc *d, Err *e)
{
    lf.last = d->rows == 1 && d->cols == 256 ? 3 : -1;
    if (lf.last == 3) lf.count[3]++;
    return lf.cpu->act_fwd(bk, d, e);
}

static Status lf_mark(Backend *bk, uint32_t slot, Err *e)
{
    (void)bk, (void)e;
    if (slot == BACKEND_MARKS - 2) lf.last = -1; /* a timed call starts */
    return ST_OK;
}

static Status lf_elapsed(Backend *bk, uint32_t from, uint32_t to, double *seconds, Err *e)
{
    (void)bk, (void)from, (void)to, (void)e;
    static const double us[4] = {4, 1, 2, 3};
    *seconds = lf.last >= 0 ? us[lf.last] * 1e-6 : CAL_SAMPLE_S; /* one call a sample (cal_sample_calls) */
    return ST_OK;
}

static void test_launch_floor(void)
{
    Err e = {0};
    Backend *cpu = NULL;
    CHECKF(backend_cpu_create(&cpu, &e) == ST_OK, "%s", e.msg);
    if (!cpu) return;
    memset(&lf, 0, sizeof lf);
    lf.cpu = cpu;
    Backend bk = *cpu;
    bk.gemm = lf_gemm, bk.add = lf_add, bk.norm_fwd = lf_norm, bk.act_fwd = lf_act;
    bk.mark = lf_mark, bk.elapsed = lf_elapsed;
    ModelSpec m = fx_gpt();
    Calibration *c = calloc(1, sizeof *c);
    if (c) {
        CHECKF(calibrate_host(&bk, NULL, &m, 1, 3, c, &e) == ST_OK, "%s", e.msg);
        for (int k = 0; k < 4; k++) CHECKF(lf.count[k] == 16, "launch-size call %d made %d times", k, lf.count[k]);
        CHECK_NEAR(c->launch_s, 2.5e-6, 1e-18);
        CHECK_NEAR(c->launch_spread, 1.2, 1e-12);
    }
    free(c);
    cpu->destroy(cpu);
}

/* The checked warm-up and the interleaved re-measure, on a backend whose timestamps give each layer GEMM a
 * scripted time by its place in the session (wu.calls: the layer GEMMs timed so far; fx_gpt's 39 a round) and
 * every other timed call CAL_SAMPLE_S (10 ms: one call a sample, cal_sample_calls). */
static struct {
    Backend *cpu;
    int calls, last_layer; /* layer GEMMs so far; the last timed call was one (its index) or -1 */
    int mode;              /* 0: 8, 4, 2, 1 ms a call in rounds 0-3, 1 ms after; 1: 0.9^round ms (never warm);
                            * 2: warm rounds 0-1 at 1 ms, then round k of the measurement at (k + 1) ms */
} wu;

static Status wu_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    wu.last_layer = g->m == 16 && g->n == 16 && g->k == 16 ? -1 : wu.calls++;
    return wu.cpu->gemm(bk, g, e);
}

static Status wu_mark(Backend *bk, uint32_t slot, Err *e)
{
    (void)bk, (void)e;
    if (slot == BACKEND_MARKS - 2) wu.last_layer = -1; /* a timed call starts */
    return ST_OK;
}

static Status wu_elapsed(Backend *bk, uint32_t from, uint32_t to, double *seconds, Err *e)
{
    (void)bk, (void)from, (void)to, (void)e;
    const int c = wu.last_layer, round = c / 39;
    static const double first[4] = {8, 4, 2, 1};
    double ms = c >= 0 ? 1 : CAL_SAMPLE_S * 1e3;
    if (c >= 0 && wu.mode == 0) ms = round < 4 ? first[round] : 1;
    if (c >= 0 && wu.mode == 1) ms = pow(0.9, round);
    if (c >= 0 && wu.mode == 2) ms = round < 2 ? 1 : round - 1;
    *seconds = ms * 1e-3;
    return ST_OK;
}

static void test_warm_up(void)
{
    Err e = {0};
    Backend *cpu = NULL;
    CHECKF(backend_cpu_create(&cpu, &e) == ST_OK, "%s", e.msg);
    if (!cpu) return;
    Backend bk = *cpu;
    bk.gemm = wu_gemm, bk.mark = wu_mark, bk.elapsed = wu_elapsed;
    ModelSpec m = fx_gpt();
    Calibration *c = calloc(2, sizeof *c);
    CalJudge j;
    for (int mode = 0; c && mode < 3; mode++) {
        memset(&wu, 0, sizeof wu);
        wu.cpu = cpu, wu.mode = mode;
        CHECKF(calibrate_host_again(&bk, NULL, &m, 1, 7, c, 4, c + 1, &e) == ST_OK, "%s", e.msg);
        if (mode == 0) {
            /* rounds of 39 calls: 312, 156, 78, 39, 39 ms; the fifth is the first within 5 % of the one before
             * (39 >= 0.95 x 39): 5 rounds, warm; then 11 rounds of 1 ms a call, 7 and 4, each sample
             * cal_sample_calls(1 ms, 2 ms) = 2 calls: 39 x (5 + 11 x 2) = 1,053 */
            CHECK(c->warm_rounds == 5 && c->warm_settled == 1);
            CHECK_NEAR(c->warm_first_s, 0.312, 1e-12);
            CHECK_NEAR(c->warm_prev_s, 0.039, 1e-12);
            CHECK_NEAR(c->warm_last_s, 0.039, 1e-12);
            CHECK_EQ_INT(wu.calls, 39 * (5 + 11 * 2));
            CHECK(c[1].warm_rounds == 5 && c[1].warm_settled == 1 && c[1].reps == 4 && c->reps == 7);
            CHECK_NEAR(c->gemm[0].seconds, 1e-3, 1e-15);
            cal_judge(c, c + 1, &j); /* its other figures are the real kernels' times: only whether it is cold */
            CHECK(j.cold == 0);
        } else if (mode == 1) {
            /* each round 10 % faster than the one before (0.9 < 0.95): still speeding up after all 16 rounds */
            CHECK(c->warm_rounds == CAL_WARM_ROUNDS_MAX && c->warm_settled == 0);
            CHECK_NEAR(c->warm_last_s / c->warm_prev_s, 0.9, 1e-12);
            cal_judge(c, c + 1, &j);
            CHECK(j.cold == 1);
        } else {
            /* warm after 2 rounds (39 = 39 ms); the machine then slows by 1 ms a call every 39 calls (c / 39 - 1
             * ms for call c >= 78). A sample is the median of 2 calls (cal_sample_calls(1 ms, 2 ms): their mean): in round k of the
             * measurement shape i's are calls 78 + 78 k + 2 i and the next, at 2k + 1 ms (shapes 0-18, both in the
             * round's first 39 calls), 2k + 1.5 (shape 19: calls 38 and 39 of the round) or 2k + 2 (shapes 20-38).
             * Shape 0: the profile's rounds k = 0 2 3 5 7 8 10 (1 5 7 11 15 17 21 ms: median 11), the
             * re-measure's k = 1 4 6 9 (3 9 13 19: median (9 + 13) / 2 = 11): the same figure (shape 19: 11.5
             * and 11.5, shape 38: 12 and 12). Taken one after the other (the profile's 7, then 4) shape 0's
             * medians would be 7 and 18 ms: a -61 % drift. */
            CHECK(c->warm_rounds == 2 && c->warm_settled == 1);
            for (int i = 0; i < c->ngemm; i++) {
                const double want = i < 19 ? 11e-3 : i == 19 ? 11.5e-3 : 12e-3;
                CHECK_NEAR(c->gemm[i].seconds, want, 1e-15);
                CHECK_NEAR(c[1].gemm[i].seconds, want, 1e-15);
            }
            cal_judge(c, c + 1, &j);
            for (int f = CAL_FIG_FP8; f <= CAL_FIG_FP32; f++) CHECK_NEAR(j.drift[f], 0, 1e-12);
        }
    }
    /* the re-measure's repetitions outside [1, 32] and the profile's outside [1, 64] are refused before any work */
    if (c) {
        CHECK(calibrate_compute_again(&bk, NULL, &m, 1, 7, c, 33, c + 1, &e) == ST_USAGE);
        CHECK_CONTAINS(e.msg, "re-measure repetitions 33");
        CHECK(calibrate_compute_again(&bk, NULL, &m, 1, 7, c, 0, c + 1, &e) == ST_USAGE);
        CHECK(calibrate_compute_again(&bk, NULL, &m, 1, 65, c, 4, c + 1, &e) == ST_USAGE);
    }
    free(c);
    cpu->destroy(cpu);
}

int main(void)
{
    RUN(test_gpt_profile);
    RUN(test_llama_profile);
    RUN(test_reps_refused);
    RUN(test_gpu_row_back);
    RUN(test_launch_floor);
    RUN(test_warm_up);
    return test_summary();
}
