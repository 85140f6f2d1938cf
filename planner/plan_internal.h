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
    uint64_t tp, pp, vpp, cp, dp, d, mbs, m, world, rep, Ls;
    uint64_t tok;     /* tokens of one micro-batch on this CP rank: mbs * seq / cp */
    uint64_t s_local; /* seq / cp */
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
} LayerAct;

void plan_geo(const PlanInput *in, uint64_t seq, uint64_t gbs, Geo *g);
void plan_layer_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a);
void plan_memory(const PlanInput *in, const Geo *g, const LayerAct *la, uint32_t stage, StageMem *sm, Ck *ck,
                 int reuse);
void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
void plan_time(const PlanInput *in, const Geo *g, Plan *p);
void plan_advise(const PlanInput *in, Plan *p);

/* in-flight layer-microbatch units on a stage (activations held at the peak) */
uint64_t plan_inflight_layers(const Geo *g, uint32_t stage);
/* micro-batches in flight on a stage */
uint64_t plan_inflight_mbs(const Geo *g, uint32_t stage);

#endif
