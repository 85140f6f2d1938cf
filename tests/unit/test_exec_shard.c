/* tests/unit/test_exec_shard.c — the distributed optimizer's shards
 * (exec/model/model_shard.c) without MPI: the tensors a ZeRO-1 plan lays out,
 * which elements each rank owns, where its shard pointers point and what
 * model_init_weights puts there. A rank is a single-rank communicator told
 * it is rank r of 4 (model_create makes no collective).
 *
 * The model, by hand (fx_gpt cut to 1 layer, hidden 33, 3 heads of 11, FFN 67,
 * seq 5, vocabulary 64 padded to 64):
 *   linear weights, in table order: QKV 99x33 = 3,267 at flat 0, proj 33x33 =
 *   1,089 at 3,267, FC1 67x33 = 2,211 at 4,356, FC2 33x67 = 2,211 at 6,567:
 *   E = 8,778; dp 4: S = ceil(8,778 / 4) = 2,195 (4 x 2,195 = 8,780), rank r owns
 *   [2,195 r, min(2,195 (r + 1), 8,778)): ranks 0-2 2,195 elements, rank 3 2,193.
 *   others: wte 64x33 = 2,112, wpe 5x33 = 165, LN1 66, QKV bias 99, proj bias
 *   33, LN2 66, FC1 bias 67, FC2 bias 33, final LN 66: E = 2,707; S = 677
 *   (4 x 677 = 2,708): rank 3 owns 676. */
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

static ModelSpec odd(void)
{
    ModelSpec m = fx_gpt();
    m.layers = 1, m.hidden = 33, m.heads = m.kv_heads = 3, m.head_dim = 11, m.ffn_hidden = 67, m.seq_len = 5;
    return m;
}

static const ArenaSpec *spec_named(const ArenaSpecs *s, const char *name)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name)) return &s->v[i];
    return NULL;
}

/* The layout of a ZeRO-1 plan at dp 4: one shard tensor per class and sharded state, S elements,
 * the plan's bytes; weights and gradients stay per tensor and whole. */
static void test_layout_dp4(void)
{
    ModelSpec m = odd();
    Recipe r = fx_recipe("megatron-bf16");
    static Plan p;
    Err e;
    CHECK_EQ_INT(fx_plan_dp(&m, &r, 2, 1, 4, SHARD_ZERO1, &p, &e), ST_OK);
    ArenaSpecs s = {0};
    uint64_t bytes[ARENA_TERMS];
    CHECK_EQ_INT(model_layout(&p, &s, &e), ST_OK);
    CHECK_EQ_INT(arena_specs_bytes(&s, bytes, &e), ST_OK);
    const char *gemm[3] = {"master.shard", "adam_m.shard", "adam_v.shard"};
    const char *other[3] = {"other.master.shard", "other.adam_m.shard", "other.adam_v.shard"};
    for (int k = 0; k < 3; k++) {
        const ArenaSpec *g = spec_named(&s, gemm[k]), *o = spec_named(&s, other[k]);
        CHECK(g && g->elements == 2195 && g->dtype == DT_FP32);
        CHECK(o && o->elements == 677);
        /* a shard spans every block of its class: layer -1, the tag a checkpoint's record of it carries
         * (exec/ckpt/ckpt.h: i32 layer, -1 when not per block; tests/cli/mpi_resume.sh reads it in the file) */
        CHECK(g && g->layer == -1 && o && o->layer == -1);
    }
    CHECK_EQ_U64(bytes[MT_MASTER_GEMM], 8780); /* 2,195 x 4: the plan's ceil */
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 8780);
    CHECK_EQ_U64(bytes[MT_OPTIM_V_OTHER], 2708); /* 677 x 4 */
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_OTHER].bytes, 2708);
    CHECK_EQ_U64(bytes[MT_GRAD_GEMM], 8778 * 4);   /* ZeRO-1 keeps gradients whole */
    CHECK_EQ_U64(bytes[MT_WEIGHT_GEMM], 8778 * 2); /* BF16 working weights whole */
    arena_specs_free(&s);
    /* ZeRO-2 is planned, not run */
    CHECK_EQ_INT(fx_plan_dp(&m, &r, 2, 1, 4, SHARD_ZERO2, &p, &e), ST_OK);
    CHECK_EQ_INT(model_layout(&p, &s, &e), ST_UNAVAILABLE);
    CHECK(strstr(e.msg, "--zero 2") != NULL);
    arena_specs_free(&s);
}

/* Rank r of 4: a model whose communicator says so. */
static Model *rank_model(Backend *bk, int r, uint32_t dp)
{
    ModelSpec m = odd();
    Recipe rc = fx_recipe("megatron-bf16");
    return fx_rank_model(bk, &m, &rc, r, dp);
}

static void drop(Model *m) { fx_rank_drop(m); }

/* Which elements each rank owns, where its shard pointers point, and that every rank's shard holds
 * the one rank's initial master values at those elements. */
static void test_owned_ranges(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    if (!bk) return;
    Model *one = rank_model(bk, 0, 1);
    CHECK(one != NULL);
    /* one rank shards nothing: one way, no shard elements (model.h: S = 0 when nothing is sharded) */
    CHECK(one && one->shard_ways == 1 && one->shard_elems[0] == 0 && one->shard_elems[1] == 0);
    CHECK(one && one->class_elems[0] == 8778 && one->class_elems[1] == 2707);
    uint64_t own[2][4] = {{0}}; /* per class and rank: elements owned */
    for (int r = 0; one && r < 4; r++) {
        Model *m = rank_model(bk, r, 4);
        CHECK(m != NULL);
        if (!m) continue;
        CHECK_EQ_INT(m->shard_ways, 4);
        CHECK(m->class_elems[0] == 8778 && m->class_elems[1] == 2707);
        CHECK(m->shard_elems[0] == 2195 && m->shard_elems[1] == 677);
        for (uint32_t i = 0; i < m->nparams; i++) {
            const ModelParam *q = &m->params[i], *q1 = &one->params[i];
            own[model_class(q)][r] += q->own_n;
            CHECK((q->master != NULL) == (q->own_n != 0));
            if (!q->own_n) continue;
            /* the shard pointer: element own_lo of q sits at flat + own_lo − r·S of the shard */
            uint64_t at = q->flat + q->own_lo - (uint64_t)r * m->shard_elems[model_class(q)];
            CHECK((float *)q->master == (float *)m->shard_buf[model_class(q)][STATE_MASTER] + at);
            /* model_init_weights wrote the one rank's values there */
            CHECK(!memcmp(q->master, (float *)q1->master + q->own_lo, q->own_n * sizeof(float)));
        }
        /* rank 1 owns [2,195, 4,390): QKV from 2,195 (1,072 elements), all of proj, FC1's first 34 */
        if (r == 1) {
            const ModelParam *qkv = model_find_param(m, PK_QKV_W, 0), *proj = model_find_param(m, PK_PROJ_W, 0),
                             *fc1 = model_find_param(m, PK_FC1_W, 0), *fc2 = model_find_param(m, PK_FC2_W, 0);
            CHECK(qkv->own_lo == 2195 && qkv->own_n == 1072);
            CHECK(proj->own_lo == 0 && proj->own_n == 1089);
            CHECK(fc1->own_lo == 0 && fc1->own_n == 34);
            CHECK(fc2->own_n == 0 && fc2->master == NULL);
        }
        /* rank 3 owns [6,585, 8,778): FC2 from 18 (6,585 − 6,567) to its end, 2,193 elements */
        if (r == 3) {
            const ModelParam *fc2 = model_find_param(m, PK_FC2_W, 0);
            CHECK(fc2->own_lo == 18 && fc2->own_n == 2193);
        }
        /* a checkpoint record of the master shard: the whole class, this rank's bytes from r·S·4 */
        for (uint32_t i = 0; i < m->specs.n; i++)
            if (!strcmp(m->specs.v[i].name, "master.shard")) {
                uint64_t whole = 0, lo = 0;
                CHECK(model_shard_spec(m, &m->specs.v[i], &whole, &lo));
                CHECK_EQ_U64(whole, 8778 * 4);
                CHECK_EQ_U64(lo, (uint64_t)r * 2195 * 4);
            }
        drop(m);
    }
    CHECK(own[0][0] == 2195 && own[0][1] == 2195 && own[0][2] == 2195 && own[0][3] == 2193);
    CHECK(own[1][0] == 677 && own[1][1] == 677 && own[1][2] == 677 && own[1][3] == 676);
    drop(one);
    bk->destroy(bk);
}

/* Experts (fx_moe, sigmoid router; megatron-bf16: BF16 weights, FP32 master, gradient, m and v), as
 * Megatron-Core's distributed optimizer groups them: the dense parameters' states over the DP group,
 * the routed experts' over their expert-data-parallel group. By hand:
 *   experts (block 1, 4 of Fe 16, SwiGLU): FC1 (E/ep · 2·16, 32), FC2 (E/ep · 32, 16): at ep 2 a rank's 2
 *   experts are 2,048 + 1,024 = 3,072 elements; dp 4 / ep 2 = edp 2: S = 1,536 (master 6,144 B), the
 *   gradient whole (12,288 B), the weight whole (BF16, 6,144 B).
 *   other linears: block 0 QKV (32 + 2·2·8 = 64, 32) 2,048, proj 1,024, FC1 (96, 32) 3,072, FC2 (32, 48)
 *   1,536; block 1 QKV 2,048, proj 1,024, shared FC1 (32, 32) 1,024, FC2 (32, 16) 512: E = 12,288, dp 4:
 *   S = 3,072 (12,288 B).
 *   others: wte and lm_head 64 x 32 each 4,096, 4 norms of 32 and the final norm 160, router (4, 32) 128:
 *   E = 4,384, S = 1,096 (4,384 B).
 *   the router's bias: a buffer beside them, whole on every rank and in no class (4 experts x 1 MoE layer
 *   x 4 B = 16 B of router_bias, FP32 whatever the recipe). */
static void test_moe_layout(void)
{
    ModelSpec m = fx_moe(ROUTER_SIGMOID);
    Recipe r = fx_recipe("megatron-bf16");
    r.comm_ep_dispatch = r.comm_ep_combine = DT_BF16; /* models/recipes.csv's megatron-bf16 row */
    static Plan p, q;
    Err e;
    CHECK_EQ_INT(fx_plan_dp(&m, &r, 2, 1, 4, SHARD_ZERO1, &p, &e), ST_OK);
    PlanInput in = p.in;
    in.ep = 2;
    CHECKF(plan_build(&in, &q, &e) == ST_OK, "%s", e.msg);
    ArenaSpecs s = {0};
    uint64_t bytes[ARENA_TERMS];
    CHECKF(model_layout(&q, &s, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(arena_specs_bytes(&s, bytes, &e), ST_OK);
    const ArenaSpec *xm = spec_named(&s, "expert.master.shard"), *xv = spec_named(&s, "expert.adam_v.shard");
    CHECK(xm && xm->elements == 1536 && xm->dtype == DT_FP32 && xv && xv->elements == 1536);
    CHECK(xm && xm->layer == -1 && xv && xv->layer == -1); /* the experts' shards span every MoE layer */
    CHECK(spec_named(&s, "expert.grad.shard") == NULL);    /* ZeRO-1: gradients whole */
    const ArenaSpec *rb = spec_named(&s, "router.expert_bias");
    CHECK(rb && rb->term == MT_ROUTER_BIAS && rb->dtype == DT_FP32 && rb->elements == 4);
    static const struct {
        MemTermId id;
        uint64_t want;
    } t[] = {{MT_MASTER_EXPERT, 6144}, {MT_OPTIM_M_EXPERT, 6144}, {MT_OPTIM_V_EXPERT, 6144}, {MT_GRAD_EXPERT, 12288},
             {MT_WEIGHT_EXPERT, 6144}, {MT_MASTER_GEMM, 12288},   {MT_OPTIM_V_GEMM, 12288},  {MT_MASTER_OTHER, 4384},
             {MT_OPTIM_M_OTHER, 4384}, {MT_ROUTER_BIAS, 16}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CHECKF(bytes[t[i].id] == t[i].want, "term %d: %llu B laid out, %llu by hand", (int)t[i].id,
               (unsigned long long)bytes[t[i].id], (unsigned long long)t[i].want);
        CHECK_EQ_U64(q.mem[t[i].id].bytes, t[i].want); /* the plan's term */
    }
    arena_specs_free(&s);
}

/* fx_moe at ep 1 over 4 ranks: the experts' group is the DP group (edp = dp), 4 experts, 6,144 elements
 * (FC1 4,096 at flat 0, FC2 2,048 at 4,096), S = 1,536: rank 2 owns [3,072, 4,608) = FC1 from 3,072 (1,024
 * elements) and FC2's first 512; the sigmoid router's bias no parameter (no sharded master): its FP32
 * buffer whole on every rank (4 floats, zeros at the start). */
static void test_moe_owned(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    if (!bk) return;
    ModelSpec ms = fx_moe(ROUTER_SIGMOID);
    Recipe rc = fx_recipe("megatron-bf16");
    Model *m = fx_rank_model(bk, &ms, &rc, 2, 4);
    CHECK(m != NULL);
    if (m) {
        CHECK_EQ_U64(m->class_elems[MODEL_CLASS_EXPERT], 6144);
        CHECK_EQ_U64(m->shard_elems[MODEL_CLASS_EXPERT], 1536);
        CHECK(m->class_ways[MODEL_CLASS_EXPERT] == 4 && m->class_rank[MODEL_CLASS_EXPERT] == 2);
        const ModelParam *x1 = model_find_param(m, PK_XFC1_W, 1), *x2 = model_find_param(m, PK_XFC2_W, 1);
        CHECK(x1 && x1->own_lo == 3072 && x1->own_n == 1024);
        CHECK(x2 && x2->own_lo == 0 && x2->own_n == 512);
        CHECK(x2 && (float *)x2->master == (float *)m->shard_buf[MODEL_CLASS_EXPERT][STATE_MASTER] + 1024);
        CHECK(model_find_param(m, PK_ROUTER_B, 1) == NULL);
        CHECK(m->arena.placed[MT_ROUTER_BIAS] == 16);
        const float zero[4] = {0};
        CHECK(m->expert_bias && !memcmp(m->expert_bias, zero, sizeof zero));
    }
    drop(m);
    bk->destroy(bk);
}

/* The experts' group beside tensor parallelism (model_shard_plan over a plan of tp 2): the expert side folds a
 * stage's tp x dp ranks, so the experts' states shard over edp = tp x dp / ep ranks and a rank's place among them
 * is its rank within the stage, (tp_rank + tp x dp_rank) / ep (model_groups.c's EDP key); the dense classes over
 * the dp ranks, at dp_rank. fx_moe's 6,144 expert elements (whole on a TP rank). Rows, by hand:
 *   tp 2, dp 1, ep 1, rank (1, 0): edp 2 x 1 / 1 = 2, place 1 + 0 = 1, S = 3,072; dense dp 1: none; widest 2
 *   tp 2, dp 2, ep 1, rank (1, 1): edp 4, place 1 + 2 = 3, S = 1,536; dense over 2, place 1; widest 4
 *   tp 2, dp 2, ep 2, rank (1, 1): edp 2, place 3 / 2 = 1, S = 3,072; dense over 2, place 1; widest 2
 *   tp 2, dp 2, ep 4, rank (0, 1): edp 1 (experts whole, all-reduce-free), dense over 2; widest 2 */
static void test_moe_tp_groups(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    if (!bk) return;
    ModelSpec ms = fx_moe(ROUTER_SIGMOID);
    Recipe rc = fx_recipe("megatron-bf16");
    Model *m = fx_rank_model(bk, &ms, &rc, 0, 1);
    CHECK(m != NULL);
    static const struct {
        uint32_t dp, ep, tp_rank, dp_rank, ways, place, ways_gemm, place_gemm, widest;
        uint64_t S;
    } t[] = {{1, 1, 1, 0, 2, 1, 1, 0, 2, 3072},
             {2, 1, 1, 1, 4, 3, 2, 1, 4, 1536},
             {2, 2, 1, 1, 2, 1, 2, 1, 2, 3072},
             {2, 4, 0, 1, 1, 1, 2, 1, 2, 0}};
    for (size_t i = 0; m && i < sizeof t / sizeof t[0]; i++) {
        static Plan p;
        CHECKF(fx_plan_layout(&ms, &rc, 2, 1, t[i].dp, SHARD_ZERO1, 2, 1, &p, &e) == ST_OK, "%s", e.msg);
        Model x = *m; /* the same parameter table (its flat offsets are recomputed alike) */
        x.tp = 2, x.dp = t[i].dp, x.ep = t[i].ep, x.tp_rank = t[i].tp_rank, x.dp_rank = t[i].dp_rank;
        model_shard_plan(&x, &p);
        CHECK_EQ_U64(x.class_elems[MODEL_CLASS_EXPERT], 6144);
        CHECKF(x.class_ways[MODEL_CLASS_EXPERT] == t[i].ways, "row %zu: experts over %u ranks, %u by hand", i,
               x.class_ways[MODEL_CLASS_EXPERT], t[i].ways);
        if (t[i].ways > 1) CHECK_EQ_INT((int)x.class_rank[MODEL_CLASS_EXPERT], (int)t[i].place);
        CHECK_EQ_U64(x.shard_elems[MODEL_CLASS_EXPERT], t[i].S);
        CHECK_EQ_INT((int)x.class_ways[MODEL_CLASS_GEMM], (int)t[i].ways_gemm);
        CHECK_EQ_INT((int)x.class_rank[MODEL_CLASS_GEMM], (int)t[i].place_gemm);
        CHECK_EQ_INT((int)x.shard_ways, (int)t[i].widest);
    }
    drop(m);
    bk->destroy(bk);
}

/* The buckets (exec/model/model_grad_bucket.c, model_shard.c) and the plan's count of them (planner/plan_comm.c
 * plan_dp_buckets), on the odd model at dp 4 (the head comment's numbers): each class's gradients lie back to back
 * (the arena's packed gradient terms: QKV's 3,267 FP32 gradients end at 13,068 B, not a multiple of 16, and proj's
 * start there), and under ZeRO-1 its working weights too. By hand, per step:
 *   megatron-bf16, ZeRO-1: 2 reduce-scatters of (8,778 + 2,707) x 4 = 45,940 B in all (mean 22,970), each rank
 *   sending 45,940 - ceil(45,940 / 4) = 45,940 - 11,485 = 34,455 B; 2 all-gathers of 11,485 x 2 = 22,970 B (mean
 *   11,485), 22,970 - ceil(5,742.5) = 17,227 B sent;
 *   fp8lm, ZeRO-1 (per-tensor scaled E4M3 gradients, FP8 copies and no working weight for the 4 linears): 4 + 1
 *   reduce-scatters of 8,778 x 1 + 2,707 x 4 = 19,606 B, and 4 + 1 all-gathers of 8,778 + 2,707 x 2 = 14,192 B;
 *   megatron-bf16, no sharding: 2 all-reduces (a class each, both FP32: the classes stay apart) of 45,940 B in
 *   all, each rank sending 2 x 45,940 - ceil(2 x 45,940 / 4) = 91,880 - 22,970 = 68,910 B;
 *   fp8lm, no sharding: 4 + 1 all-reduces of 19,606 B, 39,212 - ceil(39,212 / 4) = 39,212 - 9,803 = 29,409 B sent;
 *   a GPU stack's plan (the planner's default kernels, not the executor's): one call each, as Megatron-Core
 *   makes with overlap off (one bucket per buffer). */
static void test_buckets(void)
{
    ModelSpec ms = odd();
    static const struct {
        const char *recipe;
        KernelFusion fusion;
        Sharding sharding;
        uint64_t rs_calls, rs_payload, rs_sent, ag_calls, ag_payload; /* rs: the all-reduce when not sharded */
    } t[] = {{"megatron-bf16", FUSE_FP8PLAN, SHARD_ZERO1, 2, 45940, 34455, 2, 22970},
             {"fp8lm", FUSE_FP8PLAN, SHARD_ZERO1, 5, 19606, 19606 - 4902, 5, 14192},
             {"megatron-bf16", FUSE_TE, SHARD_ZERO1, 1, 45940, 34455, 1, 22970},
             {"megatron-bf16", FUSE_FP8PLAN, SHARD_NONE, 2, 45940, 68910, 0, 0},
             {"fp8lm", FUSE_FP8PLAN, SHARD_NONE, 5, 19606, 29409, 0, 0},
             {"megatron-bf16", FUSE_TE, SHARD_NONE, 1, 45940, 68910, 0, 0}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        Recipe r = fx_recipe(t[i].recipe);
        if (!strcmp(t[i].recipe, "fp8lm")) /* models/recipes.csv's row: reduced and gathered in E4M3 */
            r.comm_dp_grad = r.comm_param_gather = DT_E4M3;
        static Plan p, q;
        Err e;
        CHECKF(fx_plan_dp(&ms, &r, 2, 1, 4, t[i].sharding, &p, &e) == ST_OK, "%s", e.msg);
        PlanInput in = p.in;
        in.fusion = t[i].fusion;
        CHECKF(plan_build(&in, &q, &e) == ST_OK, "%s", e.msg);
        const Collective *rs = &q.coll[t[i].sharding == SHARD_NONE ? CO_DP_GRAD_AR : CO_DP_GRAD_RS],
                         *ag = &q.coll[CO_DP_PARAM_AG];
        CHECKF(rs->calls == t[i].rs_calls && ag->calls == t[i].ag_calls, "row %zu: %llu and %llu calls", i,
               (unsigned long long)rs->calls, (unsigned long long)ag->calls);
        CHECK_EQ_U64(plan_coll_step_payload(rs), t[i].rs_payload);
        CHECK_EQ_U64(rs->step_bytes, t[i].rs_sent);
        CHECK_EQ_U64(plan_coll_step_payload(ag), t[i].ag_payload);
        CHECK_EQ_U64(ag->step_bytes, t[i].ag_payload - (t[i].ag_payload + 3) / 4);
    }
    /* the executor's buffers: one rank (nothing sharded: the all-reduce's buckets) and rank 1 of 4 (ZeRO-1),
     * every parameter of a class at its flat offset from the class's first */
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    if (!bk) return;
    for (int dp = 1; dp <= 4; dp += 3) {
        Model *m = rank_model(bk, dp == 1 ? 0 : 1, (uint32_t)dp);
        CHECK(m != NULL);
        const uint8_t *g0[MODEL_CLASSES] = {0}, *w0[MODEL_CLASSES] = {0};
        for (uint32_t i = 0; m && i < m->nparams; i++) {
            const ModelParam *q = &m->params[i];
            const int c = model_class(q);
            if (!g0[c]) g0[c] = q->grad, w0[c] = q->weight;
            CHECKF((const uint8_t *)q->grad == g0[c] + q->flat * 4, "dp %d %s: gradient not at flat %llu", dp,
                   model_param_name(q->kind), (unsigned long long)q->flat);
            if (dp > 1) CHECK((const uint8_t *)q->weight == w0[c] + q->flat * 2); /* unsharded: at 256 B each */
        }
        const ModelParam *proj = m ? model_find_param(m, PK_PROJ_W, 0) : NULL;
        CHECK(proj && proj->flat == 3267); /* right after QKV's 13,068 B: no 16-byte gap */
        drop(m);
    }
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_layout_dp4);
    RUN(test_owned_ranges);
    RUN(test_buckets);
    RUN(test_moe_layout);
    RUN(test_moe_owned);
    RUN(test_moe_tp_groups);
    return test_summary();
}
