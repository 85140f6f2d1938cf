/* exec/model/arena.h — one allocation, carved by memory term.
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

#include "exec/backend/backend.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arena's terms are the planner's memory terms (MemTermId, planner/plan.h)
 * — the plan's bytes for term t are p->mem[t].bytes, no lookup by name — plus
 * the few the executor places that the plan does not model, named here once:
 *   XT_IO    token ids, targets and per-token losses of a micro-batch;
 *   XT_ROPE  the rotary embedding's cos/sin table, (seq, head_dim/2, 2) fp32.
 * The plan's overhead terms that no tensor owns (comm_buffers, cuda_context,
 * fragmentation) hold no spec; a device measurement checks them. */
enum { XT_IO = MT_COUNT_, XT_ROPE, ARENA_TERMS };
typedef uint32_t ArenaTerm; /* a MemTermId, or XT_* */

/* "weight_gemm", ..., "gemm_workspace" (the plan's names), "io", "rope_table". */
const char *arena_term_name(ArenaTerm t);
/* 1 for the terms whose tensors live across steps: the plan's state, FP8-copy
 * and scale categories (what a checkpoint holds). */
int arena_term_persistent(ArenaTerm t);

enum { ARENA_ALIGN = 256 };

typedef enum { ADST_VOID, ADST_FLOAT, ADST_U8, ADST_I32 } ArenaDstKind;

typedef struct {
    ArenaTerm term;
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
    /* 1: the term's tensors back to back, no gap (every class's gradients: one contiguous buffer, all-reduced or
     * reduce-scattered in one call, exec/model/model_grad_bucket.c and model_shard.c; a sharded class's working
     * weights, all-gathered in one call) */
    uint8_t packed[ARENA_TERMS];
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
void arena_add_(ArenaSpecs *s, ArenaTerm term, Dtype dtype, unsigned elem_bytes, uint64_t elements, ArenaDstKind kind,
                void *dst, const char *name, int layer);
void arena_specs_free(ArenaSpecs *s);
/* Give the last added spec a phase (used by arena_add_phase). */
void arena_set_phase(ArenaSpecs *s, int phase);

/* The most exact tensor bytes live at once per term: sum(phase 0) + max over
 * phases of sum(phase k). ST_OVERFLOW past 2^64. */
Status arena_specs_bytes(const ArenaSpecs *s, uint64_t bytes[ARENA_TERMS], Err *e);

typedef struct {
    void *base;
    uint64_t bytes; /* the one allocation */
    uint64_t region_offset[ARENA_TERMS];
    uint64_t region_bytes[ARENA_TERMS];   /* capacity: max(planned, needed) + alignment slack */
    uint64_t overlay_offset[ARENA_TERMS]; /* where the phases' shared overlay starts (from the base) */
    uint64_t planned[ARENA_TERMS];        /* the Plan's bytes (0 when no plan) */
    uint64_t placed[ARENA_TERMS];         /* most exact tensor bytes live at once (the measurement) */
    uint64_t padding[ARENA_TERMS];        /* alignment gaps inside the used part of each region */
    uint32_t tensors[ARENA_TERMS];
    int has_plan;
    int guarded; /* arena_guard poisoned its free bytes (ASan builds, host memory) */
} Arena;

/* 1 for the memory terms an arena region holds (states, copies, scales,
 * activations, workspace); 0 for the overheads no tensor owns (comm_buffers,
 * cuda_context, fragmentation). */
int arena_holds(MemTermId t);

/* The plan's bytes for each arena term: p->mem[t].bytes for the memory terms
 * an arena region holds (states, copies, scales, activations, workspace), 0
 * for the overheads no tensor owns and for the executor-only terms. */
void arena_planned(const Plan *p, uint64_t planned[ARENA_TERMS]);

/* Size the regions, allocate once through bk, place every spec and store the
 * addresses. planned may be NULL. On failure nothing stays allocated. */
Status arena_carve(Arena *a, Backend *bk, ArenaSpecs *specs, const uint64_t planned[ARENA_TERMS], Err *e);
/* Under AddressSanitizer, when bk's memory is the host's ("cpu"): mark every
 * byte of the arena that no spec covers — the alignment gaps after tensors and
 * each region's room past its tensors (the plan's bytes above what was placed)
 * — unaddressable, so a tensor sized too small that is written past its end
 * fails at once instead of landing silently in that room. Bytes some phase's
 * tensor covers stay addressable. Call after the arena is zeroed. Returns 1
 * when it guarded; 0 and no effect in a build without ASan or on device
 * memory. Allocates nothing. */
int arena_guard(Arena *a, const ArenaSpecs *specs, const Backend *bk);
/* A guarded arena (above) entering `phase` (> 0): in every term that has
 * overlaid tensors, the overlay is poisoned but for this phase's tensors, so
 * a tensor of another phase — or one written past its end into the overlay —
 * fails at once. No effect when the arena is not guarded. */
void arena_enter_phase(const Arena *a, const ArenaSpecs *specs, int phase);
/* Free the allocation; a bk->gemm_workspace that points into it is cleared. */
void arena_release(Arena *a, Backend *bk);

#ifdef __cplusplus
}
#endif
#endif
