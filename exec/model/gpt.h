/* exec/model/gpt.h — the GPT-style decoder the executor trains, and its training step.
 *
 * Architecture (GPT-2): token + learned position embeddings; L pre-LN blocks
 *   x = x + Proj(Attn(QKV(LN1(x))));  x = x + FC2(GELU(FC1(LN2(x))))
 * a final LN, an LM head tied to the token embedding (or untied), and a mean
 * softmax cross-entropy. B = micro-batch, T = sequence, C = hidden, F = FFN,
 * H = heads, V = vocabulary (Vp = padded rows of the embedding).
 *
 * Sizes first, then one allocation (llm.c's shape): gpt_layout() lists every
 * tensor with its memory term, dtype and element count — a pure function — and
 * gpt_create() carves them from one arena sized by the Plan's terms
 * (exec/arena.h). The step runs through a Backend, so the same orchestration
 * drives the CPU reference and the GPU. */
#ifndef FP8PLAN_EXEC_GPT_H
#define FP8PLAN_EXEC_GPT_H

#include <stdint.h>

#include "exec/arena.h"
#include "exec/backend.h"
#include "exec/recipe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t layers, hidden, heads, ffn; /* L, C, H, F */
    uint32_t seq, batch;                 /* T, B (micro-batch) */
    uint64_t vocab, vocab_padded;        /* V, Vp ≥ V (embedding rows) */
    int tied;                            /* LM head shares the token embedding */
    int biases;                          /* the block linears have biases */
} GptShape;

/* ST_USAGE naming the field when a shape cannot be run (zero sizes, C not a
 * multiple of H, Vp < V, sizes whose tensors overflow 2^64 bytes). */
Status gpt_shape_check(const GptShape *s, Err *e);

/* Block linears, in execution order. */
typedef enum { LIN_QKV = 0, LIN_PROJ, LIN_FC1, LIN_FC2, LIN_COUNT } LinearKind;

typedef enum {
    PK_WTE = 0, /* (Vp, C) token embedding (and LM head when tied) */
    PK_WPE,     /* (T, C) position embedding */
    PK_LN1_W,
    PK_LN1_B, /* (C) */
    PK_QKV_W, /* (3C, C) */
    PK_QKV_B, /* (3C) */
    PK_PROJ_W,
    PK_PROJ_B, /* (C, C), (C) */
    PK_LN2_W,
    PK_LN2_B,
    PK_FC1_W,
    PK_FC1_B, /* (F, C), (F) */
    PK_FC2_W,
    PK_FC2_B, /* (C, F), (C) */
    PK_LNF_W,
    PK_LNF_B,
    PK_LM_HEAD, /* (Vp, C) when untied */
    PK_COUNT
} ParamKind;

/* One parameter tensor and every state the recipe keeps for it (the dtypes
 * of recipe.gemm for block linear weights, recipe.other for the rest). */
typedef struct {
    ParamKind kind;
    int layer;           /* block index, −1 for embeddings / final LN / head */
    uint64_t rows, cols; /* GEMM weights (N, K); vectors (n, 1) */
    uint64_t numel;
    int decay;       /* AdamW weight decay applies (matrices) */
    int gemm;        /* a block linear weight: recipe.gemm states, FP8 copies */
    void *weight;    /* working copy, or NULL when the recipe keeps none */
    void *master;    /* master copy, or NULL */
    void *grad;      /* main gradient */
    void *m, *v;     /* Adam moments */
    uint8_t *wq_row; /* (N, K) cached FP8 copy for fprop, or NULL */
    uint8_t *wq_col; /* (K, N) cached FP8 transposed copy for dgrad, or NULL */
    /* scaling records {scale, scale_inv, amax} (REC_FLOATS) of scaled states, or NULL */
    float *master_rec, *grad_rec, *m_rec, *v_rec;
    uint32_t wslot; /* forward scaling-bank slot of the weight (gemm only) */
} GptParam;

/* Activations of one block. Each GEMM input is saved either in BF16 (act_in)
 * or as its FP8 transposed copy (q_col, what wgrad reads on Hopper). */
typedef struct {
    void *x;                    /* (B·T, C) block input = LN1 input */
    float *ln1_mean, *ln1_rstd; /* (B·T) */
    void *qkv;                  /* (B·T, 3C) */
    void *probs;                /* (B, H, T, T) */
    void *res2;                 /* (B·T, C) x + attention branch = LN2 input */
    float *ln2_mean, *ln2_rstd; /* (B·T) */
    void *fc1;                  /* (B·T, F) pre-GELU */
    void *act_in[LIN_COUNT];    /* saved BF16 GEMM inputs (B·T, K) or NULL */
    uint8_t *q_col[LIN_COUNT];  /* saved FP8 GEMM inputs (K, B·T) or NULL */
} GptLayerActs;

typedef struct {
    int32_t *tokens, *targets; /* (B·T) */
    float *losses;             /* (B·T) */
    GptLayerActs *layer;       /* L blocks */
    void *x_final;             /* (B·T, C) last block output = final LN input */
    float *lnf_mean, *lnf_rstd;
    void *lnf_out; /* (B·T, C) */
    float *logits; /* (B·T, Vp) FP32 (as Megatron's cross-entropy), overwritten by d(logits) */
    /* working buffers of one block, reused (not saved) */
    void *dlogits;       /* (B·T, Vp) d(logits) in the activation dtype for the LM-head GEMMs */
    void *t_in;          /* (B·T, F) GEMM input in the activation dtype when it is saved only in FP8 */
    uint8_t *t_qrow;     /* (B·T, max(C, F)) FP8 row-wise GEMM input for fprop */
    uint8_t *t_qcol;     /* (max(C, F), B·T) FP8 transposed input when recast in backward */
    uint8_t *t_wrow;     /* (max block weight) FP8 weight, row-wise, when the recipe does not keep copies */
    uint8_t *t_wcol;     /* (max block weight) FP8 weight, transposed, likewise */
    void *t_out;         /* (B·T, C) projection / FC2 output before the residual add */
    void *d_res;         /* (B·T, C) residual-stream gradient */
    void *d_a;           /* (B·T, max(3C, F)) gradient of a GEMM output */
    void *d_b;           /* (B·T, max(C, F)) gradient of a GEMM input */
    uint8_t *d_qrow;     /* (B·T, max(3C, F)) FP8 output gradient for dgrad */
    uint8_t *d_qcol;     /* (max(3C, F), B·T) FP8 transposed output gradient for wgrad */
    float *attn_scratch; /* (B, H, T, T) FP32 */
    float *attn_scores;  /* (H, T, T) FP32 raw scores of one sequence in the forward (phase FWD) */
    float *gstage;       /* FP32 staging of a gradient not kept in FP32: (max non-embedding param + C) */
    float *gstage_emb;   /* (Vp·C [+ Vp·C untied] + T·C) FP32 staging for the embeddings' gradients */
} GptActs;

/* Phases of the step whose working buffers share memory (arena overlay). */
enum { GPT_PHASE_FWD = 1, GPT_PHASE_HEAD = 2, GPT_PHASE_BLOCKS = 3 };

/* Scaling state of the FP8 GEMMs: the forward bank (inputs X and weights W of
 * every block linear, recipe.gemm_fwd) and the backward bank (output
 * gradients dY, recipe.gemm_bwd). Slots: fwd 2·(LIN_COUNT·l + k) + {0: X, 1: W},
 * bwd LIN_COUNT·l + k. */
typedef struct {
    ScalingBank fwd, bwd;
} GptScaling;

static inline uint32_t gpt_slot_x(uint32_t layer, LinearKind k) { return 2 * (LIN_COUNT * layer + k); }
static inline uint32_t gpt_slot_w(uint32_t layer, LinearKind k) { return 2 * (LIN_COUNT * layer + k) + 1; }
static inline uint32_t gpt_slot_dy(uint32_t layer, LinearKind k) { return LIN_COUNT * layer + k; }

/* Training hyper-parameters. */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    uint32_t warmup; /* linear warm-up steps (0 = none) */
    float init_std;  /* N(0, init_std) for matrices; residual projections ÷ √(2L) */
    uint64_t seed;
} GptHyper;

/* Defaults: lr 1e-3, betas 0.9/0.95, eps 1e-8, wd 0.1 (matrices), no warm-up,
 * init std 0.02, seed 1. */
GptHyper gpt_hyper_default(void);

/* Host copies of one scaling bank's state for the last step (scaling trace). */
typedef struct {
    float *amax;       /* (n) amax each tensor's cast observed this step */
    float *scale_used; /* (n) the scale that cast used */
    float *scale_next; /* (n) the scale the next step will use (= scale_used for current scaling) */
} GptBankTrace;

typedef struct Gpt {
    GptShape shape;
    ExecRecipe recipe;
    GptHyper hyper;
    Backend *bk;
    Comm *comm;
    Arena arena;
    ArenaSpecs specs; /* every tensor with its term and offset (checkpoints walk it) */
    GptParam *params; /* nparams */
    uint32_t nparams;
    GptActs act;
    GptScaling sc;
    uint32_t step;      /* optimizer steps taken */
    float *host_losses; /* (B·T) host copy */
    /* Last step: forward, backward, optimizer, communication (seconds). Device
     * time between timestamps in the stream when the backend has mark/elapsed
     * (phase_device = 1; host gaps between phases excluded), else the host
     * clock around each synchronized phase. */
    double phase_s[4];
    int phase_device;
    /* Called by gpt_step with −1 before the step's work is issued and with
     * each phase (PHASE_*) once that phase's work has finished on the device;
     * NULL: none. For measurements between phases (device memory in use). */
    void (*on_phase)(void *ctx, int phase);
    void *on_phase_ctx;
    int trace; /* gpt_trace_enable: fill tr_fwd / tr_bwd every step */
    GptBankTrace tr_fwd, tr_bwd;
} Gpt;

enum { PHASE_FWD = 0, PHASE_BWD, PHASE_OPT, PHASE_COMM };

/* The backend timestamps gpt_step records (ids GPT_MARK_FIRST .. BACKEND_MARKS − 1:
 * a begin and an end per phase, in the order the phases run); other users of
 * mark() take lower ids. */
enum { GPT_MARK_FIRST = BACKEND_MARKS - 8 };

/* The tensor list of a configuration (sizes first): appends every tensor's
 * spec to `specs` (see arena.h). Pure; used by gpt_create and by tests. */
Status gpt_layout(const GptShape *s, const ExecRecipe *r, ArenaSpecs *specs, Err *e);

/* Build the model: validate shape and recipe, carve the arena with planned
 * bytes per term (planned may be NULL: sized by need), initialize weights from
 * hyper.seed (identically for every recipe). */
Status gpt_create(const GptShape *s, const ExecRecipe *r, const GptHyper *h, Backend *bk, Comm *comm,
                  const uint64_t planned[TERM_COUNT], Gpt **out, Err *e);
void gpt_destroy(Gpt *g);

/* One training step on host tokens inputs/targets (B·T each): forward,
 * backward, gradient all-reduce, scaling updates, optimizer. *loss = mean loss
 * of this batch before the update. */
Status gpt_step(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Forward only (no update, scaling state untouched except amax row 0 for
 * delayed scaling, which is zeroed again): the mean loss. For gradient checks. */
Status gpt_loss(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Forward + backward without the all-reduce, scaling update or optimizer:
 * leaves the gradients in the main-gradient tensors. For gradient checks. */
Status gpt_grads(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Write the initial values from hyper.seed, as gpt_create does after zeroing
 * the arena: working weights, master copies and their scaling records, and
 * scale = scale_inv = 1 for every FP8 tensor (gradients, moments and amax
 * histories are left as they are). The same seed gives the same weights for
 * every recipe and backend. */
Status gpt_init_weights(Gpt *g, Err *e);

/* Record every FP8 tensor's amax and scales each step (FP8 recipes; a no-op
 * otherwise): after gpt_step, tr_fwd / tr_bwd hold the last step's values. */
Status gpt_trace_enable(Gpt *g, Err *e);

/* Parameter count (elements over all parameter tensors). */
uint64_t gpt_param_count(const Gpt *g);

#ifdef __cplusplus
}
#endif
#endif
