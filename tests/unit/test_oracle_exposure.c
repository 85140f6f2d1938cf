/* tests/unit/test_oracle_exposure.c — how much of a DP collective the step
 * time exposes, at the two ends where the answer follows by hand from the
 * rule in plan_time.c (exposed = max(0, time - overlap x window) plus one
 * bucket when overlapping, at most the whole time):
 *   - a gradient all-reduce a hundred thousand times shorter than the backward
 *     it hides behind: only its last bucket shows, time / buckets, with one
 *     bucket per layer of the stage (4 here);
 *   - a ZeRO-3 parameter gather of seconds behind microseconds of compute:
 *     all of it shows;
 *   - the context-parallel K/V exchange with no overlap: all of it shows.
 * The model is the oracle tiny GPT (support/oracle_fixtures.h, 4 layers),
 * BF16, dp 2, overlap_dp 1. The collective times themselves are the
 * planner's (test_oracle_time and test_plan_time check those); what is
 * checked here is the exposure rule applied to them. */
#include <math.h>

#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static int build(ModelSpec *m, GpuSpec *g, Recipe *r, Sharding sh, Plan *p)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r, in.vocab_pad = 1;
    in.dp = 2, in.gbs = 4, in.sharding = sh, in.overlap_dp = 1; /* 2 micro-batches */
    Err e = {0};
    Status st = plan_build(&in, p, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    return st == ST_OK;
}

/* A slow GPU (1 GFLOP/s, 1 GB/s HBM) and a fast link (1 PB/s): the backward takes ~0.1 s, the one gradient
 * all-reduce of the step ~10 us. Exposed: 0 behind the window, plus its last bucket: time / 4. */
static void test_hidden_all_reduce(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    g.flops_bf16 = 1e9, g.hbm_bw = 1e9, g.intra_bw = g.inter_bw = 1e15;
    Recipe r = ox_bf16(0);
    Plan p;
    if (!build(&m, &g, &r, SHARD_NONE, &p)) return;
    const Collective *ar = &p.coll[CO_DP_GRAD_AR];
    CHECK_EQ_U64(ar->calls, 1);
    CHECKF(ar->time_s > 0 && p.time.microbatch_s > 1e4 * ar->time_s, "premise: all-reduce %g s, micro-batch %g s",
           ar->time_s, p.time.microbatch_s);
    CHECK_EQ_INT((int)p.stage_layers, 4);
    CHECKF(fabs(ar->exposed_s - ar->time_s / 4) <= 1e-12 * ar->time_s, "exposed %g s of %g s, expected a quarter",
           ar->exposed_s, ar->time_s);
    CHECK(p.time.dp_comm_s == ar->exposed_s); /* the step's DP time is the one exposed collective */
}

/* One GPU per node on a 1 kB/s link: ZeRO-3 gathers each micro-batch's parameters (more than one call) for
 * seconds, while 2 micro-batches of the tiny model compute for under a microsecond on the big GPU: the whole
 * gather is exposed. */
static void test_exposed_gather(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    g.gpus_per_node = 1, g.inter_bw = 1000;
    Recipe r = ox_bf16(0);
    Plan p;
    if (!build(&m, &g, &r, SHARD_ZERO3, &p)) return;
    const Collective *ag = &p.coll[CO_DP_PARAM_AG];
    CHECKF(ag->calls > 1 && ag->time_s > 1.0 && p.time.microbatch_s < 1e-5,
           "premise: %llu gathers, %g s, micro-batch %g s", (unsigned long long)ag->calls, ag->time_s,
           p.time.microbatch_s);
    CHECKF(ag->exposed_s == ag->time_s, "exposed %g s of %g s, expected all", ag->exposed_s, ag->time_s);
    /* the step's DP time: the gather's and the gradient reduce-scatter's exposed parts (the latter as slow,
     * behind as little compute: all of it too) */
    const Collective *rs = &p.coll[CO_DP_GRAD_RS];
    CHECK(rs->calls > 0 && rs->exposed_s == rs->time_s);
    CHECKF(fabs(p.time.dp_comm_s - (ag->time_s + rs->time_s)) <= 1e-12 * p.time.dp_comm_s, "DP time %g s",
           p.time.dp_comm_s);
}

/* The tiny model at cp 2 with nothing overlapping the K/V exchange, 2 sequences a step. */
static PlanInput cp_input(const ModelSpec *m, const GpuSpec *g, const Recipe *r)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r, in.vocab_pad = 1;
    in.cp = 2, in.gbs = 2, in.overlap_cp = 0;
    return in;
}

/* Context parallelism with nothing overlapping it (overlap_cp 0): each layer pass's 3 K/V exchanges (gather
 * forward, again backward, reduce-scatter of dK, dV) show in full, so the exchange's exposed time is its whole
 * time, 4 layers x 2 micro-batches x 3 = 24 calls; and the step's CP time is that too (one stage). With cp 1
 * there is no exchange and nothing exposed. */
static void test_cp_exchange_exposed_in_full(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = cp_input(&m, &g, &r);
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    const Collective *kv = &p.coll[CO_CP_KV];
    CHECK_EQ_U64(kv->calls, 24);
    CHECK(kv->time_s > 0);
    CHECKF(fabs(kv->exposed_s - kv->time_s) <= 1e-12 * kv->time_s, "exposed %g s of %g s, expected all", kv->exposed_s,
           kv->time_s);
    CHECKF(fabs(p.time.cp_comm_s - kv->time_s) <= 1e-12 * kv->time_s, "CP time %g s", p.time.cp_comm_s);
    in.cp = 1;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK(p.coll[CO_CP_KV].calls == 0 && p.coll[CO_CP_KV].exposed_s == 0.0 && p.time.cp_comm_s == 0.0);
}

/* Where the exposed K/V exchange falls: of a layer pass's 3 exchanges, one is in the forward (the gather) and two
 * in the backward (the gather again, the reduce-scatter of dK, dV). The tiny model as above (cp 2, nothing
 * overlapping), planned twice, the second time with a GPU whose NVLink has a tenth of the bandwidth: only the
 * exchange gets slower (cp 2 is the only group larger than 1), so the forward time grows by one third of the
 * added CP time and the backward by two thirds, and the compute (GEMM, attention) stays. */
static void test_cp_exchange_forward_and_backward(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = cp_input(&m, &g, &r);
    Plan fast, slow;
    Err e = {0};
    CHECKF(plan_build(&in, &fast, &e) == ST_OK, "%s", e.msg);
    g.intra_bw /= 10;
    CHECKF(plan_build(&in, &slow, &e) == ST_OK, "%s", e.msg);
    double more = slow.time.cp_comm_s - fast.time.cp_comm_s;
    CHECKF(more > 1e-3 * slow.time.cp_comm_s, "premise: CP time %g s -> %g s", fast.time.cp_comm_s,
           slow.time.cp_comm_s);
    CHECK_REL(slow.time.fwd_s - fast.time.fwd_s, more / 3, 1e-9);
    CHECK_REL(slow.time.bwd_s - fast.time.bwd_s, more * 2 / 3, 1e-9);
    CHECK(slow.time.gemm_s == fast.time.gemm_s && slow.time.attn_s == fast.time.attn_s);
}

int main(void)
{
    RUN(test_hidden_all_reduce);
    RUN(test_exposed_gather);
    RUN(test_cp_exchange_exposed_in_full);
    RUN(test_cp_exchange_forward_and_backward);
    return test_summary();
}
