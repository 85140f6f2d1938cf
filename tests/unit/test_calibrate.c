/* tests/unit/test_calibrate.c — a host profile (fp8plan calibrate) worked by
 * hand: bus bandwidth, the weighted line fit, the link from an all-reduce
 * sweep, medians, spreads and the judged figures (exec/measure/calibrate_fit.c,
 * calibrate_judge.c); the rows it writes parse as a catalog with the measured
 * values (calibrate_rows.c). What the planner does with a host row:
 * test_calibrate_plan.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "exec/run/run_calibrate.h"
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
    CHECK_NEAR(cal_allreduce_busbw(1000, 1, 1e-3), 0, 0);  /* one rank moves nothing */
    CHECK_NEAR(cal_allreduce_busbw(1000, 0, 1e-3), 0, 0);  /* no ranks */
    CHECK_NEAR(cal_allreduce_busbw(1000, -1, 1e-3), 0, 0); /* a negative count is no count (not 2^64 - 1 ranks) */
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
    /* the element-wise kinds: judged where measured (the profile's rate > 0), skipped where not (an older row
     * under --check). The cast at 1 GB/s (iqr 0.05), its re-measure 0.85 GB/s: 0.85 / 1 - 1 = -15 %, past +-10 %;
     * the amax's iqr 0.2 passes 0.1424; the other five kinds 0: skipped, not failed */
    c = judged_figures(), again = judged_figures();
    c.elem_kind_bw[ELEM_CAST] = 1e9, c.elem_kind_iqr[ELEM_CAST] = 0.05, again.elem_kind_bw[ELEM_CAST] = 0.85e9;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.worst_drift == CAL_FIG_KIND + ELEM_CAST);
    CHECK_NEAR(j.drift[CAL_FIG_KIND + ELEM_CAST], -0.15, 1e-15);
    CHECK(j.skip[CAL_FIG_KIND + ELEM_NORM] && j.skip[CAL_FIG_KIND + ELEM_AMAX] && !j.skip[CAL_FIG_KIND + ELEM_CAST]);
    c.elem_kind_bw[ELEM_AMAX] = again.elem_kind_bw[ELEM_AMAX] = 5e9, c.elem_kind_iqr[ELEM_AMAX] = 0.2;
    CHECK(cal_judge(&c, &again, &j) == 2 && j.noisy == 1 && j.worst_noisy == CAL_FIG_KIND + ELEM_AMAX);
    CHECK_STR(cal_fig_names[CAL_FIG_KIND + ELEM_CAST_ROW], "elem cast row");
    /* MS-AMP O1's optimizer, judged like the scaled one: at 0.5 GB/s (iqr 0.05) against a re-measure at 0.44:
     * 0.44 / 0.5 - 1 = -12 %, past +-10 %, the one figure moved; its iqr 0.15 passes 0.1424 (by 1.053x), the one
     * figure noisy; not measured (0, an older row under --check): skipped, whatever the re-measure says */
    c = judged_figures(), again = judged_figures();
    c.o1_optim_bw = 0.5e9, c.o1_optim_iqr = 0.05, again.o1_optim_bw = 0.44e9;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.drifted == 1 && j.worst_drift == CAL_FIG_O1_OPTIM);
    CHECK_NEAR(j.drift[CAL_FIG_O1_OPTIM], -0.12, 1e-15);
    again.o1_optim_bw = 0.5e9, c.o1_optim_iqr = 0.15;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.noisy == 1 && j.worst_noisy == CAL_FIG_O1_OPTIM);
    c.o1_optim_bw = 0, again.o1_optim_bw = 0.44e9;
    CHECK(cal_judge(&c, &again, &j) == 0 && j.skip[CAL_FIG_O1_OPTIM]);
    CHECK_STR(cal_fig_names[CAL_FIG_O1_OPTIM], "o1 optimizer");
    /* every op's payload sweep, judged on its spread, at 28 calls a size (4 x 7): bound 0.06745 x sqrt(28) /
     * 1.2533 = 0.06745 x 5.2915026 / 1.2533 = 0.2847776. An FP32 all-reduce of 3 sizes at 10 us, 100 us, 5 ms
     * with iqrs 0.5, 0.3, 0.1: weighted by time (0.5 x 10 + 0.3 x 100 + 0.1 x 5000) / 5110 = 535 / 5110 =
     * 0.1046967: ok (the small calls' spread weighs little). A send of 2 sizes at 2 us, 1 ms with iqrs 0.1,
     * 0.4: (0.2 + 400) / 1002 = 0.3994012: past the bound (1.4025x), noisy, the profile's one count. The
     * per-message sweep (per_msg) is the a2a figures' and not judged here, whatever its spread. */
    c = judged_figures();
    c.link_reps = 28, c.nsweep = 3;
    c.sweep[0] = (CalSweep){.op = OP_ALL_REDUCE, .dtype = DT_FP32, .n = 3};
    const double t0[] = {10e-6, 100e-6, 5e-3}, q0[] = {0.5, 0.3, 0.1};
    for (int i = 0; i < 3; i++) c.sweep[0].pt[i].seconds = t0[i], c.sweep[0].pt[i].iqr = q0[i];
    c.sweep[1] = (CalSweep){.op = OP_SEND_RECV, .dtype = DT_BF16, .n = 2};
    c.sweep[1].pt[0].seconds = 2e-6, c.sweep[1].pt[0].iqr = 0.1;
    c.sweep[1].pt[1].seconds = 1e-3, c.sweep[1].pt[1].iqr = 0.4;
    c.sweep[2] = (CalSweep){.op = OP_ALL_TO_ALL, .dtype = DT_E4M3, .per_msg = 1, .n = 1};
    c.sweep[2].pt[0].seconds = 1e-6, c.sweep[2].pt[0].iqr = 5;
    CHECK(cal_judge(&c, NULL, &j) == 1);
    CHECK(j.noisy == 1 && j.link_noisy == 1 && j.worst_link == 1 && j.worst_noisy == -1);
    CHECK_REL(j.link_bound, 0.2847776, 1e-6);
    CHECK_REL(j.link_iqr[0], 535.0 / 5110.0, 1e-12);
    CHECK_REL(j.link_iqr[1], 400.2 / 1002.0, 1e-12);
    /* the send's large calls within the bound (iqr 0.2: 200.2 / 1002 = 0.1998): the profile holds */
    c.sweep[1].pt[1].iqr = 0.2;
    CHECK(cal_judge(&c, NULL, &j) == 0 && j.worst_link == -1);
    /* without link_reps (one rank; --check's measurement) nothing is judged */
    c.sweep[1].pt[1].iqr = 0.4, c.link_reps = 0;
    CHECK(cal_judge(&c, NULL, &j) == 0);
}

/* The checked warm-up's rule, last >= (1 - 0.05) prev, and the judge's use of it. */
static void test_warm_settled(void)
{
    static const struct {
        double prev, last;
        int warm;
    } cases[] = {
        {100, 100, 1},  /* the same time: warm */
        {100, 95.5, 1}, /* 4.5 % faster: within the 5 % a median is known to */
        {100, 94.5, 0}, /* 5.5 % faster: still speeding up */
        {100, 150, 1},  /* slower (load): not colder, left to the spread bound */
        {20, 10, 0},    /* twice as fast */
        {0, 100, 0},    /* no round before */
        {100, 0, 0},    /* no time */
        {100, NAN, 0},  /* not a time */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECKF(cal_warm_settled(cases[i].prev, cases[i].last) == cases[i].warm, "prev %g last %g: want %d",
               cases[i].prev, cases[i].last, cases[i].warm);
    /* the judge: a warm-up that ran CAL_WARM_ROUNDS_MAX rounds without settling counts once (cold), alone; a
     * settled one, or none made (a catalog row: 0 rounds), not at all; --check's measurement is the re-measure */
    CalJudge j;
    Calibration c = judged_figures(), again = judged_figures();
    c.warm_rounds = CAL_WARM_ROUNDS_MAX, c.warm_settled = 0;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.cold == 1 && j.noisy == 0 && j.drifted == 0);
    CHECK(cal_judge(&c, NULL, &j) == 1 && j.cold == 1);
    c.warm_rounds = 3, c.warm_settled = 1;
    CHECK(cal_judge(&c, &again, &j) == 0 && j.cold == 0);
    c = judged_figures(), again.warm_rounds = CAL_WARM_ROUNDS_MAX, again.warm_settled = 0;
    CHECK(cal_judge(&c, &again, &j) == 1 && j.cold == 1);
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
                   .alloc_reserve = 0.0625,
                   .expert_tp = 1};
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
    if (ps) CHECK(ps->expert_tp == 1);             /* and the expert-TP default ("tp") */
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

int main(void)
{
    RUN(test_busbw);
    RUN(test_fit_line);
    RUN(test_fit_link);
    RUN(test_link_sweep);
    RUN(test_link_reps);
    RUN(test_median);
    RUN(test_stats);
    RUN(test_iqr_bound);
    RUN(test_judge);
    RUN(test_warm_settled);
    RUN(test_rows_parse);
    return test_summary();
}
