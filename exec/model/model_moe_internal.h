/* exec/model/model_moe_internal.h — the executor's mixture-of-experts internals: the MoE layer (model_moe.c,
 * model_moe_route.c), its FP8 and block-scaled expert GEMMs (model_moe_fp8.c, model_moe_block.c), expert
 * parallelism (model_moe_ep.c, model_moe_ep_fp8.c) and expert tensor parallelism (model_moe_etp.c). Moved
 * unchanged from model_internal.h, which includes it where it stood (it uses that header's earlier helpers:
 * model_moe_layer, the arena's and the block's types); include model_internal.h, not this. */
#ifndef FP8PLAN_EXEC_MODEL_MODEL_MOE_INTERNAL_H
#define FP8PLAN_EXEC_MODEL_MODEL_MOE_INTERNAL_H

/* ---- mixture of experts (model_moe.c) ---- */

/* What the executor's MoE layers need of a plan (ST_OK for a dense model). */
Status model_moe_check(const Plan *p, Err *e);
/* The routed part of MoE block l: from norm 2's output x (B·T, C), out (B·T, C) = the experts' outputs
 * combined with the router's weights; the auxiliary loss added to m->moe_aux. */
/* The host clock's time since the last lap (or model_moe_lap_start) charged to MoE part `part` of the step, on a
 * backend whose operations have finished when they return (m->moe_timed; elsewhere nothing). Two clock reads a
 * lap, a few dozen laps a MoE layer and micro-batch. */
void model_moe_lap_start(Model *m);
/* Charges the lap to `part` and passes st through: model_moe_lap(m, MOE_PART_ROUTER, bk->gemm(bk, &g, e)) times the
 * operation (exec/model/model_step.c). */
Status model_moe_lap(Model *m, MoePart part, Status st);
Status model_moe_fwd(Model *m, uint32_t l, const void *x, void *out, Err *e);
/* Its backward from dout = d(out): m->act.d_moe = d(x) through the experts and the router; the
 * router's and experts' gradients accumulate. x as in the forward. */
Status model_moe_bwd(Model *m, uint32_t l, const void *x, const void *dout, Err *e);
/* The rows and buffers the routed experts' FP8 GEMMs work on: one rank's (every expert; the arena's
 * tensors, model_moe_f8_tokens) or the experts' side of expert parallelism (its E/ep experts on the rows
 * the EP peers dispatched; the EP buffers, model_ep_f8). Slots and weights index the local experts. */
typedef struct {
    uint32_t groups;                       /* local experts */
    uint64_t rows;                         /* Σ counts */
    const int32_t *counts;                 /* (groups) backend memory */
    const void *x_in;                      /* (rows, C) the dispatched inputs (forward; spent) */
    void *x_fc1;                           /* (rows, k·Fe) FC1's output, saved */
    void *x_h;                             /* (rows, Fe) the activation's output before its cast */
    void *y;                               /* (rows, C) the outputs; in backward d(inputs) */
    void *dy, *dh2, *dh1;                  /* backward: d(outputs), d(activation out), d(FC1 out) */
    uint8_t *q_xin, *q_xh;                 /* saved transposed FP8 inputs (C, rows), (Fe, rows) */
    float *q_xin_s, *q_xh_s;               /* block scaling: their tiles */
    uint8_t *t_qrow, *d_qrow, *d_qcol;     /* working FP8 copies */
    float *t_qrow_s, *d_qrow_s, *d_qcol_s; /* block scaling: their tiles */
    int x_q, dy_q; /* t_qrow / d_qrow already hold x_in's / dy's row-wise copy (the FP8 dispatch's payload) */
} MoeF8;
/* One rank's view of MoE block l: the permuted inputs and outputs in m->act.x_y, the arena's buffers. */
MoeF8 model_moe_f8_tokens(Model *m, uint32_t l);
/* The routed experts' GEMMs under a per-tensor FP8 recipe (model_moe_fp8.c), one scaling record set per
 * local expert: the forward from v->x_in to v->x_fc1 and v->y; the backward's recomputed expert outputs
 * into v->y (one rank only); the backward from v->dy to v->y = d(expert inputs), the experts' weight
 * gradients accumulated. */
Status model_moe_fp8_fwd(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e);
Status model_moe_fp8_recompute(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w2, Err *e);
Status model_moe_fp8_bwd(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e);
/* The routed experts' grouped GEMMs over a view (model_moe_fp8.c), for both FP8 paths: Y (rows, n) = A_g ·
 * B_gᵀ over K = k per expert, written in the activations' dtype; and dW_g (M, N) += dY_gᵀ · X_g from the
 * transposed copies dyt (M, rows) and xt (N, rows) into w's gradient. acc: the recipe's accumulation. */
Status model_moe_f8_grouped(Model *m, const MoeF8 *v, GemmOperand a, GemmOperand b, uint64_t n, uint64_t k,
                            GemmAccPrecision acc, void *y, Err *e);
Status model_moe_f8_wgrad(Model *m, const MoeF8 *v, ModelParam *w, GemmOperand dyt, GemmOperand xt, uint64_t M,
                          uint64_t N, GemmAccPrecision acc, Err *e);
/* The same three under the deepseek-v3 recipe (model_moe_block.c): 1x128 activation tiles, each expert's
 * 128x128 weight blocks, the 14-bit accumulation; model_moe_fp8_* call them for a block-scaled recipe. */
Status model_moe_block_fwd(Model *m, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e);
Status model_moe_block_recompute(Model *m, const MoeF8 *v, ModelParam *w2, Err *e);
Status model_moe_block_bwd(Model *m, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e);
/* The most 1x128 tiles a column of a transposed (cols, rows) expert copy holds when rows are split among
 * `experts` groups each tiled from its first row: min(E, R) + ⌊(R − min(E, R)) / 128⌋. */
uint64_t model_moe_tiles(uint64_t rows, uint64_t experts);
/* A view's counts on the host (groups), in m->moe_scratch (valid until its next user: the routing's bookkeeping
 * between layers, the step's end); NULL and e set when the copy fails. */
int32_t *model_moe_host_counts(Model *m, const MoeF8 *v, Err *e);
/* After the optimizer step: a sigmoid router's bias moved towards the mean load (MODEL_MOE_BIAS_SPEED),
 * from the step's counts. */
Status model_moe_after_step(Model *m, Err *e);
/* The router beside the expert path (model_moe_route.c): a sigmoid router's E bias values of block l (NULL for
 * other routers or a dense block); the step's tokens per expert counted on the host and the softmax router's
 * auxiliary loss added (forward); the router's backward from d(weights) in m->act.r_dw, d(x) added to
 * m->act.d_moe and dWr accumulated. */
float *model_moe_router_bias(Model *m, uint32_t l);
Status model_moe_count_routing(Model *m, uint32_t l, const LayerActs *la, Err *e);
Status model_moe_router_bwd(Model *m, const LayerActs *la, ModelParam *wr, const void *x, Err *e);
/* Expert parallelism with an FP8 dispatch (deepseek-v3): the token side keeps no BF16 d(expert outputs) (x_y
 * holds them; model_moe_transient). */
int model_moe_ep_fp8_dispatch(const Model *m);
/* The index of MoE block l among the stage's MoE blocks (the row of m->moe_counts). */
static inline uint32_t model_moe_index(const Model *m, uint32_t l)
{
    uint32_t i = 0;
    for (uint32_t j = 0; j < l; j++) i += (uint32_t)model_moe_layer(m, j);
    return i;
}

/* ---- expert parallelism (model_moe_ep.c; ep 1: none of it runs) ---- */

typedef struct MoeEp MoeEp;

/* The rows the grouped GEMMs of a MoE layer run over: one rank's E experts on its R permuted rows, or
 * with expert parallelism this rank's E/ep experts on the rows its EP peers dispatched to it. */
typedef struct {
    uint32_t groups;              /* experts */
    uint64_t rows;                /* Σ counts */
    const int32_t *counts;        /* (groups) backend memory */
    void *x_in, *x_fc1, *x_fc2in; /* (rows, C), (rows, k·Fe), (rows, Fe) saved for backward */
} MoeRows;
/* The expert side's backward buffers and the token side's kept expert outputs. */
typedef struct {
    const void *y_tok;         /* (R, C) the experts' outputs at their token copies (forward's combine) */
    void *dy, *dh2, *dh1, *dx; /* expert side: d(outputs), d(activation out), d(FC1 out), d(inputs) */
} MoeEpBwd;
/* The EP buffers (ep·R rows on the experts' side, outside the arena) and m->ep_rows; nothing at ep 1. */
Status model_ep_create(Model *m, Err *e);
void model_ep_destroy(Model *m);
/* Forward of MoE block l: the counts exchanged over the EP group, then tok (R rows, permuted: la->x_in, or
 * the FP8 path's m->act.x_y) to the local experts (CO_EP_DISPATCH_FWD); *xr the expert-side rows. */
Status model_ep_dispatch(Model *m, uint32_t l, const LayerActs *la, const void *tok, MoeRows *xr, Err *e);
/* Delayed scaling with expert parallelism: before bank b's amax all-reduce over the DP group, its local experts'
 * records (row 0) MAX-reduced over the expert-data-parallel group into the EP buffers (begin); after it, put
 * back over the records (end). Nothing at ep 1. */
Status model_ep_amax_begin(Model *m, ScalingBank *b, Err *e);
Status model_ep_amax_end(Model *m, ScalingBank *b, Err *e);
/* Delayed scaling: the EP buffers' room for the experts' records of a bank (model_moe_ep_amax.c; NULL otherwise). */
float *model_ep_amax_buf(Model *m);
/* The experts' side of block l as an FP8 view (model_moe_fp8.c) over xr's rows: outputs into the forward's
 * output buffer (bwd 0), or d(outputs) from and d(inputs) into the backward's (bwd 1). */
MoeF8 model_ep_f8(Model *m, uint32_t l, const MoeRows *xr, int bwd);
/* The experts' outputs y (xr->rows, C) back to their token copies (CO_EP_COMBINE_FWD): tok (R, C), and kept. */
Status model_ep_combine(Model *m, uint32_t l, const void *y, void *tok, Err *e);
/* The expert-side output buffer of the forward (ep·R rows). */
void *model_ep_fwd_out(Model *m);
/* Backward of block l: the forward's rows and buffers. */
Status model_ep_backward_rows(Model *m, uint32_t l, MoeRows *xr, MoeEpBwd *b);
/* d(expert outputs) at the token copies (R, C) to the experts (CO_EP_DISPATCH_BWD), and d(expert inputs)
 * back (CO_EP_COMBINE_BWD). */
Status model_ep_dispatch_bwd(Model *m, uint32_t l, const void *dy_tok, void *dy, Err *e);
Status model_ep_combine_bwd(Model *m, uint32_t l, const void *dx, void *dx_tok, Err *e);

/* Expert tensor parallelism (model_moe_etp.c; etp 1: none of it runs). own (n = ep·El: this rank's sources'
 * rows per local expert; its block etp_rank of all) gathered over the ETP group into all (etp, n), as uint64
 * counts. */
Status model_etp_counts(Model *m, const uint64_t *own, uint64_t *all, uint64_t n, Err *e);
/* In place over buf (the ETP group's sources, ETP rank by rank: rc (etp·ep, El) rows, cols elements each): every
 * rank's segment gathered (etp_allgather; dt: the activations', or an FP8 dispatch's payload as 4-byte words), or every segment summed over the group into its owner (etp_reducescatter;
 * fwd: the forward's, where the etp_fault hook fires). */
Status model_etp_gather(Model *m, void *buf, const uint64_t *rc, uint64_t cols, Dtype dt, Err *e);
Status model_etp_scatter(Model *m, int fwd, void *buf, const uint64_t *rc, uint64_t cols, Err *e);
/* A routed expert weight's ETP shard (p: PK_XFC1_W rows, FC1's gate and up columns this rank's; PK_XFC2_W its
 * Fe/etp input columns) filled with the one-rank run's values from the tensor's stream key; its amax. */
float model_etp_fill(const Model *m, const ModelParam *p, uint64_t key, float std, float *w);

/* The FP8 dispatch payload (model_moe_ep_fp8.c; deepseek-v3): a row's bytes, C codes and ceil(C/128) FP32
 * scale_inv; the token side's rows (R, C), peer j's rows[j] of them in turn, quantized into pay (peer j's
 * segment: its codes, then its scales); the received segments scr (source s's rc[s][0..El) rows) copied to
 * the host buffer `host` and sorted expert-major into codes q (rows, C) and scales qs (rows, ceil(C/128));
 * and those dequantized into out (rows, C) in the activation dtype. */
uint64_t model_ep_fp8_row_bytes(const Model *m);
Status model_ep_fp8_pack(Model *m, const uint64_t *rows, const void *tok, uint8_t *pay, Err *e);
Status model_ep_fp8_unpack(Model *m, const uint64_t *rc, const uint8_t *scr, uint8_t *host, uint8_t *q, float *qs,
                           Err *e);
Status model_ep_fp8_dequant(Model *m, const uint8_t *q, const float *qs, uint64_t rows, void *out, Err *e);

/* The routed part's saved activations and working buffers (nothing on a dense model). */
void model_moe_saved(Model *m, int bind, ArenaSpecs *sp, LayerActs *la, uint32_t l, int li);
void model_moe_transient(Model *m, int bind, ArenaSpecs *sp);

#endif
