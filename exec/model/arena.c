/* exec/model/arena.c — sizes first, one allocation, slices by term (see arena.h). */
#include "exec/model/arena.h"

#include <stdlib.h>
#include <string.h>

#include "util/num.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define ARENA_POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define ARENA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#define ARENA_ASAN           1
#else
#define ARENA_POISON(p, n)   ((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#define ARENA_ASAN           0
#endif

const char *arena_term_name(ArenaTerm t)
{
    if (t < MT_COUNT_) return mem_term_name((MemTermId)t);
    return t == XT_IO ? "io" : t == XT_ROPE ? "rope_table" : "?";
}

int arena_term_persistent(ArenaTerm t)
{
    if (t >= MT_COUNT_) return 0;
    MemCategory c = mem_term_category((MemTermId)t);
    return c == MC_STATE || c == MC_FP8_COPY || c == MC_SCALE;
}

int arena_holds(MemTermId t) { return mem_term_category(t) != MC_OVERHEAD || t == MT_WORKSPACE; }

void arena_planned(const Plan *p, uint64_t planned[ARENA_TERMS])
{
    for (ArenaTerm t = 0; t < ARENA_TERMS; t++)
        planned[t] = t < MT_COUNT_ && arena_holds((MemTermId)t) ? p->mem[t].bytes : 0;
}

void arena_add_(ArenaSpecs *s, ArenaTerm term, Dtype dtype, unsigned elem_bytes, uint64_t elements, ArenaDstKind kind,
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

/* Where a term's next tensor may start: a packed term's right after the last (arena.h: the gradient terms, one
 * contiguous buffer per class as Megatron-Core's grad buffer, exec/model/model_grad_bucket.c; a sharded class's
 * working weights), every other tensor at ARENA_ALIGN. */
static uint64_t term_align(const ArenaSpecs *s, ArenaTerm t, uint64_t x) { return s->packed[t] ? x : align_up(x); }

static Status term_use(const ArenaSpecs *s, TermUse u[ARENA_TERMS], Err *e)
{
    memset(u, 0, sizeof(TermUse) * ARENA_TERMS);
    if (s->st == ST_NOMEM) return err_set(e, ST_NOMEM, "out of memory listing tensors");
    if (s->st) return err_set(e, ST_OVERFLOW, "a tensor's byte count overflows 2^64");
    for (uint32_t i = 0; i < s->n; i++) {
        const ArenaSpec *p = &s->v[i];
        if (p->phase < 0 || p->phase >= MAX_PHASES)
            return err_set(e, ST_SOFTWARE, "tensor %s has phase %d", p->name, p->phase);
        TermUse *t = &u[p->term];
        uint64_t *b = p->phase ? &t->phase[p->phase] : &t->base;
        uint64_t *x = p->phase ? &t->phase_ext[p->phase] : &t->base_ext;
        if (u64_add(*b, p->bytes, b) || p->bytes > UINT64_MAX - ARENA_ALIGN ||
            u64_add(term_align(s, p->term, *x), p->bytes, x))
            return err_set(e, ST_OVERFLOW, "term %s overflows 2^64 bytes", arena_term_name(p->term));
    }
    return ST_OK;
}

static uint64_t peak(const uint64_t base, const uint64_t *phase)
{
    uint64_t m = 0;
    for (int k = 1; k < MAX_PHASES; k++) m = phase[k] > m ? phase[k] : m;
    return base + m; /* cannot overflow: each part was checked and their sum is a term's bytes */
}

Status arena_specs_bytes(const ArenaSpecs *s, uint64_t bytes[ARENA_TERMS], Err *e)
{
    TermUse u[ARENA_TERMS];
    Status st = term_use(s, u, e);
    for (int t = 0; t < ARENA_TERMS; t++) bytes[t] = st ? 0 : peak(u[t].base, u[t].phase);
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

Status arena_carve(Arena *a, Backend *bk, ArenaSpecs *specs, const uint64_t planned[ARENA_TERMS], Err *e)
{
    memset(a, 0, sizeof *a);
    TermUse u[ARENA_TERMS];
    Status st = term_use(specs, u, e);
    if (st) return st;
    a->has_plan = planned != NULL;
    uint64_t off = 0, overlay[ARENA_TERMS];
    for (int t = 0; t < ARENA_TERMS; t++) {
        uint64_t need = peak(u[t].base, u[t].phase), ext = align_up(u[t].base_ext) + peak(0, u[t].phase_ext), cap;
        overlay[t] = align_up(u[t].base_ext);
        if (planned) a->planned[t] = planned[t];
        a->placed[t] = need;
        /* room for the plan's bytes or the tensors' aligned extent, whichever is larger */
        cap = ext > a->planned[t] ? ext : a->planned[t];
        if (cap > UINT64_MAX - 2 * ARENA_ALIGN || off > UINT64_MAX - align_up(cap))
            return err_set(e, ST_OVERFLOW, "arena: term %s does not fit in 2^64 bytes", arena_term_name(t));
        a->region_offset[t] = off;
        a->region_bytes[t] = align_up(cap);
        a->overlay_offset[t] = off + overlay[t];
        a->padding[t] = ext - need;
        off += a->region_bytes[t];
    }
    a->bytes = off;
    if ((st = bk->alloc(bk, a->bytes ? a->bytes : ARENA_ALIGN, &a->base, e))) {
        a->base = NULL;
        return st;
    }
    uint64_t used[ARENA_TERMS][MAX_PHASES];
    memset(used, 0, sizeof used);
    for (uint32_t i = 0; i < specs->n; i++) {
        ArenaSpec *p = &specs->v[i];
        uint64_t *u0 = &used[p->term][p->phase];
        uint64_t at = term_align(specs, p->term, *u0);
        p->offset = a->region_offset[p->term] + (p->phase ? overlay[p->term] : 0) + at;
        *u0 = at + p->bytes;
        a->tensors[p->term]++;
        store_dst(p, (char *)a->base + p->offset);
    }
    return ST_OK;
}

int arena_guard(Arena *a, const ArenaSpecs *specs, const Backend *bk)
{
    if (!ARENA_ASAN || !a->base || strcmp(bk->name, "cpu") != 0) return 0;
    /* poison it all, then give every tensor its bytes back: what stays poisoned lies outside the union of
     * the tensors (overlaid phases overlap; unpoisoning never shrinks what an earlier tensor opened) */
    ARENA_POISON(a->base, a->bytes);
    for (uint32_t i = 0; i < specs->n; i++) ARENA_UNPOISON((char *)a->base + specs->v[i].offset, specs->v[i].bytes);
    a->guarded = 1;
    return 1;
}

void arena_enter_phase(const Arena *a, const ArenaSpecs *specs, int phase)
{
    if (!a->guarded) return;
    int overlaid[ARENA_TERMS] = {0};
    for (uint32_t i = 0; i < specs->n; i++)
        if (specs->v[i].phase) overlaid[specs->v[i].term] = 1;
    char *base = a->base;
    for (int t = 0; t < ARENA_TERMS; t++)
        if (overlaid[t])
            ARENA_POISON(base + a->overlay_offset[t], a->region_offset[t] + a->region_bytes[t] - a->overlay_offset[t]);
    for (uint32_t i = 0; i < specs->n; i++)
        if (specs->v[i].phase == phase) ARENA_UNPOISON(base + specs->v[i].offset, specs->v[i].bytes);
}

void arena_release(Arena *a, Backend *bk)
{
    /* the backend's GEMM workspace may be a slice of this arena: it must not
     * outlive it (the backend then makes a private one at the next GEMM) */
    const char *ws = bk->gemm_workspace, *lo = a->base;
    if (ws && lo && ws >= lo && ws < lo + a->bytes) bk->gemm_workspace = NULL;
    if (a->guarded) ARENA_UNPOISON(a->base, a->bytes); /* the allocator's memory again */
    a->guarded = 0;
    if (a->base) bk->free(bk, a->base);
    a->base = NULL;
}
