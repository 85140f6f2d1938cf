/* exec/arena.c — sizes first, one allocation, slices by term (see arena.h). */
#include "exec/arena.h"

#include <stdlib.h>
#include <string.h>

#include "util/num.h"

static const struct {
    const char *name;
    int persistent;
} terms[TERM_COUNT] = {
    [TERM_WEIGHT_GEMM] = {"weight_gemm", 1},
    [TERM_WEIGHT_OTHER] = {"weight_other", 1},
    [TERM_FP8_ROWWISE] = {"fp8_rowwise", 1},
    [TERM_FP8_COLWISE] = {"fp8_colwise", 1},
    [TERM_MASTER_GEMM] = {"master_gemm", 1},
    [TERM_MASTER_OTHER] = {"master_other", 1},
    [TERM_GRAD_GEMM] = {"grad_gemm", 1},
    [TERM_GRAD_OTHER] = {"grad_other", 1},
    [TERM_OPTIM_M_GEMM] = {"adam_m_gemm", 1},
    [TERM_OPTIM_M_OTHER] = {"adam_m_other", 1},
    [TERM_OPTIM_V_GEMM] = {"adam_v_gemm", 1},
    [TERM_OPTIM_V_OTHER] = {"adam_v_other", 1},
    [TERM_SCALE_GEMM] = {"scale_gemm", 1},
    [TERM_SCALE_BLOCK] = {"scale_block", 1},
    [TERM_SCALE_STATE] = {"scale_state", 1},
    [TERM_ACT_LAYER_HP] = {"act_layer_hp", 0},
    [TERM_ACT_LAYER_FP8] = {"act_layer_fp8", 0},
    [TERM_ACT_ATTN] = {"act_attention", 0},
    [TERM_ACT_MASK] = {"act_dropout_mask", 0},
    [TERM_ACT_OUTPUT] = {"act_output", 0},
    [TERM_TRANSIENT] = {"transient", 0},
    [TERM_GEMM_WORKSPACE] = {"gemm_workspace", 0},
    [TERM_IO] = {"io", 0},
};

const char *exec_term_name(ExecTerm t) { return (unsigned)t < TERM_COUNT ? terms[t].name : "?"; }
int exec_term_persistent(ExecTerm t) { return (unsigned)t < TERM_COUNT && terms[t].persistent; }

void arena_add_(ArenaSpecs *s, ExecTerm term, Dtype dtype, unsigned elem_bytes, uint64_t elements, ArenaDstKind kind,
                void *dst, const char *name, int layer)
{
    if (s->st) return;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 64;
        ArenaSpec *v = realloc(s->v, sizeof *v * cap);
        if (!v) {
            s->st = ST_NOMEM;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    ArenaSpec *p = &s->v[s->n++];
    memset(p, 0, sizeof *p);
    p->term = term;
    p->dtype = dtype;
    p->elem_bytes = elem_bytes ? elem_bytes : dtype_bytes(dtype);
    p->elements = elements;
    if (u64_mul(elements, p->elem_bytes, &p->bytes)) s->st = ST_OVERFLOW;
    p->name = name;
    p->layer = layer;
    p->kind = kind;
    p->dst.v = (void **)dst;
}

void arena_set_phase(ArenaSpecs *s, int phase)
{
    if (!s->st && s->n) s->v[s->n - 1].phase = phase;
}

void arena_specs_free(ArenaSpecs *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

enum { MAX_PHASES = 8 };

/* Per term: exact bytes of phase 0 and the largest phase (peak), and the
 * aligned extents of the same (region sizing). */
typedef struct {
    uint64_t base, phase[MAX_PHASES];         /* exact bytes */
    uint64_t base_ext, phase_ext[MAX_PHASES]; /* aligned extents */
} TermUse;

static uint64_t align_up(uint64_t x) { return (x + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

static Status term_use(const ArenaSpecs *s, TermUse u[TERM_COUNT], Err *e)
{
    memset(u, 0, sizeof(TermUse) * TERM_COUNT);
    if (s->st == ST_NOMEM) return err_set(e, ST_NOMEM, "out of memory listing tensors");
    if (s->st) return err_set(e, ST_OVERFLOW, "a tensor's byte count overflows 2^64");
    for (uint32_t i = 0; i < s->n; i++) {
        const ArenaSpec *p = &s->v[i];
        if (p->phase < 0 || p->phase >= MAX_PHASES)
            return err_set(e, ST_SOFTWARE, "tensor %s has phase %d", p->name, p->phase);
        TermUse *t = &u[p->term];
        uint64_t *b = p->phase ? &t->phase[p->phase] : &t->base;
        uint64_t *x = p->phase ? &t->phase_ext[p->phase] : &t->base_ext;
        if (u64_add(*b, p->bytes, b) || p->bytes > UINT64_MAX - ARENA_ALIGN || u64_add(align_up(*x), p->bytes, x))
            return err_set(e, ST_OVERFLOW, "term %s overflows 2^64 bytes", exec_term_name(p->term));
    }
    return ST_OK;
}

static uint64_t peak(const uint64_t base, const uint64_t *phase)
{
    uint64_t m = 0;
    for (int k = 1; k < MAX_PHASES; k++) m = phase[k] > m ? phase[k] : m;
    return base + m; /* cannot overflow: each part was checked and their sum is a term's bytes */
}

Status arena_specs_bytes(const ArenaSpecs *s, uint64_t bytes[TERM_COUNT], Err *e)
{
    TermUse u[TERM_COUNT];
    Status st = term_use(s, u, e);
    for (int t = 0; t < TERM_COUNT; t++) bytes[t] = st ? 0 : peak(u[t].base, u[t].phase);
    return st;
}

static void store_dst(ArenaSpec *p, void *addr)
{
    if (!p->dst.v) return;
    switch (p->kind) {
    case ADST_VOID: *p->dst.v = addr; break;
    case ADST_FLOAT: *p->dst.f = addr; break;
    case ADST_U8: *p->dst.u8 = addr; break;
    case ADST_I32: *p->dst.i32 = addr; break;
    }
}

Status arena_carve(Arena *a, Backend *bk, ArenaSpecs *specs, const uint64_t planned[TERM_COUNT], Err *e)
{
    memset(a, 0, sizeof *a);
    TermUse u[TERM_COUNT];
    Status st = term_use(specs, u, e);
    if (st) return st;
    a->has_plan = planned != NULL;
    uint64_t off = 0, overlay[TERM_COUNT];
    for (int t = 0; t < TERM_COUNT; t++) {
        uint64_t need = peak(u[t].base, u[t].phase), ext = align_up(u[t].base_ext) + peak(0, u[t].phase_ext), cap;
        overlay[t] = align_up(u[t].base_ext);
        if (planned) a->planned[t] = planned[t];
        a->placed[t] = need;
        /* room for the plan's bytes or the tensors' aligned extent, whichever is larger */
        cap = ext > a->planned[t] ? ext : a->planned[t];
        if (cap > UINT64_MAX - 2 * ARENA_ALIGN || off > UINT64_MAX - align_up(cap))
            return err_set(e, ST_OVERFLOW, "arena: term %s does not fit in 2^64 bytes", exec_term_name(t));
        a->region_offset[t] = off;
        a->region_bytes[t] = align_up(cap);
        a->padding[t] = ext - need;
        off += a->region_bytes[t];
    }
    a->bytes = off;
    if ((st = bk->alloc(bk, a->bytes ? a->bytes : ARENA_ALIGN, &a->base, e))) {
        a->base = NULL;
        return st;
    }
    uint64_t used[TERM_COUNT][MAX_PHASES];
    memset(used, 0, sizeof used);
    for (uint32_t i = 0; i < specs->n; i++) {
        ArenaSpec *p = &specs->v[i];
        uint64_t *u0 = &used[p->term][p->phase];
        uint64_t at = align_up(*u0);
        p->offset = a->region_offset[p->term] + (p->phase ? overlay[p->term] : 0) + at;
        *u0 = at + p->bytes;
        a->tensors[p->term]++;
        store_dst(p, (char *)a->base + p->offset);
    }
    return ST_OK;
}

void arena_release(Arena *a, Backend *bk)
{
    /* the backend's GEMM workspace may be a slice of this arena: it must not
     * outlive it (the backend then makes a private one at the next GEMM) */
    const char *ws = bk->gemm_workspace, *lo = a->base;
    if (ws && lo && ws >= lo && ws < lo + a->bytes) bk->gemm_workspace = NULL;
    if (a->base) bk->free(bk, a->base);
    a->base = NULL;
}
