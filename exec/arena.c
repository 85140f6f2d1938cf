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

void arena_specs_free(ArenaSpecs *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

Status arena_specs_bytes(const ArenaSpecs *s, uint64_t bytes[TERM_COUNT], Err *e)
{
    memset(bytes, 0, sizeof(uint64_t) * TERM_COUNT);
    if (s->st == ST_NOMEM) return err_set(e, ST_NOMEM, "out of memory listing tensors");
    if (s->st) return err_set(e, ST_OVERFLOW, "a tensor's byte count overflows 2^64");
    for (uint32_t i = 0; i < s->n; i++)
        if (u64_add(bytes[s->v[i].term], s->v[i].bytes, &bytes[s->v[i].term]))
            return err_set(e, ST_OVERFLOW, "term %s overflows 2^64 bytes", exec_term_name(s->v[i].term));
    return ST_OK;
}

static uint64_t align_up(uint64_t x) { return (x + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

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
    uint64_t need[TERM_COUNT];
    Status st = arena_specs_bytes(specs, need, e);
    if (st) return st;
    a->has_plan = planned != NULL;
    uint64_t off = 0;
    for (int t = 0; t < TERM_COUNT; t++) {
        uint64_t slack = 0, cap;
        for (uint32_t i = 0; i < specs->n; i++)
            if (specs->v[i].term == (ExecTerm)t) slack += ARENA_ALIGN - 1;
        if (planned) a->planned[t] = planned[t];
        cap = need[t] > a->planned[t] ? need[t] : a->planned[t];
        if (u64_add(cap, slack, &cap) || cap > UINT64_MAX - ARENA_ALIGN || off > UINT64_MAX - align_up(cap))
            return err_set(e, ST_OVERFLOW, "arena: term %s does not fit in 2^64 bytes", exec_term_name(t));
        a->region_offset[t] = off;
        a->region_bytes[t] = align_up(cap);
        off += a->region_bytes[t];
    }
    a->bytes = off;
    if ((st = bk->alloc(bk, a->bytes ? a->bytes : ARENA_ALIGN, &a->base, e))) {
        a->base = NULL;
        return st;
    }
    uint64_t used[TERM_COUNT] = {0};
    for (uint32_t i = 0; i < specs->n; i++) {
        ArenaSpec *p = &specs->v[i];
        uint64_t at = align_up(used[p->term]);
        a->padding[p->term] += at - used[p->term];
        p->offset = a->region_offset[p->term] + at;
        used[p->term] = at + p->bytes;
        a->placed[p->term] += p->bytes;
        a->tensors[p->term]++;
        store_dst(p, (char *)a->base + p->offset);
    }
    return ST_OK;
}

void arena_release(Arena *a, Backend *bk)
{
    if (a->base) bk->free(bk, a->base);
    a->base = NULL;
}
