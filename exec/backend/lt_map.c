/* exec/backend/lt_map.c — GemmDesc → cuBLASLt call, and the heuristic cache (see lt_map.h). */
#include "exec/backend/lt_map.h"

#include <stdlib.h>
#include <string.h>

/* FP8 tensor-core rule (cuBLAS "tensor core usage", TE's "caller must pad",
 * torch._scaled_mm's checks): K, the operands' leading dimensions and the
 * output columns in multiples of 16 elements, operand pointers 16-byte aligned. */
enum { FP8_ALIGN_ELEMS = 16, FP8_ALIGN_BYTES = 16 };

uint32_t lt_ptr_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t al = 256;
    while (al > 1 && (a % al) != 0) al /= 2;
    return al;
}

unsigned lt_scale_stage(const LtCall *c)
{
    const void *p[3] = {c->a_scale_inv, c->b_scale_inv, c->d_scale};
    unsigned m = 0;
    for (int i = 0; i < 3; i++)
        if (p[i] && lt_ptr_align(p[i]) < LT_SCALE_ALIGN) m |= 1u << i;
    return m;
}

void lt_scales_of(Granularity gran, const float *src, uint64_t rows, uint64_t k, LtScales *out)
{
    const uint64_t kb = (k + 127) / 128;
    memset(out, 0, sizeof *out);
    out->src = src;
    out->kb = kb;
    if (gran == GRAN_1X128) {
        out->mode = LT_SCALE_VEC128, out->rows = rows, out->ld = (rows + 3) / 4 * 4, out->count = kb * out->ld;
    } else if (gran == GRAN_128X128) {
        out->mode = LT_SCALE_BLK128, out->rows = (rows + 127) / 128, out->ld = (kb + 3) / 4 * 4;
        out->count = out->rows * out->ld;
    } else {
        out->mode = LT_SCALE_SCALAR, out->rows = 1, out->kb = 1, out->ld = 1, out->count = 1;
    }
}

int lt_block_scales_ok(uint64_t lt_version, int cc_major, int cc_minor)
{
    return lt_version >= LT_BLOCK_SCALES_VERSION && cc_major == 9 && cc_minor == 0;
}

Status lt_block_scales_check(Backend *bk, Err *e)
{
    BackendDeviceInfo d;
    if (!strcmp(bk->name, "cpu")) return ST_OK;
    memset(&d, 0, sizeof d);
    Status st = bk->device_info ? bk->device_info(bk, &d, e) : ST_OK;
    if (st) return st;
    if (lt_block_scales_ok(d.gemm_library_version, d.cc_major, d.cc_minor)) return ST_OK;
    const uint64_t v = d.gemm_library_version, w = LT_BLOCK_SCALES_VERSION;
    return err_set(e, ST_UNAVAILABLE,
                   "the %s backend's block-scaled FP8 GEMMs (1x128 / 128x128 FP32 scales: cuBLASLt's VEC128_32F and "
                   "BLK128x128_32F modes) need cuBLASLt %llu.%llu or later on compute capability 9.0; this process "
                   "loaded cuBLASLt %llu.%llu.%llu on %s (compute capability %d.%d); the cpu backend runs them "
                   "(--backend cpu)",
                   bk->name, (unsigned long long)(w / 10000), (unsigned long long)(w / 100 % 100),
                   (unsigned long long)(v / 10000), (unsigned long long)(v / 100 % 100), (unsigned long long)(v % 100),
                   d.name[0] ? d.name : "an unnamed device", d.cc_major, d.cc_minor);
}

static Status fp8_rules(const GemmDesc *g, LtCall *c, Err *e)
{
    if (g->a.scale_gran != GRAN_TENSOR || g->b.scale_gran != GRAN_TENSOR) {
        if (g->a.scale_gran == GRAN_TENSOR || g->b.scale_gran == GRAN_TENSOR)
            return err_set(e, ST_UNAVAILABLE,
                           "gemm: one block-scaled and one per-tensor FP8 operand (%s x %s) is not run here",
                           gran_name(g->a.scale_gran), gran_name(g->b.scale_gran));
        if (dtype_is_fp8(c->d_type))
            return err_set(e, ST_UNAVAILABLE,
                           "gemm: block-scaled FP8 (%s x %s) with an FP8 output (%s) is not run here",
                           gran_name(g->a.scale_gran), gran_name(g->b.scale_gran), dtype_name(c->d_type));
        lt_scales_of(g->b.scale_gran, g->b.scale_inv, g->n, g->k, &c->a_blk); /* cuBLAS A = our B */
        lt_scales_of(g->a.scale_gran, g->a.scale_inv, g->m, g->k, &c->b_blk);
        /* no fast accumulation with block scales (cuBLASLt promotes every block to apply its scale; PyTorch
         * refuses FAST_ACCUM with them too); GEMM_ACC_TC14, the CPU's model of the tensor core's limited
         * accumulation, is the hardware's own accumulation here */
        c->fast_accum = 0;
    }
    if (c->k % FP8_ALIGN_ELEMS || c->m % FP8_ALIGN_ELEMS)
        return err_set(e, ST_UNAVAILABLE,
                       "gemm: FP8 on tensor cores needs K and N in multiples of %d (got M=%llu N=%llu K=%llu); pad the "
                       "tensors",
                       FP8_ALIGN_ELEMS, (unsigned long long)g->m, (unsigned long long)g->n, (unsigned long long)g->k);
    if (c->lda % FP8_ALIGN_ELEMS || c->ldb % FP8_ALIGN_ELEMS)
        return err_set(e, ST_UNAVAILABLE,
                       "gemm: FP8 leading dimensions must be multiples of %d (A ld %llu, B ld %llu); pad the tensors",
                       FP8_ALIGN_ELEMS, (unsigned long long)c->ldb, (unsigned long long)c->lda);
    if (lt_ptr_align(c->a) < FP8_ALIGN_BYTES || lt_ptr_align(c->b) < FP8_ALIGN_BYTES)
        return err_set(e, ST_UNAVAILABLE, "gemm: FP8 operands must start on a %d-byte boundary", FP8_ALIGN_BYTES);
    if ((c->ldd * dtype_bytes(c->d_type)) % FP8_ALIGN_BYTES)
        return err_set(e, ST_UNAVAILABLE, "gemm: FP8 GEMM output rows must be multiples of %d bytes (ld %llu of %s)",
                       FP8_ALIGN_BYTES, (unsigned long long)c->ldd, dtype_name(c->d_type));
    return ST_OK;
}

static Status bias_mode(const GemmDesc *g, LtCall *c, Err *e)
{
    if (!g->bias) return ST_OK;
    c->bias = g->bias;
    c->bias_type = g->bias_dtype;
    int fp8_in = dtype_is_fp8(g->a.dtype);
    if (dtype_is_fp8(c->d_type)) {
        if (g->bias_dtype != DT_BF16)
            return err_set(e, ST_UNAVAILABLE, "gemm: a bias on an FP8 output must be bf16 for cuBLASLt (got %s)",
                           dtype_name(g->bias_dtype));
        c->bias_mode = LT_BIAS_EPILOGUE;
    } else if (g->bias_dtype == c->d_type &&
               (c->d_type == DT_BF16 || c->d_type == DT_FP16 || (c->d_type == DT_FP32 && !fp8_in))) {
        c->bias_mode = LT_BIAS_EPILOGUE;
    } else {
        c->bias_mode = LT_BIAS_KERNEL;
    }
    return ST_OK;
}

Status lt_map_gemm(const GemmDesc *g, LtCall *c, Err *e)
{
    Status st = gemm_desc_check(g, e);
    if (st) return st;
    memset(c, 0, sizeof *c);
    const GemmOperand *ga = &g->a, *gb = &g->b;
    c->m = g->n;
    c->n = g->m;
    c->k = g->k;
    /* cuBLAS A = our B (N, K) */
    c->a = gb->ptr;
    c->a_type = gb->dtype;
    if (gb->layout == GEMM_K_INNER) {
        c->trans_a = 1;
        c->a_rows = g->k;
        c->a_cols = g->n;
    } else {
        c->a_rows = g->n;
        c->a_cols = g->k;
    }
    c->lda = gb->ld ? gb->ld : c->a_rows;
    /* cuBLAS B = our A (M, K) */
    c->b = ga->ptr;
    c->b_type = ga->dtype;
    if (ga->layout == GEMM_K_INNER) {
        c->b_rows = g->k;
        c->b_cols = g->m;
    } else {
        c->trans_b = 1;
        c->b_rows = g->m;
        c->b_cols = g->k;
    }
    c->ldb = ga->ld ? ga->ld : c->b_rows;
    /* D (M, N) row-major = (N × M) column-major */
    c->d = g->d.ptr;
    c->d_type = g->d.dtype;
    c->ldd = g->d.ld ? g->d.ld : g->n;
    /* TE: with an FP8 output, C's type is the bias type (BF16) and C is unused */
    c->c_type = dtype_is_fp8(c->d_type) ? DT_BF16 : c->d_type;
    c->alpha = 1.0f;
    c->beta_one = g->accum == GEMM_ACCUMULATE;
    c->c = c->beta_one ? g->d.ptr : NULL;
    c->batch = 1;
    if (dtype_is_fp8(ga->dtype)) {
        c->a_scale_inv = gb->scale_inv;
        c->b_scale_inv = ga->scale_inv;
        c->fast_accum = g->acc_precision == GEMM_ACC_FAST;
        if ((st = fp8_rules(g, c, e))) return st;
    }
    c->d_scale = g->d.scale;
    if (g->d.amax) {
        c->amax = g->d.amax;
        c->amax_by_lt = dtype_is_fp8(c->d_type);
    }
    return bias_mode(g, c, e);
}

void lt_key_of(const LtCall *c, LtKey *k)
{
    memset(k, 0, sizeof *k);
    k->m = c->m;
    k->n = c->n;
    k->k = c->k;
    k->lda = c->lda;
    k->ldb = c->ldb;
    k->ldd = c->ldd;
    k->a_rows = c->a_rows;
    k->a_cols = c->a_cols;
    k->b_rows = c->b_rows;
    k->b_cols = c->b_cols;
    k->stride_a = c->stride_a;
    k->stride_b = c->stride_b;
    k->stride_d = c->stride_d;
    k->batch = c->batch;
    k->trans_a = (uint8_t)c->trans_a;
    k->trans_b = (uint8_t)c->trans_b;
    k->a_type = (uint8_t)c->a_type;
    k->b_type = (uint8_t)c->b_type;
    k->c_type = (uint8_t)c->c_type;
    k->d_type = (uint8_t)c->d_type;
    k->bias_type = (uint8_t)(c->bias_mode == LT_BIAS_EPILOGUE ? c->bias_type : DT_NONE);
    k->bias_mode = (uint8_t)(c->bias_mode == LT_BIAS_EPILOGUE);
    k->beta_one = (uint8_t)c->beta_one;
    k->fast_accum = (uint8_t)c->fast_accum;
    k->has_scales = (uint8_t)(c->a_scale_inv != NULL);
    k->has_d_scale = (uint8_t)(c->d_scale != NULL);
    k->amax_by_lt = (uint8_t)(c->amax && c->amax_by_lt);
    k->a_mode = c->a_blk.mode;
    k->b_mode = c->b_blk.mode;
    k->align_a = (uint16_t)lt_ptr_align(c->a);
    k->align_b = (uint16_t)lt_ptr_align(c->b);
    k->align_c = (uint16_t)(c->c ? lt_ptr_align(c->c) : 256);
    k->align_d = (uint16_t)lt_ptr_align(c->d);
}

uint64_t lt_key_hash(const LtKey *k)
{
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64: offset basis 14695981039346656037 */
    for (size_t i = 0; i < sizeof *k; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

int lt_key_eq(const LtKey *a, const LtKey *b) { return memcmp(a, b, sizeof *a) == 0; }

static LtSlot *probe(const LtCache *c, const LtKey *k)
{
    uint32_t mask = c->cap - 1, i = (uint32_t)lt_key_hash(k) & mask;
    while (c->slots[i].used && !lt_key_eq(&c->slots[i].key, k)) i = (i + 1) & mask;
    return &c->slots[i];
}

void *lt_cache_find(LtCache *c, const LtKey *k)
{
    LtSlot *s = c->cap ? probe(c, k) : NULL;
    if (s && s->used) {
        c->hits++;
        return s->val;
    }
    c->misses++;
    return NULL;
}

static Status grow(LtCache *c, Err *e)
{
    uint32_t cap = c->cap ? c->cap * 2 : 64;
    if (cap < c->cap) return err_set(e, ST_NOMEM, "gemm: heuristic cache cannot grow past %u entries", c->cap);
    LtSlot *fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return err_set(e, ST_NOMEM, "gemm: out of memory growing the heuristic cache to %u entries", cap);
    LtCache next = {.slots = fresh, .cap = cap, .n = 0, .hits = c->hits, .misses = c->misses};
    for (uint32_t i = 0; i < c->cap; i++)
        if (c->slots[i].used) {
            *probe(&next, &c->slots[i].key) = c->slots[i];
            next.n++;
        }
    free(c->slots);
    *c = next;
    return ST_OK;
}

Status lt_cache_put(LtCache *c, const LtKey *k, void *val, Err *e)
{
    if (2 * (uint64_t)(c->n + 1) > c->cap) {
        Status st = grow(c, e);
        if (st) return st;
    }
    LtSlot *s = probe(c, k);
    if (s->used) return err_set(e, ST_SOFTWARE, "gemm: heuristic cache already holds this key");
    s->key = *k;
    s->val = val;
    s->used = 1;
    c->n++;
    return ST_OK;
}

void lt_cache_clear(LtCache *c, void (*free_val)(void *val, void *ctx), void *ctx)
{
    for (uint32_t i = 0; i < c->cap; i++)
        if (c->slots[i].used && free_val) free_val(c->slots[i].val, ctx);
    free(c->slots);
    memset(c, 0, sizeof *c);
}
