/* exec/arena.h — one allocation, carved by memory term.
 *
 * The executor never allocates tensor by tensor. A pure layout function lists
 * every tensor (term, dtype, elements) first; arena_carve() then gives each
 * term one region — sized from the Plan's bytes for that term, or from the
 * tensors' own bytes when the plan has less or none — makes a single backend
 * allocation, and hands out 256-byte aligned slices in list order. It records
 * per term the bytes actually placed, so the run can report measured versus
 * planned: persistent terms must match the plan byte for byte; activations and
 * workspace are compared with the plan's prediction.
 *
 * Working buffers that are never live at the same time share memory: a spec
 * has a phase (0 = live for the whole step; k > 0 = live only during phase k,
 * e.g. forward, LM-head backward, block backward). A term's region holds its
 * phase-0 tensors followed by one overlay that each phase reuses, so its size
 * — and the measured bytes — are the most bytes live at once:
 *   sum(phase 0) + max over k of sum(phase k). */
#ifndef FP8PLAN_EXEC_ARENA_H
#define FP8PLAN_EXEC_ARENA_H

#include <stdint.h>

#include "exec/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The executor's memory terms: the planner's names (planner/plan.h MemTermId),
 * so measured and planned line up by name, plus one term the plan does not
 * model (token ids, targets and per-token losses). */
typedef enum {
    TERM_WEIGHT_GEMM = 0, /* working weights of the block linears */
    TERM_WEIGHT_OTHER,    /* working weights of embeddings, LM head, norms, biases */
    TERM_FP8_ROWWISE,     /* cached FP8 weight copies (N, K) for fprop */
    TERM_FP8_COLWISE,     /* cached FP8 transposed copies (K, N) for dgrad */
    TERM_MASTER_GEMM,
    TERM_MASTER_OTHER,
    TERM_GRAD_GEMM,
    TERM_GRAD_OTHER,
    TERM_OPTIM_M_GEMM,
    TERM_OPTIM_M_OTHER,
    TERM_OPTIM_V_GEMM,
    TERM_OPTIM_V_OTHER,
    TERM_SCALE_GEMM,     /* scale, scale_inv, amax history of every FP8 GEMM operand (x, w, dy) */
    TERM_SCALE_BLOCK,    /* block scales of FP8 weights (none: the executor scales per tensor) */
    TERM_SCALE_STATE,    /* {scale, scale_inv, amax} records of scaled states (FP8-LM) */
    TERM_ACT_LAYER_HP,   /* per block: LN inputs and statistics, QKV, FC1 output, high-precision GEMM inputs */
    TERM_ACT_LAYER_FP8,  /* per block: FP8 transposed GEMM inputs saved for wgrad */
    TERM_ACT_ATTN,       /* per block: attention probabilities (materialized) */
    TERM_ACT_MASK,       /* dropout masks (none: the executor trains without dropout) */
    TERM_ACT_OUTPUT,     /* final LN input, output and statistics; FP32 logits */
    TERM_TRANSIENT,      /* one block's working buffers, BF16 d(logits), FP32 scratch */
    TERM_GEMM_WORKSPACE, /* the backend's GEMM workspace (cuBLASLt) */
    TERM_IO,             /* token ids, targets, per-token losses (not in the plan) */
    TERM_COUNT
} ExecTerm;

/* Stable snake_case id ("weight", "fp8_weight_row", ..., "workspace"). */
const char *exec_term_name(ExecTerm t);
/* 1 for the terms that live across steps (weights .. scale_state). */
int exec_term_persistent(ExecTerm t);

enum { ARENA_ALIGN = 256 };

typedef enum { ADST_VOID, ADST_FLOAT, ADST_U8, ADST_I32 } ArenaDstKind;

typedef struct {
    ExecTerm term;
    Dtype dtype; /* element type; DT_NONE with elem_bytes for int32 token ids */
    unsigned elem_bytes;
    uint64_t elements;
    uint64_t bytes; /* elements · elem_bytes */
    const char *name;
    int layer; /* −1 when not per block */
    int phase; /* 0: live the whole step; k > 0: only during phase k (overlaid) */
    ArenaDstKind kind;
    union {
        void **v;
        float **f;
        uint8_t **u8;
        int32_t **i32;
    } dst;           /* where arena_carve stores the slice's address (may be NULL) */
    uint64_t offset; /* filled by arena_carve: from the arena base */
} ArenaSpec;

typedef struct {
    ArenaSpec *v;
    uint32_t n, cap;
    Status st; /* first error while adding (ST_NOMEM / ST_OVERFLOW), reported by arena_carve */
} ArenaSpecs;

/* Append one tensor. dst is a pointer to the field that receives the address
 * (void **, float **, uint8_t ** or int32_t **; NULL to only count it). */
#define arena_add(specs, term, dtype, elements, dst, name, layer) \
    arena_add_(specs, term, dtype, 0, elements, ARENA_DST_KIND(dst), (void *)(dst), name, layer)
/* The same, live only during `phase` (> 0). */
#define arena_add_phase(specs, term, phase, dtype, elements, dst, name) \
    do {                                                                \
        arena_add(specs, term, dtype, elements, dst, name, -1);         \
        arena_set_phase(specs, phase);                                  \
    } while (0)
#define arena_add_i32(specs, term, elements, dst, name, layer) \
    arena_add_(specs, term, DT_NONE, 4, elements, ADST_I32, (void *)(dst), name, layer)
#define ARENA_DST_KIND(p) \
    _Generic((p), void *: ADST_VOID, void **: ADST_VOID, float **: ADST_FLOAT, uint8_t **: ADST_U8, int32_t **: ADST_I32)
void arena_add_(ArenaSpecs *s, ExecTerm term, Dtype dtype, unsigned elem_bytes, uint64_t elements, ArenaDstKind kind,
                void *dst, const char *name, int layer);
void arena_specs_free(ArenaSpecs *s);
/* Give the last added spec a phase (used by arena_add_phase). */
void arena_set_phase(ArenaSpecs *s, int phase);

/* The most exact tensor bytes live at once per term: sum(phase 0) + max over
 * phases of sum(phase k). ST_OVERFLOW past 2^64. */
Status arena_specs_bytes(const ArenaSpecs *s, uint64_t bytes[TERM_COUNT], Err *e);

typedef struct {
    void *base;
    uint64_t bytes; /* the one allocation */
    uint64_t region_offset[TERM_COUNT];
    uint64_t region_bytes[TERM_COUNT]; /* capacity: max(planned, needed) + alignment slack */
    uint64_t planned[TERM_COUNT];      /* the Plan's bytes (0 when no plan) */
    uint64_t placed[TERM_COUNT];       /* most exact tensor bytes live at once (the measurement) */
    uint64_t padding[TERM_COUNT];      /* alignment gaps inside the used part of each region */
    uint32_t tensors[TERM_COUNT];
    int has_plan;
} Arena;

/* Size the regions, allocate once through bk, place every spec and store the
 * addresses. planned may be NULL. On failure nothing stays allocated. */
Status arena_carve(Arena *a, Backend *bk, ArenaSpecs *specs, const uint64_t planned[TERM_COUNT], Err *e);
/* Free the allocation; a bk->gemm_workspace that points into it is cleared. */
void arena_release(Arena *a, Backend *bk);

#ifdef __cplusplus
}
#endif
#endif
