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
static inline uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

enum { LIN_QKV = 0, LIN_PROJ, LIN_FC1, LIN_FC2, LIN_COUNT };

typedef struct {
    /* model, resolved */
    uint64_t h, F, k, heads, kv_heads, q_dim, kv_dim, L, V, Vp, seq;
    /* layout */
    uint64_t tp, pp, vpp, cp, dp, d, mbs, m, world, rep, Ls;
    uint64_t tok;     /* tokens of one micro-batch on this CP rank: mbs * seq / cp */
    uint64_t s_local; /* seq / cp */
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

void plan_geo(const PlanInput *in, uint64_t seq, uint64_t gbs, Geo *g);
void plan_memory(const PlanInput *in, const Geo *g, uint32_t stage, StageMem *sm, Ck *ck);
void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
void plan_time(const PlanInput *in, const Geo *g, Plan *p);
void plan_advise(const PlanInput *in, Plan *p);

/* in-flight layer-microbatch units on a stage (activations held at the peak) */
uint64_t plan_inflight_layers(const Geo *g, uint32_t stage);
/* micro-batches in flight on a stage */
uint64_t plan_inflight_mbs(const Geo *g, uint32_t stage);

#endif
