/* tests/unit/test_calibrate.c — a host profile (fp8plan calibrate) worked by
 * hand: bus bandwidth, the weighted line fit, the link from an all-reduce
 * sweep, medians (exec/measure/calibrate_fit.c); the rows it writes parse as a
 * catalog with the measured values (calibrate_rows.c); and what the planner
 * does with a host row (compute_capability cpu): GEMMs at the measured rate
 * without tiles, achieved bandwidths not scaled by eff_hbm / eff_net, a
 * measured link's latency per ring step, no interconnect refused for several
 * ranks, FP8 recipes allowed (emulated). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "planner/arch.h"
#include "catalog/catalog.h"
#include "planner/plan_internal.h"
#include "support/fixtures.h"
#include "test.h"

static void test_busbw(void)
{
    /* all-reduce of S = 1e6 bytes over 2 ranks in 1 ms: 1e6 x 2 x 1/2 / 1e-3 = 1e9 B/s */
    CHECK_REL(cal_allreduce_busbw(1000000, 2, 1e-3), 1e9, 1e-15);
    /* 8e6 bytes over 4 ranks in 12 ms: 8e6 x 2 x 3/4 = 1.2e7 bus bytes / 0.012 s = 1e9 B/s */
    CHECK_REL(cal_allreduce_busbw(8000000, 4, 0.012), 1e9, 1e-15);
    CHECK_NEAR(cal_allreduce_busbw(1000, 1, 1e-3), 0, 0); /* one rank moves nothing */
    CHECK_NEAR(cal_allreduce_busbw(1000, 2, 0), 0, 0);
}

static void test_fit_line(void)
{
    double x[3] = {0, 1, 2}, y[3] = {1, 3, 5}, a = 0, b = 0;
    /* exactly y = 1 + 2x */
    CHECK(cal_fit_line(x, y, NULL, 3, &a, &b) == 0);
    CHECK_NEAR(a, 1, 1e-12);
    CHECK_NEAR(b, 2, 1e-12);
    /* the third point at 100 with weight 0 changes nothing; with weight 1: means x̄ = 1, ȳ = 104/3,
     * Σ(x−x̄)(y−ȳ) = (−1)(1 − 104/3) + 0 + (1)(100 − 104/3) = 99, Σ(x−x̄)² = 2: b = 49.5,
     * a = 104/3 − 49.5 = −14.8333... */
    double y2[3] = {1, 3, 100}, w[3] = {1, 1, 0};
    CHECK(cal_fit_line(x, y2, w, 3, &a, &b) == 0);
    CHECK_NEAR(a, 1, 1e-12);
    CHECK_NEAR(b, 2, 1e-12);
    CHECK(cal_fit_line(x, y2, NULL, 3, &a, &b) == 0);
    CHECK_NEAR(b, 49.5, 1e-12);
    CHECK_NEAR(a, 104.0 / 3.0 - 49.5, 1e-12);
    double same[2] = {1, 1};
    CHECK(cal_fit_line(same, y, NULL, 2, &a, &b) == -1);
    CHECK(cal_fit_line(x, y, NULL, 1, &a, &b) == -1);
}

static void test_fit_link(void)
{
    /* 2 ranks: 2(n-1) = 2 ring steps, bus bytes = S. 64 B in 2 us: latency 1 us per step. The two largest,
     * 4 MiB and 16 MiB, at 2 us + S / 1e9: (4194304 + 16777216) / (4194304 + 16777216) x 1e9 = 1e9 B/s;
     * the middle size does not count. */
    CalColl c[3] = {
        {64, 2e-6, 0, 0, 0}, {4194304, 2e-6 + 4194304 / 1e9, 0, 0, 0}, {16777216, 2e-6 + 16777216 / 1e9, 0, 0, 0}};
    double lat = 0, bw = 0;
    CHECK(cal_fit_link(c, 3, 2, &lat, &bw) == 0);
    CHECK_REL(lat, 1e-6, 1e-12);
    CHECK_REL(bw, 1e9, 1e-9);
    /* 4 ranks: 6 steps, bus bytes 1.5 S. 64 B in 6 us: 1 us per step; 5e5 B in 6e-6 + 0.75e6/2e9 and 1e6 B in
     * 6e-6 + 1.5e6/2e9: (0.75e6 + 1.5e6) / (3.75e-4 + 7.5e-4) = 2.25e6 / 1.125e-3 = 2e9 B/s */
    CalColl d[4] = {{64, 6e-6, 0, 0, 0},
                    {1000, 5e-5, 0, 0, 0},
                    {500000, 6e-6 + 3.75e-4, 0, 0, 0},
                    {1000000, 6e-6 + 7.5e-4, 0, 0, 0}};
    CHECK(cal_fit_link(d, 4, 4, &lat, &bw) == 0);
    CHECK_REL(lat, 1e-6, 1e-12);
    CHECK_REL(bw, 2e9, 1e-9);
    /* refused: one rank, two sizes, sizes not increasing, a time that leaves no bandwidth */
    CHECK(cal_fit_link(c, 3, 1, &lat, &bw) == -1);
    CHECK(cal_fit_link(c, 2, 2, &lat, &bw) == -1);
    CalColl e[3] = {{64, 2e-6, 0, 0, 0}, {16777216, 1e-3, 0, 0, 0}, {4194304, 1e-3, 0, 0, 0}};
    CHECK(cal_fit_link(e, 3, 2, &lat, &bw) == -1);
    CalColl f[3] = {{64, 1e-3, 0, 0, 0}, {4096, 1e-3, 0, 0, 0}, {8192, 1e-3, 0, 0, 0}}; /* all latency: 2 x 5e-4 */
    CHECK(cal_fit_link(f, 3, 2, &lat, &bw) == -1);
    /* the smallest's median above a larger size's (the ranks' arrival under load): 2 ranks, 64 B in 50 us,
     * 4 KiB in 10 us, 64 KiB in 40 us, 120,320 B in 60 us. The latency is at most the least time: 10 us / 2 =
     * 5 us per step (not 50 / 2 = 25, which leaves the two largest (40 - 50) + (60 - 50) = 0 s: no bandwidth);
     * bw = (65536 + 120320) / ((40 - 10) + (60 - 10)) us = 185856 / 80e-6 = 2.3232e9 B/s */
    CalColl g[4] = {{64, 50e-6, 0, 0, 0}, {4096, 10e-6, 0, 0, 0}, {65536, 40e-6, 0, 0, 0}, {120320, 60e-6, 0, 0, 0}};
    CHECK(cal_fit_link(g, 4, 2, &lat, &bw) == 0);
    CHECK_REL(lat, 5e-6, 1e-12);
    CHECK_REL(bw, 185856.0 / 80e-6, 1e-9);
}

/* The sizes calibrate sweeps up to the model's gradient all-reduce (its largest collective), by hand:
 *   27,375,616 B (the demo model's FP32 gradients): 64 x 4^i below it, i = 0..9 (64 x 4^9 = 16,777,216;
 *     64 x 4^10 = 67,108,864 is past it), then 27,375,616 itself: 11 sizes;
 *   16,777,216 = 64 x 4^8 exactly: 64 .. 4,194,304 (i = 0..8, 9 sizes), then 16,777,216: 10;
 *   100 B: raised to 4,096 (four sizes to fit): 64, 256, 1,024, then 4,096: 4;
 *   4,097 B: rounded up to whole FP32 elements, 4,100: 64, 256, 1,024, 4,096, 4,100: 5;
 *   2^40: lowered to 1 GiB = 2^30: 64 x 4^i = 2^(6 + 2i) below 2^30 for i = 0..11, then 2^30: 13.
 * The fit to a host whose all-reduce runs at 3 GB/s while it fits the caches (up to 4 MiB) and at 2 GB/s
 * past them (16 MiB and the 27.4 MB gradient), 2 ranks, 64 B in 2 us (1 us per step): the bandwidth is the
 * gradient's regime, (16777216 + 27375616) / ((16777216 + 27375616) / 2e9) = 2e9 B/s — where the sweep that
 * stopped at 16 MiB took 4 and 16 MiB: (4194304 + 16777216) / (4194304 / 3e9 + 16777216 / 2e9) = 20971520 /
 * (1.398101e-3 + 8.388608e-3) = 2.1429e9, 7 % fast. The source names the sizes: 27375616 / 2^20 = 26.1 MiB. */
static void test_link_sweep(void)
{
    uint64_t z[CAL_MAX_SIZES];
    CHECK(cal_link_sizes(27375616, z) == 11);
    CHECK_EQ_U64(z[0], 64);
    CHECK_EQ_U64(z[1], 256);
    CHECK_EQ_U64(z[9], 16777216);
    CHECK_EQ_U64(z[10], 27375616);
    CHECK(cal_link_sizes(16777216, z) == 10);
    CHECK_EQ_U64(z[8], 4194304);
    CHECK_EQ_U64(z[9], 16777216);
    CHECK(cal_link_sizes(100, z) == 4);
    CHECK_EQ_U64(z[2], 1024);
    CHECK_EQ_U64(z[3], 4096);
    CHECK(cal_link_sizes(4097, z) == 5);
    CHECK_EQ_U64(z[3], 4096);
    CHECK_EQ_U64(z[4], 4100);
    CHECK(cal_link_sizes((uint64_t)1 << 40, z) == 13);
    CHECK_EQ_U64(z[11], (uint64_t)1 << 28);
    CHECK_EQ_U64(z[12], (uint64_t)1 << 30);
    Calibration c;
    memset(&c, 0, sizeof c);
    c.reps = 3, c.ranks = 2;
    c.rate[CAL_PATH_FP8] = c.rate[CAL_PATH_BF16] = c.rate[CAL_PATH_FP32] = 1e9, c.mem_bw = c.elem_bw = 1e9;
    c.ncoll = cal_link_sizes(27375616, z);
    for (int i = 0; i < c.ncoll; i++) {
        c.coll[i].payload = z[i];
        c.coll[i].seconds = 2e-6 + (double)z[i] / (z[i] <= 4194304 ? 3e9 : 2e9);
    }
    c.coll[0].seconds = 2e-6; /* the smallest: latency only (the fit neglects its 64 bytes) */
    CHECK(cal_fit_link(c.coll, c.ncoll, 2, &c.link_lat, &c.link_bw) == 0);
    CHECK_REL(c.link_lat, 1e-6, 1e-9);
    CHECK_REL(c.link_bw, 2e9, 1e-9);
    double old_bw = 0, old_lat = 0;
    CHECK(cal_fit_link(c.coll, c.ncoll - 1, 2, &old_lat, &old_bw) == 0);
    CHECK_REL(old_bw, 20971520.0 / (4194304 / 3e9 + 16777216 / 2e9), 1e-9);
    char row[8192];
    Err e = {0};
    CHECK(cal_gpu_row(&c, "host", row, sizeof row, &e) == ST_OK);
    CHECK_CONTAINS(row, "all-reduce over 2 ranks, 64 B-26.1 MiB (each call after the caches were evicted");
    /* a host's GEMM paths by their CPU names (1e9 FLOP/s = 1 GFLOP/s, spreads 0); cuBLASLt is a GPU's */
    CHECK_CONTAINS(row, "GEMM at one layer's shapes: FP8 (E4M3/E5M2 decoded to FP32) 1 GFLOP/s (spread up to 0 %); "
                        "BF16 1 GFLOP/s (spread up to 0 %); FP32 1 GFLOP/s (spread up to 0 %)");
    CHECK(strstr(row, "cuBLASLt") == NULL);
    CHECK_CONTAINS(
        row, "latency 1 us per ring step (64 B), bus bandwidth 2 GB/s (16 MiB and 26.1 MiB, the largest the model's "
             "gradient all-reduce)");
    /* a sweep of two sizes (64 B and 4 KiB) still names its range, smallest and two largest */
    c.ncoll = 2;
    c.coll[1].payload = 4096;
    CHECK(cal_gpu_row(&c, "host", row, sizeof row, &e) == ST_OK);
    CHECK_CONTAINS(row, "MPI all-reduce over 2 ranks, 64 B-4 KiB (each call after the caches were evicted, one rank "
                        "arriving late): latency 1 us per ring step (64 B), bus bandwidth 2 GB/s (64 B and 4 KiB, the "
                        "largest the model's gradient all-reduce)");
    /* one size has no range to name: the link's two figures alone */
    c.ncoll = 1;
    CHECK(cal_gpu_row(&c, "host", row, sizeof row, &e) == ST_OK);
    CHECK_CONTAINS(row, "MPI all-reduce over 2 ranks: latency 1 us per ring step, bus bandwidth 2 GB/s\"");
}

/* Repetitions per size of the link sweep: the demo model's 11 sizes (64 B .. 26.1 MiB) at the default 7 —
 * the smallest (index 0, the latency) and the two largest (9 and 10, the bandwidth) 4 x 7 = 28, the rest 7;
 * at --reps 20, 4 x 20 = 80 is capped at 64 and 16 x 4 = 64 is not; a 4-size sweep (the tiny test model:
 * 64 B .. 4 KiB) has only index 1 outside, the smallest being index 0 and the two largest 2 and 3;
 * one repetition: 4. */
static void test_link_reps(void)
{
    static const int cases[][4] = {
        /* size, sizes, reps, repetitions */
        {0, 11, 7, 28},  {1, 11, 7, 7},    {8, 11, 7, 7},   {9, 11, 7, 28},   {10, 11, 7, 28},
        {0, 11, 20, 64}, {10, 11, 20, 64}, {5, 11, 20, 20}, {10, 11, 16, 64}, {1, 4, 3, 3},
        {2, 4, 3, 12},   {3, 4, 3, 12},    {0, 4, 1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *k = cases[i];
        CHECKF(cal_link_reps(k[0], k[1], k[2]) == k[3], "cal_link_reps(%d, %d, %d) = %d, want %d", k[0], k[1], k[2],
               cal_link_reps(k[0], k[1], k[2]), k[3]);
    }
}

static void test_median(void)
{
    double m, s, v3[3] = {3, 1, 2}, v4[4] = {4, 1, 3, 2};
    cal_median(v3, 3, &m, &s);
    CHECK_NEAR(m, 2, 0);
    CHECK_NEAR(s, 1.0, 1e-15); /* (3 - 1) / 2 */
    cal_median(v4, 4, &m, &s);
    CHECK_NEAR(m, 2.5, 0);
    CHECK_NEAR(s, 1.2, 1e-15);       /* (4 - 1) / 2.5 */
    CHECK(v3[0] == 3 && v4[0] == 4); /* the input is left as it was */
    cal_median(v3, 0, &m, &s);
    CHECK(isnan(m));
}

/* The robust statistics by hand (Tukey's hinges: q1 and q3 the medians of the lower and upper halves, each
 * holding the median when n is odd). */
static void test_stats(void)
{
    CalStat st;
    double v5[5] = {5, 1, 4, 2, 3}; /* sorted 1 2 3 4 5: median 3; q1 = 2 of {1 2 3}, q3 = 4 of {3 4 5} */
    cal_stats(v5, 5, &st);
    CHECK_NEAR(st.median, 3, 0);
    CHECK_NEAR(st.spread, 4.0 / 3.0, 1e-15); /* (5 - 1) / 3 */
    CHECK_NEAR(st.iqr, 2.0 / 3.0, 1e-15);    /* (4 - 2) / 3 */
    double v4[4] = {10, 40, 20, 30};         /* sorted 10 20 30 40: median 25, q1 = 15 of {10 20}, q3 = 35 of {30 40} */
    cal_stats(v4, 4, &st);
    CHECK_NEAR(st.median, 25, 0);
    CHECK_NEAR(st.spread, 1.2, 1e-15); /* (40 - 10) / 25 */
    CHECK_NEAR(st.iqr, 0.8, 1e-15);    /* (35 - 15) / 25 */
    /* one slow outlier among seven: sorted 10 10 10 11 11 12 100, median 11; lower half {10 10 10 11}: q1 = 10;
     * upper {11 11 12 100}: q3 = (11 + 12) / 2 = 11.5; iqr 1.5 / 11 = 0.13636 (the range: 90 / 11 = 8.18) */
    double v7[7] = {10, 10, 11, 10, 12, 11, 100};
    cal_stats(v7, 7, &st);
    CHECK_NEAR(st.median, 11, 0);
    CHECK_NEAR(st.spread, 90.0 / 11.0, 1e-15);
    CHECK_NEAR(st.iqr, 1.5 / 11.0, 1e-15);
    CHECK(v7[6] == 100); /* the input is left as it was */
    double one = 2;      /* one sample: q1 = q3 = median */
    cal_stats(&one, 1, &st);
    CHECK_NEAR(st.median, 2, 0);
    CHECK_NEAR(st.iqr, 0, 0);
    cal_stats(v5, 0, &st);
    CHECK(isnan(st.median) && isnan(st.iqr));
    double zero[3] = {0, 0, 0}; /* no median to divide by */
    cal_stats(zero, 3, &st);
    CHECK(isnan(st.iqr) && isnan(st.spread));
}

/* The bound on a figure's interquartile spread: 0.05 x 1.349 x sqrt(n) / 1.2533 (its median's standard error
 * 5 %): n = 3: 0.06745 x 1.7320508 / 1.2533 = 0.0932154; n = 7: 0.06745 x 2.6457513 / 1.2533 = 0.1423888. */
static void test_iqr_bound(void)
{
    CHECK_REL(cal_iqr_max(3), 0.0932154, 1e-6);
    CHECK_REL(cal_iqr_max(7), 0.1423888, 1e-6);
    CHECK_NEAR(cal_iqr_max(0), 0, 0);
}

/* Judging a profile: rates 40 / 50 / 20 GFLOP/s (FP8 / BF16 / FP32), 10 GB/s streamed, 4 GB/s element-wise,
 * 2 GB/s the scaled optimizer, 7 repetitions (the bound 14.239 %). */
static Calibration judged_figures(void)
{
    Calibration c;
    memset(&c, 0, sizeof c);
    c.reps = 7;
    c.rate[CAL_PATH_FP8] = 40e9, c.rate[CAL_PATH_BF16] = 50e9, c.rate[CAL_PATH_FP32] = 20e9;
    c.mem_bw = 10e9, c.elem_bw = 4e9, c.scaled_optim_bw = 2e9;
    for (int p = 0; p < CAL_PATHS; p++) c.rate_iqr[p] = 0.05;
    c.mem_iqr = c.elem_iqr = c.scaled_optim_iqr = 0.05;
    return c;
}

static void test_judge(void)
{
    CalJudge j;
    Calibration c = judged_figures(), again = judged_figures();
    CHECK(cal_judge(&c, &again, &j) == 0); /* the same figures: the profile holds */
    CHECK(j.worst_noisy == -1 && j.worst_drift == -1);
    CHECK(cal_judge(&c, NULL, &j) == 0); /* spreads alone */
    /* a re-measure 12 % slower on the BF16 path (44 / 50 - 1 = -0.12) and 5 % faster streaming (10.5 / 10 - 1):
     * the first past +-10 %, the second not */
    again.rate[CAL_PATH_BF16] = 44e9, again.mem_bw = 10.5e9;
    CHECK(cal_judge(&c, &again, &j) == 1);
    CHECK(j.drifted == 1 && j.noisy == 0 && j.worst_drift == CAL_FIG_BF16);
    CHECK_NEAR(j.drift[CAL_FIG_BF16], -0.12, 1e-15);
    CHECK_NEAR(j.drift[CAL_FIG_STREAM], 0.05, 1e-15);
    /* noisy: the element-wise kernels' iqr 0.15 passes 0.1424 (by 1.053x), FP32's 0.143 too (by 1.004x): two
     * figures, the worst the element-wise */
    again = judged_figures();
    c.elem_iqr = 0.15, c.rate_iqr[CAL_PATH_FP32] = 0.143;
    CHECK(cal_judge(&c, &again, &j) == 2);
    CHECK(j.noisy == 2 && j.worst_noisy == CAL_FIG_ELEM && j.drifted == 0);
    /* the outlier refusal through the statistics: seven GEMM times with one slow outlier (the samples of
     * test_stats: iqr 1.5 / 11 = 0.136 <= 0.1424) hold; with two slow ones, sorted 10 10 10 11 11 15 16:
     * median 11, q1 = 10 of {10 10 10 11}, q3 = (11 + 15) / 2 = 13 of {11 11 15 16}, iqr 3 / 11 = 0.273: noisy */
    CalStat st;
    c = judged_figures();
    double one_slow[7] = {10, 10, 11, 10, 12, 11, 100}, two_slow[7] = {16, 10, 11, 10, 15, 11, 10};
    cal_stats(one_slow, 7, &st);
    c.rate_iqr[CAL_PATH_BF16] = st.iqr;
    CHECK(cal_judge(&c, NULL, &j) == 0);
    cal_stats(two_slow, 7, &st);
    CHECK_NEAR(st.iqr, 3.0 / 11.0, 1e-15);
    c.rate_iqr[CAL_PATH_BF16] = st.iqr;
    CHECK(cal_judge(&c, NULL, &j) == 1 && j.worst_noisy == CAL_FIG_BF16);
    /* a figure not measured (rate 0, iqr NaN) is never a pass; a re-measure without it is a drift */
    c = judged_figures(), again = judged_figures();
    c.elem_bw = 0, c.elem_iqr = NAN;
    CHECK(cal_judge(&c, &again, &j) == 2 && j.noisy == 1 && j.drifted == 1);
    c = judged_figures();
    again.mem_bw = 0;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.worst_drift == CAL_FIG_STREAM);
}

/* A calibration with round figures: GEMM 40 / 50 / 20 GFLOP/s (FP8 / BF16 / FP32), 10 GB/s streamed, 4 GB/s
 * element-wise, 2 us launch. */
static Calibration round_figures(int ranks)
{
    Calibration c;
    memset(&c, 0, sizeof c);
    c.reps = 3;
    c.rate[CAL_PATH_FP8] = 40e9, c.rate[CAL_PATH_BF16] = 50e9, c.rate[CAL_PATH_FP32] = 20e9;
    c.mem_bw = 10e9, c.elem_bw = 4e9, c.scaled_optim_bw = 1.5e9, c.launch_s = 2e-6, c.mem_bytes = 1ull << 34,
    c.ranks = ranks;
    if (ranks > 1) c.link_bw = 3e9, c.link_lat = 0.5e-6;
    return c;
}

static Status parse_row(const Calibration *c, Catalog *cat, Err *e)
{
    char row[8192], text[9000];
    Status st = cal_gpu_row(c, "host", row, sizeof row, e);
    if (st) return st;
    snprintf(text, sizeof text, "%s\n%s\n", cal_gpu_header, row);
    return catalog_parse_gpus(cat, text, strlen(text), "gpus.csv", e);
}

static void test_rows_parse(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    if (!cat) return;
    Err e = {0};
    Calibration c = round_figures(2);
    CHECKF(parse_row(&c, cat, &e) == ST_OK, "%s", e.msg);
    const GpuSpec *g = catalog_gpu(cat, "host");
    CHECK(g != NULL);
    if (g) {
        CHECK(g->host && g->link == LINK_HOST && g->sms == 1);
        CHECK_REL(g->flops_bf16, 50e9, 1e-6); /* written in TFLOP/s: 0.05 */
        CHECK_REL(g->mamf_bf16, 50e9, 1e-6);
        CHECK_REL(g->flops_fp8, 40e9, 1e-6);
        CHECK_REL(g->flops_fp32, 20e9, 1e-6);
        CHECK_REL(g->hbm_bw, 10e9, 1e-6);
        CHECK_REL(g->elem_bw, 4e9, 1e-6);
        CHECK_REL(g->scaled_optim_bw, 1.5e9, 1e-6);
        CHECK_REL(g->intra_bw, 3e9, 1e-6);
        CHECK_REL(g->link_lat, 0.5e-6, 1e-6);
        CHECK_REL(g->sustained, 1.0, 0);
        CHECK_EQ_U64(g->hbm_bytes, 1ull << 34);
        CHECK_NEAR(g->group_gemm_s, 0, 0); /* a model without experts: the column left empty */
    }
    /* a model with experts: the grouped GEMM's 12.5 us a group, written in us, read back in seconds */
    Calibration x = round_figures(2);
    x.nxgemm = 6, x.group_s = 12.5e-6;
    CHECKF(parse_row(&x, cat, &e) == ST_OK, "%s", e.msg);
    g = catalog_gpu(cat, "host");
    if (g) CHECK_REL(g->group_gemm_s, 12.5e-6, 1e-9);
    /* one rank: no interconnect (0 and 0, no latency) */
    Calibration one = round_figures(1);
    CHECKF(parse_row(&one, cat, &e) == ST_OK, "%s", e.msg);
    g = catalog_gpu(cat, "host");
    CHECK(g && g->intra_bw == 0 && g->inter_bw == 0 && g->link_lat == 0);
    /* the stack row: launch_us 2, calibrated yes, the rest kept, each field in its own column (every value
     * below differs from the others and from the defaults) */
    char row[8192], text[9000];
    StackSpec s = {.attn = ATTN_MATERIALIZED,
                   .sequence_parallel = 1,
                   .fused_swiglu = 0,
                   .main_grad = MAIN_GRAD_BF16,
                   .fp8_weight_cache = 1,
                   .fusion = FUSE_FP8PLAN,
                   .loss_bytes = 10,
                   .launch_s = 3e-6,
                   .overlap_tp = 0.125,
                   .overlap_tp_on = 0.25,
                   .overlap_dp = 0.375,
                   .overlap_pp = 0.5,
                   .overlap_cp = 0.625,
                   .overlap_ep = 0.75,
                   .alloc_reserve = 0.0625};
    strcpy(s.name, "fp8plan");
    strcpy(s.source, "a \"quoted\" source");
    strcpy(s.alias, "this-executor");
    CHECK(cal_stack_row(&s, &c, row, sizeof row, &e) == ST_OK);
    char header[512];
    cal_stack_header(header, sizeof header);
    CHECK(!strchr(header, '?'));
    snprintf(text, sizeof text, "%s\n%s\n", header, row);
    CHECKF(catalog_parse_stacks(cat, text, strlen(text), "stacks.csv", &e) == ST_OK, "%s", e.msg);
    const StackSpec *ps = catalog_stack(cat, "fp8plan");
    CHECK(ps && ps->calibrated && ps->fusion == FUSE_FP8PLAN && ps->attn == ATTN_MATERIALIZED);
    if (ps) CHECK_REL(ps->launch_s, 2e-6, 1e-9);
    if (ps) CHECK_CONTAINS(ps->source, "a \"quoted\" source");
    if (ps) CHECK_STR(ps->alias, "this-executor"); /* the alias column written back */
    CHECK(catalog_stack(cat, "this-executor") == ps);
    if (ps) {
        CHECK(ps->sequence_parallel == 1 && ps->fused_swiglu == 0 && ps->fp8_weight_cache == 1);
        CHECK(ps->main_grad == MAIN_GRAD_BF16);
        CHECK_EQ_U64(ps->loss_bytes, 10);
        CHECK(ps->overlap_tp == 0.125 && ps->overlap_tp_on == 0.25 && ps->overlap_dp == 0.375);
        CHECK(ps->overlap_pp == 0.5 && ps->overlap_cp == 0.625 && ps->overlap_ep == 0.75);
        CHECK(ps->alloc_reserve == 0.0625);
    }
    free(cat);
}

static void test_host_rows_refused(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    if (!cat) return;
    Err e = {0};
    const char *bad[] = {
        /* a host whose link is not host */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,pcie,0,0,2,src,,,,\n",
        /* a GPU with a host link */
        "h,9.0,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,1,1,2,src,,,,\n",
        /* a measured link without its latency */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,3,2,src,,,,\n",
        /* one of the two bandwidths 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,0,2,src,0.5,,,\n",
        /* a latency of 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,3,3,2,src,0,,,\n",
        /* a GPU keeps its positive link */
        "h,9.0,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,nvlink,0,0,2,src,,,,\n",
        /* a grouped GEMM's cost per group below 0 */
        "h,cpu,1,1000,10,0.05,0.04,0.02,0.05,0.04,1,host,0,0,2,src,,,,-1\n",
    };
    const char *col[] = {"intra_link",      "intra_link",      "link_latency_us", "inter_node_gbps",
                         "link_latency_us", "intra_node_gbps", "group_gemm_us"};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s\n%s", cal_gpu_header, bad[i]);
        CHECKF(catalog_parse_gpus(cat, text, strlen(text), "gpus.csv", &e) == ST_DATA, "row %u accepted", i);
        CHECK_CONTAINS(e.msg, col[i]);
    }
    free(cat);
}

/* A host row by hand: 100 GFLOP/s BF16, 50 FP8, 10 GB/s, a 2-rank link of 1 GB/s and 1 us per step. */
static GpuSpec host_gpu(void)
{
    GpuSpec g = fx_gpu();
    g.host = 1, g.sm = 0, g.sms = 1, g.link = LINK_HOST;
    g.flops_bf16 = g.mamf_bf16 = 100e9, g.flops_fp8 = g.mamf_fp8 = 50e9, g.flops_fp32 = 100e9;
    g.hbm_bw = 10e9, g.sustained = 1, g.intra_bw = g.inter_bw = 1e9, g.link_lat = 1e-6, g.gpus_per_node = 2;
    return g;
}

static void test_host_gemm_and_link(void)
{
    GpuSpec g = host_gpu();
    PlanInput in;
    plan_input_defaults(&in); /* eff_hbm 0.8, eff_net 0.8: not applied to a host's achieved figures */
    in.gpu = &g;
    in.launch_s = 2e-6;
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    /* no tiles, no k0: 64 x 128 x 256 BF16 is 2 x 64 x 128 x 256 = 4,194,304 FLOP / 100e9 = 4.194304e-5 s;
     * its bytes (64 x 256 + 256 x 128) x 2 + 64 x 128 x 2 = 114,688 / 10e9 = 1.14688e-5 s, below */
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 0, 2), 4.194304e-5, 1e-12);
    /* 65 rows: 2 x 65 x 128 x 256 / 100e9 = 4.25984e-5 (a GPU would pay a whole 128-row tile) */
    CHECK_REL(gemm_time(&gg, 65, 128, 256, 1, 0, 2), 4.25984e-5, 1e-12);
    /* FP8: 4,194,304 / 50e9 = 8.388608e-5 s */
    CHECK_REL(gemm_time(&gg, 64, 128, 256, 1, 1, 2), 8.388608e-5, 1e-12);
    /* operand-bound: 1 x 1 x 1e6: 2e6 FLOP / 100e9 = 2e-5 s; bytes (1e6 + 1e6) x 2 + 2 = 4,000,002 / 10e9 = 4.000002e-4 */
    CHECK_REL(gemm_time(&gg, 1, 1, 1000000, 1, 0, 2), 4.000002e-4, 1e-12);
    /* the launch floor: 2 x 4^3 = 128 FLOP is nanoseconds: 2 us */
    CHECK_NEAR(gemm_time(&gg, 4, 4, 4, 1, 0, 2), 2e-6, 0);
    /* the link: all-reduce over 2 ranks of 1e6 bus bytes: 2 steps x 1 us + 1e6 / 1e9 = 1.002e-3 s, no LL/Simple
     * choice, no eff_net */
    double bw = 0, lat = 0;
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 2, 1, 1e6, &bw, &lat), 1.002e-3, 1e-12);
    CHECK_REL(bw, 1e9, 0);
    CHECK_REL(lat, 2e-6, 1e-12);
    /* all-gather over 2: 1 step: 1e-6 + 5e5 / 1e9 = 5.01e-4 */
    CHECK_REL(plan_coll_call(&in, OP_ALL_GATHER, 2, 1, 5e5, NULL, NULL), 5.01e-4, 1e-12);
    /* the same row as a GPU (not host): eff_net 0.8 scales the bandwidth: 2e-6 + 1e6 / 0.8e9 = 1.252e-3 */
    g.host = 0;
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 2, 1, 1e6, NULL, NULL), 1.252e-3, 1e-12);
}

static void test_host_plans(void)
{
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_te_recipe("te-fp8", 0); /* min_sm 89 */
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 2, in.dp = 2;
    Plan *p = calloc(1, sizeof *p);
    if (!p) return;
    Err e = {0};
    /* an FP8 recipe on a host (min_sm 89 against sm 0): emulated, planned */
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK(p->coll[CO_DP_GRAD_AR].calls > 0 && p->coll[CO_DP_GRAD_AR].time_s > 0);
    CHECK(p->time.fwd_s > 0 && p->time.bwd_s > 0 && p->time.fwd_s + p->time.bwd_s <= p->time.step_s);
    /* no interconnect measured: one rank plans, two are refused naming it */
    g.intra_bw = g.inter_bw = 0, g.link_lat = 0;
    CHECK(plan_build(&in, p, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "no interconnect");
    in.dp = 1, in.gbs = 1;
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    free(p);
}

/* elem_gbps: the element-wise kernels at their own rate, the optimizer's stream at hbm_gbps. With no launch
 * floor every element-wise op is bytes / rate, so halving elem_bw doubles the non-GEMM time exactly and leaves
 * the optimizer (bytes / hbm_bw) as it was; 0 means hbm_bw (a GPU row's plan is unchanged). BF16 recipe: no FP8
 * commit or weight casts. */
static void test_elem_rate(void)
{
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.gbs = 1, in.launch_s = 0;
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *z = calloc(1, sizeof *z);
    Err e = {0};
    if (!a || !b || !z) return;
    g.elem_bw = 10e9; /* = hbm_bw */
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    g.elem_bw = 5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    g.elem_bw = 0;
    CHECKF(plan_build(&in, z, &e) == ST_OK, "%s", e.msg);
    CHECK(a->time.nongemm_s > 0);
    CHECK_REL(b->time.nongemm_s, 2.0 * a->time.nongemm_s, 1e-12);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 0);
    CHECK_REL(z->time.step_s, a->time.step_s, 0);
    free(a), free(b), free(z);
}

/* scaled_optim_gbps: FP8-LM's optimizer (its GEMM class two-pass: FP16 master, E4M3 m, FP16 v, E4M3 grads, no
 * working weight) at its own rate, the other class (megatron-bf16's FP32 states) still streamed at hbm_gbps.
 * The tiny model's GEMM weights: 2 layers x (QKV 8 x 24 + proj 8 x 8 + FC1 8 x 32 + FC2 32 x 8 = 192 + 64 +
 * 256 + 256 = 768) = 1,536; their optimizer bytes 17 x 1,536 = 26,112 (grad 1, master 2 + m 1 + v 2 read and
 * written 10, the second pass 6). At hbm_gbps / 4 (2.5 GB/s) the optimizer takes 26,112 x (1 / 2.5e9 -
 * 1 / 10e9) = 26,112 x 3 / 10e9 = 7.8336 us longer; at hbm_gbps exactly what it takes without the column;
 * a BF16 recipe (one pass) is not touched. */
static void test_scaled_optim_rate(void)
{
    Catalog *cat = fx_catalog();
    CHECK(cat != NULL);
    if (!cat) return;
    const Recipe *r8 = catalog_recipe(cat, "fp8lm"), *r16 = catalog_recipe(cat, "megatron-bf16");
    CHECK(r8 != NULL && r16 != NULL);
    GpuSpec g = host_gpu();
    ModelSpec m = fx_tiny_model();
    Plan *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    Err e = {0};
    if (!a || !b || !c || !r8 || !r16) {
        free(a), free(b), free(c), free(cat);
        return;
    }
    PlanInput in = fx_input(&m, &g, r8);
    in.mbs = 1, in.gbs = 1;
    g.scaled_optim_bw = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(a->params_gemm_gpu, 1536);
    g.scaled_optim_bw = 10e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(b->time.optimizer_s, a->time.optimizer_s, 1e-12);
    g.scaled_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, c, &e) == ST_OK, "%s", e.msg);
    CHECK_REL(c->time.optimizer_s - a->time.optimizer_s, 7.8336e-6, 1e-9);
    in = fx_input(&m, &g, r16);
    in.mbs = 1, in.gbs = 1;
    g.scaled_optim_bw = 0;
    CHECKF(plan_build(&in, a, &e) == ST_OK, "%s", e.msg);
    g.scaled_optim_bw = 2.5e9;
    CHECKF(plan_build(&in, b, &e) == ST_OK, "%s", e.msg);
    CHECK(b->time.optimizer_s == a->time.optimizer_s && b->time.step_s == a->time.step_s);
    free(a), free(b), free(c), free(cat);
}

/* The MoE layer's grouped GEMMs calibrate times (cal_expert_shapes) and the cost per group fitted from them
 * (cal_group_cost). A model of hidden 64, seq 32, 8 experts top-2 of FFN 224, SwiGLU, mbs 1: 32 x 2 = 64 rows;
 * FC1 (2 x 224 = 448, 64), FC2 (64, 224):
 *   fc1 fprop (64, 448, 64), dgrad (64, 64, 448), wgrad (448, 64, 64) accumulated; fc2 fprop (64, 64, 224),
 *   dgrad (64, 224, 64), wgrad (64, 224, 64); GELU: FC1 224 wide.
 * Cost per group: two calls of 2 x 64 x 448 x 64 = 3,670,016 FLOPs at 1e10 FLOP/s (367.0016 us each) that took
 * 500 and 600 us, 8 groups: (500 + 600 - 2 x 367.0016) / (2 x 8) = 22.8748 us; calls faster than their FLOPs
 * give 0, never a negative cost; no rate or no groups: 0. */
static void test_group_cost(void)
{
    ModelSpec m = {.name = "x", .layers = 2, .hidden = 64, .ffn_hidden = 224, .heads = 4, .kv_heads = 4};
    m.head_dim = 16, m.vocab = 256, m.seq_len = 32, m.mlp = MLP_SWIGLU, m.experts = 8, m.experts_per_token = 2;
    m.expert_ffn = 224;
    CalGemm s[CAL_EXPERT_GEMMS];
    uint32_t G = 0;
    uint64_t R = 0;
    CHECK(cal_expert_shapes(&m, 1, &G, &R, s) == 6);
    CHECK(G == 8 && R == 64);
    const uint64_t want[6][3] = {{64, 448, 64}, {64, 64, 448}, {448, 64, 64},
                                 {64, 64, 224}, {64, 224, 64}, {64, 224, 64}};
    for (int i = 0; i < 6; i++) {
        CHECKF(s[i].m == want[i][0] && s[i].n == want[i][1] && s[i].k == want[i][2], "%s: %llu %llu %llu", s[i].what,
               (unsigned long long)s[i].m, (unsigned long long)s[i].n, (unsigned long long)s[i].k);
        CHECK(s[i].accum == (i % 3 == 2) && s[i].path == CAL_PATH_BF16);
    }
    CHECK_STR(s[0].what, "experts fc1 fprop");
    CHECK_STR(s[5].what, "experts fc2 wgrad");
    m.mlp = MLP_GELU;
    CHECK(cal_expert_shapes(&m, 2, &G, &R, s) == 6 && R == 128 && s[0].n == 224 && s[1].k == 224);
    m.experts = 0;
    CHECK(cal_expert_shapes(&m, 1, &G, &R, s) == 0);
    CalGemm g[2] = {{.m = 64, .n = 448, .k = 64, .seconds = 500e-6}, {.m = 64, .n = 448, .k = 64, .seconds = 600e-6}};
    CHECK_REL(cal_group_cost(g, 2, 8, 1e10), (1100e-6 - 2 * 367.0016e-6) / 16, 1e-12);
    CHECK_NEAR(cal_group_cost(g, 2, 8, 1e9), 0, 0); /* 3.67 ms of FLOPs at 1e9: faster than that, 0 */
    CHECK_NEAR(cal_group_cost(g, 2, 0, 1e10), 0, 0);
    CHECK_NEAR(cal_group_cost(g, 2, 8, 0), 0, 0);
    CHECK_NEAR(cal_group_cost(g, 0, 8, 1e10), 0, 0);
    /* judged as a figure: the two calls' FLOPs (m is all 8 groups' rows), 2 x 3,670,016, over their 1.1 ms:
     * 7,340,032 / 1.1e-3 = 6.6727564e9 FLOP/s, with their weighted spread; a profile without experts skips it */
    Calibration c;
    memset(&c, 0, sizeof c);
    c.nxgemm = 2, c.xgroups = 8, c.xgemm[0] = g[0], c.xgemm[1] = g[1], c.group_iqr = 0.05;
    double rate[CAL_FIGS], iqr[CAL_FIGS];
    cal_figures(&c, rate, iqr);
    CHECK_REL(rate[CAL_FIG_GROUP], 7340032.0 / 1.1e-3, 1e-12);
    CHECK_NEAR(iqr[CAL_FIG_GROUP], 0.05, 0);
    CalJudge j;
    c.nxgemm = 0;
    cal_judge(&c, NULL, &j);
    CHECK(j.skip[CAL_FIG_GROUP]);
    CHECK_STR(cal_fig_names[CAL_FIG_GROUP], "gemm experts");
}

int main(void)
{
    RUN(test_group_cost);
    RUN(test_busbw);
    RUN(test_fit_line);
    RUN(test_fit_link);
    RUN(test_link_sweep);
    RUN(test_link_reps);
    RUN(test_median);
    RUN(test_stats);
    RUN(test_iqr_bound);
    RUN(test_judge);
    RUN(test_rows_parse);
    RUN(test_host_rows_refused);
    RUN(test_host_gemm_and_link);
    RUN(test_host_plans);
    RUN(test_elem_rate);
    RUN(test_scaled_optim_rate);
    return test_summary();
}
