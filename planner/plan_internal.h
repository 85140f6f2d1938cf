/* planner/plan_internal.h — what the plan_*.c files share (not a public API).
 *
 * Geo holds the layout-resolved sizes every part of the model needs; Ck is a
 * sticky overflow flag so the arithmetic stays readable: a chain of ck_mul /
 * ck_add calls and one check at the end. */
#ifndef FP8PLAN_PLANNER_PLAN_INTERNAL_H
#define FP8PLAN_PLANNER_PLAN_INTERNAL_H

#include "planner/plan.h"

typedef struct {
    int ovf;
} Ck;

static inline uint64_t ck_mul(Ck *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) c->ovf = 1;
    return r;
}
static inline uint64_t ck_add(Ck *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) c->ovf = 1;
    return r;
}
static inline uint64_t ck_mul3(Ck *c, uint64_t a, uint64_t b, uint64_t d) { return ck_mul(c, ck_mul(c, a, b), d); }
/* Division is most of a plan's cost: skip it for a divisor of 1 (the common
 * tp/cp/dp = 1 cases) and use 32-bit division when both operands fit. */
static inline uint64_t udiv(uint64_t a, uint64_t b)
{
    if (b == 1) return a;
    if ((a | b) <= UINT32_MAX) return (uint32_t)a / (uint32_t)b;
    return a / b;
}
static inline uint64_t umod(uint64_t a, uint64_t b)
{
    if (b == 1) return 0;
    if ((a | b) <= UINT32_MAX) return (uint32_t)a % (uint32_t)b;
    return a % b;
}
static inline uint64_t ceil_div(uint64_t a, uint64_t b) { return udiv(a, b) + (umod(a, b) != 0); }

/* dtype_bytes and dtype_is_fp8 inline: plan_build calls them a few hundred times per plan. */
static inline uint64_t dt_bytes(Dtype d)
{
    switch (d) {
    case DT_FP32: return 4;
    case DT_FP16:
    case DT_BF16: return 2;
    case DT_E4M3:
    case DT_E5M2:
    case DT_E8M0: return 1;
    default: return 0;
    }
}
static inline int dt_fp8(Dtype d) { return d == DT_E4M3 || d == DT_E5M2; }

typedef struct {
    /* model, resolved */
    uint64_t h, F, k, heads, kv_heads, q_dim, kv_dim, L, V, Vp, seq;
    /* layout */
    uint64_t tp, pp, vpp, cp, dp, d, mbs, m, world, rep;
    uint64_t Ls;         /* layers on stage 0 */
    uint64_t Lf, Lm, Ll; /* layers on the first, each middle and the last stage (Lf = Ll = Lm when even) */
    uint64_t tok;        /* tokens of one micro-batch on this CP rank: mbs * seq / cp */
    uint64_t s_local;    /* seq / cp */
    /* per-rank sizes, divided once: q_dim/tp, kv_dim/tp, ffn/tp, heads/tp, Vp/tp, ceil(tok/rep), ceil(h/tp) */
    uint64_t q_t, kv_t, F_t, heads_t, Vp_t, tok_r, h_t;
    /* per TP rank, per layer */
    uint64_t lin_rows[LIN_COUNT], lin_cols[LIN_COUNT];
    uint64_t gemm_layer;  /* linear weight elements per layer */
    uint64_t other_layer; /* norms + biases per layer */
    uint64_t norm_elems;  /* one norm (2h LayerNorm, h RMSNorm) */
    uint64_t emb;         /* token embedding Vp/tp * h */
    uint64_t pos;         /* learned position table seq_len * h */
    int last_is_first;    /* pp == 1 */
} Geo;

/* Stage-specific memory (both stage 0 and the last stage are built; the larger is reported). */
typedef struct {
    MemTerm mem[MT_COUNT_];
    uint64_t cat[MC_COUNT_];
    uint64_t total;
    uint64_t params, params_gemm;
} StageMem;

/* Activation bytes of one layer and micro-batch (recompute none; plan_mem.c explains the items). */
typedef struct {
    uint64_t hp, fp8, fp8_elems, attn, mask, input; /* input: the layer input (full recompute keeps only this) */
    uint64_t op;    /* everything op-level recompute keeps (layer input, odd matmul outputs, attention out + lse) */
    uint64_t wcopy; /* FP8 weight copies a layer saves for backward when they are not cached */
} LayerAct;

void plan_geo(const PlanInput *in, uint64_t seq, uint64_t gbs, Geo *g);
/* Layers on a stage. */
static inline uint64_t geo_layers(const Geo *g, uint32_t stage)
{
    return stage == 0 ? g->Lf : stage == g->pp - 1 ? g->Ll : g->Lm;
}
/* The main-gradient dtype of a state set under the input's main_grad setting (FP8 gradients stay FP8). */
Dtype plan_grad_dt(const PlanInput *in, Dtype recipe_dt);
void plan_layer_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a);
void plan_memory(const PlanInput *in, const Geo *g, const LayerAct *la, uint32_t stage, StageMem *sm, Ck *ck,
                 int reuse);
void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
/* One collective call's time over n ranks (stride in the rank order) for bus bytes b: NCCL's ring
 * latency and the bandwidth the group's ranks share; *bw and *lat (optional) receive the parts. */
double plan_coll_call(const PlanInput *in, CommOp op, uint64_t n, uint64_t stride, double b, double *bw, double *lat);
void plan_time(const PlanInput *in, const Geo *g, Plan *p);
void plan_advise(const PlanInput *in, Plan *p);

/* in-flight layer-microbatch units on a stage (activations held at the peak) */
uint64_t plan_inflight_layers(const Geo *g, uint32_t stage);
/* micro-batches in flight on a stage */
uint64_t plan_inflight_mbs(const Geo *g, uint32_t stage);

/* ---- memory-bound kernels of one layer and micro-batch (plan_kernels.c) ---- */
typedef struct {
    double fwd, bwd; /* seconds */
} LayerElem;
void plan_layer_elem(const PlanInput *in, const Geo *g, LayerElem *out);

/* ---- GEMM model (plan_gemm.c) ---- */
typedef struct {
    double sm_rate16, sm_rate8; /* saturated FLOP/s of one SM, 16-bit and FP8 operands */
    double inv_sms, sms;
    uint32_t tm_sh, tn_sh; /* log2 of the tile sides */
    double k0_16, k0_8;
    double inv_hbm; /* s per byte at the achieved HBM bandwidth */
    double launch;  /* floor of one kernel, s */
} GemmGpu;
void gemm_gpu_init(const PlanInput *in, GemmGpu *gg);
/* Seconds for `batch` independent C[M,N] = A[M,K] B[K,N] with operands of in_bytes (1 or 2) and
 * out_bytes per element of C moved (2 for a BF16 output, 8 to read and write an fp32 accumulator). */
double gemm_time(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K, uint64_t batch, int fp8, double out_bytes);

#endif
