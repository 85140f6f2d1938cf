/* tests/unit/test_calibrate_a2a.c — the MPI all-to-all per message, worked by hand: calibrate's fit per protocol
 * (eager up to the measured eager limit, rendezvous past it: exec/measure/calibrate_fit.c cal_fit_messages) and
 * the sizes it sends (cal_msg_sizes), and a call planned from the messages a run's call sent and received
 * (planner/plan_comm.c plan_a2a_peers_s) and the plan's rows from their mean (plan_moe_routed.c plan_ep_routed_times). The plan's uniform routing per message
 * is in test_calibrate_links.c (test_plan_times_ep). */
#include <stdlib.h>
#include <string.h>

#include "exec/measure/calibrate.h"
#include "planner/plan.h"
#include "planner/plan_routed.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* Points whose times are exact lines t = A + S / B. */
static int sweep_of(const uint64_t *S, const double *A, const double *B, int n, CalColl *c)
{
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].payload = S[i];
        c[i].seconds = A[i] + (double)S[i] / B[i];
    }
    return n;
}

/* The all-to-all's per-message fits (cal_fit_messages) over 3 ranks, eager limit L = 4000: a call sends 2 messages,
 * each eager at 1 us + b / 2 GB/s up to 4000 B, rendezvous at 10 us + b / 5 GB/s past it, so a call takes twice
 * that (sweep_of with A = 2 x lat, B = bw / 2): at 1000 B 2 x (1e-6 + 5e-7) = 3 us, at 8000 B 2 x (1e-5 + 1.6e-6) =
 * 23.2 us. Each protocol's line is exact: eager [0, 4001) 1 us, 2 GB/s; rendezvous [4001, no end) 10 us, 5 GB/s.
 * The sizes calibrate sends for L = 4040 and a run's messages of 16 B (8 experts' counts / 2 ranks) and 4096 B
 * (an 8 KiB dispatch / 2): L/16 = 252 (rounded down), L/4 = 1010, L/2 = 2020, L, L + 1 = 4041, 2L = 8080, 4L =
 * 16160, 16L = 64640, sorted with 16 and 4096; up to 10,000 B the last two go. */
static void test_fit_messages(void)
{
    CalColl c[CAL_MAX_SIZES];
    CalRange r[2];
    const uint64_t S[] = {250, 1000, 2000, 4000, 4001, 8000, 16000};
    const double A[] = {2e-6, 2e-6, 2e-6, 2e-6, 20e-6, 20e-6, 20e-6}, B[] = {1e9, 1e9, 1e9, 1e9, 2.5e9, 2.5e9, 2.5e9};
    int n = sweep_of(S, A, B, 7, c);
    CHECK_REL(c[1].seconds, 3e-6, 1e-12);
    CHECK_REL(c[5].seconds, 23.2e-6, 1e-12);
    CHECK(cal_fit_messages(c, n, 4000, 3, r) == 2);
    CHECK(r[0].fit.op == OP_ALL_TO_ALL && r[0].fit.path == LINK_PATH_EAGER && r[0].fit.from == 0);
    CHECK(r[0].fit.to == 4001 && r[0].first == 0 && r[0].count == 4);
    CHECK(r[1].fit.path == LINK_PATH_RENDEZVOUS && r[1].fit.from == 4001 && r[1].fit.to == 0);
    CHECK(r[1].first == 4 && r[1].count == 3);
    CHECK_REL(r[0].fit.lat, 1e-6, 1e-9);
    CHECK_REL(r[0].fit.bw, 2e9, 1e-9);
    CHECK_REL(r[1].fit.lat, 10e-6, 1e-9);
    CHECK_REL(r[1].fit.bw, 5e9, 1e-9);
    CHECK(r[0].max_err < 1e-9 && r[1].max_err < 1e-9);
    /* one rendezvous point only, or one rank: no fit */
    CHECK(cal_fit_messages(c, 5, 4000, 3, r) == 0);
    CHECK(cal_fit_messages(c, n, 4000, 1, r) == 0);
    uint64_t z[CAL_MAX_SIZES];
    const uint64_t run[] = {16, 4096, 4040};
    const uint64_t want[] = {16, 252, 1010, 2020, 4040, 4041, 4096, 8080, 16160, 64640};
    CHECK_EQ_INT(cal_msg_sizes(4040, run, 3, 1 << 20, z), 10);
    for (int i = 0; i < 10; i++) CHECKF(z[i] == want[i], "size %d: %llu", i, (unsigned long long)z[i]);
    CHECK_EQ_INT(cal_msg_sizes(4040, run, 3, 10000, z), 8);
}

/* The judged figures (cal_msg_figures) over 3 ranks, L = 4000: eager points 1000 B in 3 us (iqr 10 %) and 4000 B in
 * 6 us (iqr 4 %): 2 x (1000 + 4000) = 10,000 message bytes over 9 us = 1.1111 GB/s, iqr (0.1 x 3 + 0.04 x 6) / 9 =
 * 6 %; rendezvous 8000 B in 23.2 us (iqr 20 %) and 16000 B in 26.4 us (iqr 0): 48,000 B over 49.6 us = 967.74 MB/s,
 * iqr 0.2 x 23.2 / 49.6 = 9.355 %. The fits of test_fit_messages give back their own points (cal_msg_predict):
 * eager 2 x (1 us + 1000 / 2 GB/s) = 3 us, rendezvous 2 x (10 us + 16000 / 5 GB/s) = 26.4 us. */
static void test_msg_figures(void)
{
    CalColl c[4];
    memset(c, 0, sizeof c);
    const uint64_t S[4] = {1000, 4000, 8000, 16000};
    const double t[4] = {3e-6, 6e-6, 23.2e-6, 26.4e-6}, q[4] = {0.10, 0.04, 0.20, 0};
    for (int i = 0; i < 4; i++) c[i].payload = S[i], c[i].seconds = t[i], c[i].iqr = q[i];
    double bw[2], iqr[2];
    CHECK(cal_msg_figures(c, 4, 4000, 3, bw, iqr) == 0);
    CHECK_REL(bw[0], 10000 / 9e-6, 1e-12);
    CHECK_REL(iqr[0], 0.06, 1e-12);
    CHECK_REL(bw[1], 48000 / 49.6e-6, 1e-12);
    CHECK_REL(iqr[1], 0.2 * 23.2 / 49.6, 1e-12);
    CHECK(cal_msg_figures(c, 2, 4000, 3, bw, iqr) == -1); /* no rendezvous point */
    CHECK(cal_msg_figures(c, 4, 4000, 1, bw, iqr) == -1); /* one rank */
    LinkFit fit[2] = {{OP_ALL_TO_ALL, LINK_PATH_EAGER, 0, 4001, 1e-6, 2e9},
                      {OP_ALL_TO_ALL, LINK_PATH_RENDEZVOUS, 4001, 0, 10e-6, 5e9}};
    cal_msg_predict(fit, 3, c, 4);
    CHECK_REL(c[0].seconds, 3e-6, 1e-12);
    CHECK_REL(c[1].seconds, 2 * (1e-6 + 4000 / 2e9), 1e-12); /* 4000 <= L: eager */
    CHECK_REL(c[2].seconds, 23.2e-6, 1e-12);
    CHECK_REL(c[3].seconds, 26.4e-6, 1e-12);
    CHECK(c[0].iqr == 0 && c[3].iqr == 0);
}

/* A host whose all-to-all has per-message fits only: eager [0, 4000) 1 us + b / 1 GB/s, rendezvous [4000, no end)
 * 3 us + b / 2 GB/s. */
static GpuSpec host_msgs(void)
{
    GpuSpec g = fx_gpu();
    g.host = 1, g.sm = 0, g.sms = 1, g.link = LINK_HOST;
    g.flops_bf16 = g.mamf_bf16 = 100e9, g.flops_fp8 = g.mamf_fp8 = 50e9, g.flops_fp32 = 100e9;
    g.hbm_bw = 10e9, g.sustained = 1, g.intra_bw = g.inter_bw = 1e9, g.link_lat = 1e-6, g.gpus_per_node = 4;
    const LinkFit f[] = {{OP_ALL_TO_ALL, LINK_PATH_EAGER, 0, 4000, 1e-6, 1e9},
                         {OP_ALL_TO_ALL, LINK_PATH_RENDEZVOUS, 4000, 0, 3e-6, 2e9}};
    memcpy(g.link_fit, f, sizeof f);
    g.nlink_fit = 2;
    return g;
}

/* A call planned from its own messages (plan_a2a_peers_s) at 2 ranks, BF16 rows of 256 (512 B): rank 0 sends its
 * peer 12 rows = 6,144 B (rendezvous: 3e-6 + 6,144 / 2e9 = 6.072e-6 s) and gets 2 rows = 1,024 B (eager: 1e-6 +
 * 1,024 / 1e9 = 2.024e-6 s); what it keeps (its own index) costs nothing here: 0.5 x (6.072e-6 + 2.024e-6) =
 * 4.048e-6 s, where the uniform plan's one 4,096 B message each way is rendezvous, 3e-6 + 2.048e-6 = 5.048e-6 s.
 * Over 3 ranks (rank 1: 8 rows to rank 0 and 4 from it, 4,096 and 2,048 B; 0 rows to and from rank 2, nothing
 * sent): 0.5 x (5.048e-6 + 1e-6 + 2.048e-6) + 0 = 4.048e-6 s. In a plan (ox_moe at seq 8: 8 x 2 x 512 = 8,192 B a
 * call, dp 4, ep 2, mbs 1, gbs 8: 2 calls a step) the mean over a run's calls, 4.048e-6 s, x 2 = 8.096e-6 s a
 * step, where the plan had 2 x 5.048e-6. */
static void test_routed_messages(void)
{
    GpuSpec g = host_msgs();
    const uint64_t to2[] = {20, 12}, from2[] = {20, 2}; /* elements of 256 BF16 values: rows x 256 */
    uint64_t to[2], from[2];
    for (int j = 0; j < 2; j++) to[j] = to2[j] * 256, from[j] = from2[j] * 256;
    CHECK_REL(plan_a2a_peers_s(&g, to, from, 2, 2, 0), 4.048e-6, 1e-12);
    const uint64_t to3[] = {8 * 256, 5 * 256, 0}, from3[] = {4 * 256, 5 * 256, 0};
    CHECK_REL(plan_a2a_peers_s(&g, to3, from3, 2, 3, 1), 4.048e-6, 1e-12);
    ModelSpec m = ox_moe(512);
    m.seq_len = 8;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 2, in.mbs = 1, in.gbs = 8;
    Plan *p = calloc(1, sizeof *p);
    CHECK(p != NULL);
    if (!p) return;
    Err e = {0};
    CHECKF(plan_build(&in, p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p->coll[CO_EP_DISPATCH_FWD].calls, 2);
    CHECK_REL(p->coll[CO_EP_DISPATCH_FWD].time_s, 2 * 5.048e-6, 1e-12);
    const double before = p->coll[CO_EP_COMBINE_FWD].time_s;
    const double call_s[EPR_COUNT_] = {0, 4.048e-6, 0, 0, 4.048e-6};
    plan_ep_routed_times(p, call_s);
    CHECK_REL(p->coll[CO_EP_DISPATCH_FWD].time_s, 8.096e-6, 1e-12);
    CHECK_REL(p->coll[CO_EP_COMBINE_BWD].exposed_s, 8.096e-6, 1e-12);
    CHECK(p->coll[CO_EP_COMBINE_FWD].time_s == before); /* no calls measured: the plan's */
    /* one rank's row (run_rank_ep_times, every rank's report): 3 us a call x its 2 calls a step; none: the plan's */
    CHECK_REL(plan_ep_routed_time(p, EPR_DISPATCH_BWD, 3e-6), 6e-6, 1e-12);
    CHECK(plan_ep_routed_time(p, EPR_COMBINE_FWD, 0) == before);
    CHECK(plan_ep_routed_time(p, EPR_COUNTS, 3e-6) == 0); /* the counts: no payload row */
    /* without per-message fits: -1 */
    g.nlink_fit = 0;
    CHECK(plan_a2a_peers_s(&g, to, from, 2, 2, 0) == -1);
    free(p);
}

int main(void)
{
    RUN(test_fit_messages);
    RUN(test_msg_figures);
    RUN(test_routed_messages);
    return test_summary();
}
