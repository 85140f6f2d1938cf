/* exec/cpu/cpu_gemm.c — the CPU backend's GEMM, D (M,N) = A (M,K) · B (N,K)ᵀ, on
 * the BLAS: FP8/BF16/FP16 operands are decoded to FP32 panel by panel and
 * multiplied by OpenBLAS's sgemm, one call per tile, the tiles spread over the
 * pool of exec/backend/par.h. OpenBLAS's own thread count is 1 (cpu_blas_init), so a
 * call runs on the pool thread that makes it and several run at once; the
 * threads OpenBLAS starts when it loads are stopped (cpu_blas_init).
 *
 * Arithmetic contract (that of exec/backend/backend.h and of the reference,
 * cpu_gemm_ref.c, except for the order of the sums):
 *  - Decoding is exact: every E4M3, E5M2, BF16 and FP16 value is an FP32
 *    value. No scale is applied to an operand.
 *  - Products are exact: two such values carry at most 11 significant bits
 *    each, and 22 ≤ 24, so the BLAS's fused multiply-adds round only the sums.
 *    (FP32 operands: products may be fused, i.e. not rounded on their own.)
 *  - Sums are FP32, in the BLAS's order (its register tiles and K blocks,
 *    then, for K > KC_MAX, chunks of KC added in increasing order), not in
 *    increasing k as the reference does. Any order of K − 1 FP32 additions is
 *    within (K−1)·2⁻²⁴·Σ|a·b| of the exact sum (Higham, recursive summation),
 *    so the two GEMMs differ by at most twice that: the tests' bound.
 *  - Per-tensor scales multiply the finished sum once, by scale_inv(A)·
 *    scale_inv(B); block scales (1x128, 128x128) multiply each 128-wide K
 *    block's sgemm result before it joins an FP32 accumulator (starting at
 *    0, blocks in increasing order); then + D (accumulate), + bias, the amax
 *    (NaN ignored), × the D scale, one rounding to D's dtype — the
 *    reference's epilogue, operation for operation.
 *
 * Tiles. The operand with more rows (A's M or B's N) streams: its rows are
 * cut into panels, each decoded by the worker that multiplies it; the other
 * one is decoded once and shared (an FP32 operand is used in place). A tile
 * is the D block of one panel. K up to KC_MAX is one chunk; a longer K (the
 * LM head's backward, K = vocabulary) is cut into KC chunks summed into an FP32
 * (M, N) accumulator. Panel sizes and chunks are functions of (M, N, K) only,
 * and a tile is computed by one thread, so D is bit-identical run to run and
 * for any thread count — and whether the tiles are spread over the pool or
 * all run on the calling thread (cpu_gemm_serial, for grouped_gemm's small
 * groups, several of which run at once). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "exec/cpu/cpu_gemm.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"

enum {
    KC_MAX = 8192,     /* K up to this is one chunk */
    KC = 4096,         /* longer K: chunks of this many (a multiple of GEMM_SCALE_BLOCK) */
    PANEL_MIN = 128,   /* rows per panel, at least ... */
    PANEL_MAX = 512,   /* ... and at most */
    PANEL_ALIGN = 16,  /* panel rows are a multiple of this */
    STRIPS_ROUND = 4,  /* the number of panels is a multiple of this where it can be */
    ALIGN_FLOATS = 16, /* worker buffers start on 64-byte boundaries */
    EPI_ROWS = 16,     /* rows per task of the separate epilogue (chunked K) */
};
/* Below this many flops (2·M·N·K) one tile is made, run by the caller. */
#define ONE_TILE_FLOP 4e6

/* An FP32 view of an operand block for cblas: op(p) is (rows × k) for A and
 * (k × cols) for B, row-major with leading dimension ld. */
typedef struct {
    const float *p;
    uint64_t ld;
    CBLAS_TRANSPOSE op;
} View;

typedef struct {
    const GemmDesc *g;
    int stream_b;    /* 1: B's rows (D's columns) are streamed; 0: A's rows */
    uint64_t s, r;   /* streamed and shared extents (n, m or m, n) */
    uint64_t panel;  /* streamed rows per tile */
    uint64_t k0, k1; /* the current K chunk */
    int chunked;     /* K > KC_MAX: tiles accumulate into acc */
    int blocked;     /* block scales */
    uint64_t nkb;    /* 128-wide K blocks of the whole K */
    View shared;     /* the shared operand's chunk */
    float *acc;      /* (M, N) FP32 accumulator when chunked */
    float *work;     /* per-worker buffers, work_floats each */
    uint64_t work_floats, panel_floats, tile_floats, bias_floats;
    const float *bias; /* (N) as FP32, or NULL */
    float tscale;      /* per-tensor scale_inv(A)·scale_inv(B), or 1 */
    int has_tscale;
    float amax[PAR_MAX_THREADS];
} Gm;

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* cblas's op for an operand kept in its stored layout: A stored (M, K) and B
 * stored (K, N) are used as they are, the other two layouts transposed. */
static CBLAS_TRANSPOSE op_of(const GemmOperand *o, int is_b)
{
    return (o->layout == GEMM_K_INNER) != is_b ? CblasNoTrans : CblasTrans;
}

/* The block of operand o (rows mn of it, as A's M or B's N) for rows [r0, r1)
 * and K [k0, k1) as an FP32 view; decoded into buf (dense, in the stored
 * layout) unless o is FP32, which is used in place. is_b: o is B. */
static View view_of(const GemmOperand *o, uint64_t mn, uint64_t k, uint64_t r0, uint64_t r1, uint64_t k0, uint64_t k1,
                    int is_b, float *buf)
{
    int kin = o->layout == GEMM_K_INNER;
    uint64_t ld = o->ld ? o->ld : (kin ? k : mn);
    /* stored rows/cols of the block */
    uint64_t sr0 = kin ? r0 : k0, sr1 = kin ? r1 : k1, sc0 = kin ? k0 : r0, sc1 = kin ? k1 : r1;
    View v = {.op = op_of(o, is_b)};
    if (o->dtype == DT_FP32) {
        v.p = (const float *)o->ptr + sr0 * ld + sc0;
        v.ld = ld;
        return v;
    }
    uint64_t w = sc1 - sc0;
    for (uint64_t i = sr0; i < sr1; i++) elem_load_run(o->ptr, o->dtype, i * ld + sc0, buf + (i - sr0) * w, w);
    v.p = buf;
    v.ld = w;
    return v;
}

/* The view moved by dk along K. */
static View view_k(View v, int kin_stored, uint64_t dk)
{
    v.p += kin_stored ? dk : dk * v.ld;
    return v;
}

/* c (rows × cols, ldc) = op(A)·op(B) over kt, or += when beta is 1. */
static void sgemm(View a, View b, uint64_t rows, uint64_t cols, uint64_t kt, float beta, float *c, uint64_t ldc)
{
    cblas_sgemm(CblasRowMajor, a.op, b.op, (int)rows, (int)cols, (int)kt, 1.0f, a.p, (int)a.ld, b.p, (int)b.ld, beta, c,
                (int)ldc);
}

/* One row segment of D: D[i][j0 .. j0+n) from the FP32 sums c (our scratch,
 * overwritten), through the reference's epilogue, each step a pass over the
 * row only when the descriptor asks for it. Returns the segment's amax (0 when
 * no amax is wanted). */
static float epilogue_row(const Gm *gm, float *c, uint64_t i, uint64_t j0, uint64_t n)
{
    const GemmDesc *g = gm->g;
    uint64_t ldd = g->d.ld ? g->d.ld : g->n, off = i * ldd + j0;
    float amax = 0.0f;
    if (gm->has_tscale)
        for (uint64_t j = 0; j < n; j++) c[j] *= gm->tscale;
    if (g->accum == GEMM_ACCUMULATE) {
        const void *d = g->d.ptr;
        switch (g->d.dtype) {
        case DT_FP32:
            for (uint64_t j = 0; j < n; j++) c[j] += ((const float *)d)[off + j];
            break;
        case DT_BF16:
            for (uint64_t j = 0; j < n; j++) c[j] += elem_f32_from_bf16(((const uint16_t *)d)[off + j]);
            break;
        default:
            for (uint64_t j = 0; j < n; j++) c[j] += elem_load(d, g->d.dtype, off + j);
            break;
        }
    }
    if (gm->bias)
        for (uint64_t j = 0; j < n; j++) c[j] += gm->bias[j0 + j];
    if (g->d.amax)
        for (uint64_t j = 0; j < n; j++) {
            float a = fabsf(c[j]);
            amax = a > amax ? a : amax; /* NaN ignored, as fmaxf */
        }
    if (g->d.scale) {
        float ds = g->d.scale[0];
        for (uint64_t j = 0; j < n; j++) c[j] *= ds;
    }
    elem_store_run(g->d.ptr, g->d.dtype, off, c, n);
    return amax;
}

/* dst (rows × cols, ldd) += part · (scale of A's row · scale of B's column) for
 * K block kb; rows/cols are D indices from i0 / j0. */
static void add_block(const Gm *gm, const float *part, uint64_t ldp, float *dst, uint64_t ldd, uint64_t i0,
                      uint64_t rows, uint64_t j0, uint64_t cols, uint64_t kb)
{
    const GemmDesc *g = gm->g;
    for (uint64_t i = 0; i < rows; i++) {
        float sa = cpu_gemm_scale_at(&g->a, i0 + i, kb, gm->nkb);
        for (uint64_t j = 0; j < cols; j++)
            dst[i * ldd + j] += part[i * ldp + j] * (sa * cpu_gemm_scale_at(&g->b, j0 + j, kb, gm->nkb));
    }
}

/* One tile: panel `task` of the streamed operand times the shared chunk. */
static void tile_task(void *ctx, uint64_t task, int worker)
{
    Gm *gm = ctx;
    const GemmDesc *g = gm->g;
    float *w = gm->work + (uint64_t)worker * gm->work_floats;
    float *pbuf = w, *part = w + gm->panel_floats, *tacc = part + gm->tile_floats;
    uint64_t p0 = task * gm->panel, p1 = gm->s - p0 < gm->panel ? gm->s : p0 + gm->panel, pn = p1 - p0;
    uint64_t kt = gm->k1 - gm->k0;
    const GemmOperand *so = gm->stream_b ? &g->b : &g->a;
    View pv = view_of(so, gm->s, g->k, p0, p1, gm->k0, gm->k1, gm->stream_b, pbuf);
    View av = gm->stream_b ? gm->shared : pv, bv = gm->stream_b ? pv : gm->shared;
    /* the tile in D: rows [i0, i0+rows), columns [j0, j0+cols) */
    uint64_t i0 = gm->stream_b ? 0 : p0, rows = gm->stream_b ? g->m : pn;
    uint64_t j0 = gm->stream_b ? p0 : 0, cols = gm->stream_b ? pn : g->n;
    /* where its sums go: the (M, N) accumulator, or this worker's tile */
    float *out = gm->chunked ? gm->acc + i0 * g->n + j0 : (gm->blocked ? tacc : part);
    uint64_t ldo = gm->chunked ? g->n : cols;
    if (!gm->blocked) {
        sgemm(av, bv, rows, cols, kt, gm->chunked && gm->k0 ? 1.0f : 0.0f, out, ldo);
    } else {
        int a_kin = g->a.layout == GEMM_K_INNER, b_kin = g->b.layout == GEMM_K_INNER; /* views keep it */
        if (!gm->chunked)
            for (uint64_t i = 0; i < rows; i++) memset(out + i * ldo, 0, (size_t)cols * sizeof(float));
        for (uint64_t kk = gm->k0; kk < gm->k1; kk += GEMM_SCALE_BLOCK) {
            uint64_t kw = gm->k1 - kk < GEMM_SCALE_BLOCK ? gm->k1 - kk : GEMM_SCALE_BLOCK;
            sgemm(view_k(av, a_kin, kk - gm->k0), view_k(bv, b_kin, kk - gm->k0), rows, cols, kw, 0.0f, part, cols);
            add_block(gm, part, cols, out, ldo, i0, rows, j0, cols, kk / GEMM_SCALE_BLOCK);
        }
    }
    if (gm->chunked) return; /* the epilogue runs once every chunk is in */
    float amax = gm->amax[worker];
    for (uint64_t i = 0; i < rows; i++) {
        float a = epilogue_row(gm, out + i * ldo, i0 + i, j0, cols);
        amax = a > amax ? a : amax;
    }
    gm->amax[worker] = amax;
}

/* The epilogue of rows [b, e) of the chunked accumulator. */
static void epilogue_task(void *ctx, uint64_t b, uint64_t e, int worker)
{
    Gm *gm = ctx;
    uint64_t n = gm->g->n;
    float amax = gm->amax[worker];
    for (uint64_t i = b; i < e; i++) {
        float a = epilogue_row(gm, gm->acc + i * n, i, 0, n);
        amax = a > amax ? a : amax;
    }
    gm->amax[worker] = amax;
}

typedef struct {
    const GemmOperand *o;
    uint64_t mn, k, k0, k1;
    int is_b;
    float *buf;
} SharedJob;

/* Decode rows [b, e) (as the operand's M/N rows) of the shared chunk. */
static void shared_task(void *ctx, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    const SharedJob *j = ctx;
    int kin = j->o->layout == GEMM_K_INNER;
    uint64_t w = kin ? j->k1 - j->k0 : j->mn;
    if (kin) /* rows of the stored block are M/N rows: decode rows [b, e) */
        view_of(j->o, j->mn, j->k, b, e, j->k0, j->k1, j->is_b, j->buf + b * w);
    else /* stored rows are K: [b, e) indexes them */
        view_of(j->o, j->mn, j->k, 0, j->mn, j->k0 + b, j->k0 + e, j->is_b, j->buf + b * w);
}

/* The panel height for a streamed extent s: strips of at most PANEL_MAX rows,
 * their number rounded up to a multiple of STRIPS_ROUND so that a few threads
 * share them evenly, but no strip below PANEL_MIN rows (narrow strips make the
 * BLAS repack the shared operand too often); one panel for a small GEMM. */
static uint64_t panel_rows(const GemmDesc *g, uint64_t s)
{
    if (2.0 * (double)g->m * (double)g->n * (double)g->k < ONE_TILE_FLOP) return s;
    uint64_t strips = round_up((s + PANEL_MAX - 1) / PANEL_MAX, STRIPS_ROUND), most = s / PANEL_MIN;
    if (strips > most) strips = most ? most : 1;
    uint64_t p = round_up((s + strips - 1) / strips, PANEL_ALIGN);
    return p < s ? p : s;
}

/* OpenBLAS's own call to stop its server threads (exported by its pthread and OpenMP builds, not declared in
 * cblas.h). When the library loads it starts a server thread per core beyond the first, and each busy-waits
 * (sched_yield) for about 0.1 s before it sleeps, whatever the thread count is set to: on a 2-core host an idle
 * process's one server thread used 10 clock ticks of CPU in its first 100 ms, and the first GEMMs timed ran at
 * half their rate against it (docs/calibrate.md, "The cold start"). At one thread OpenBLAS never hands work to
 * a server, so stopped they stay stopped. */
int blas_thread_shutdown_(void);

static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
    blas_thread_shutdown_();
}

void cpu_blas_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_single_thread);
}

/* Sets up gm for g: the tiling (a function of M, N and K only), the scale and
 * the sizes of its buffers; need[0..2] are the floats of the three regions it
 * uses with `workers` work buffers: the shared operand's chunk (0 for an FP32
 * one, used in place), the bias plus the workers' buffers, the chunked (M, N)
 * accumulator (0 when K is one chunk). */
static void gemm_plan(const GemmDesc *g, int workers, Gm *gm, uint64_t need[3])
{
    uint64_t m = g->m, n = g->n, k = g->k;
    *gm = (Gm){.g = g, .stream_b = n >= m, .blocked = cpu_gemm_blocked(g)};
    gm->s = gm->stream_b ? n : m;
    gm->r = gm->stream_b ? m : n;
    gm->panel = panel_rows(g, gm->s);
    gm->chunked = k > KC_MAX;
    gm->nkb = (k + GEMM_SCALE_BLOCK - 1) / GEMM_SCALE_BLOCK;
    gm->has_tscale = !gm->blocked && g->a.scale_inv;
    gm->tscale = gm->has_tscale ? g->a.scale_inv[0] * g->b.scale_inv[0] : 1.0f;
    uint64_t kc = gm->chunked ? KC : k;
    const GemmOperand *sh = gm->stream_b ? &g->a : &g->b, *so = gm->stream_b ? &g->b : &g->a;
    gm->panel_floats = so->dtype == DT_FP32 ? 0 : round_up(gm->panel * kc, ALIGN_FLOATS);
    gm->tile_floats = round_up(gm->panel * gm->r, ALIGN_FLOATS);
    gm->work_floats = gm->panel_floats + gm->tile_floats * (gm->blocked ? 2 : 1);
    gm->bias_floats = g->bias ? round_up(n, ALIGN_FLOATS) : 0;
    need[0] = sh->dtype == DT_FP32 ? 0 : gm->r * kc;
    need[1] = gm->bias_floats + gm->work_floats * (uint64_t)workers + ALIGN_FLOATS;
    need[2] = gm->chunked ? m * n : 0;
}

/* Runs the GEMM gm was planned for in the buffers of gemm_plan's sizes: its
 * tiles on the pool, or (serial) all on the calling thread as worker 0 — the
 * same tiles computed the same way, so the same D bit for bit. */
static void gemm_exec(Gm *gm, float *sbuf, float *wbuf, float *acc, int serial)
{
    const GemmDesc *g = gm->g;
    uint64_t m = g->m, n = g->n, k = g->k;
    uint64_t kc = gm->chunked ? KC : k, ntiles = (gm->s + gm->panel - 1) / gm->panel;
    const GemmOperand *sh = gm->stream_b ? &g->a : &g->b;
    float *base = wbuf + (ALIGN_FLOATS - ((uintptr_t)wbuf / sizeof(float)) % ALIGN_FLOATS) % ALIGN_FLOATS;
    if (g->bias) {
        elem_load_run(g->bias, g->bias_dtype, 0, base, n);
        gm->bias = base;
    }
    gm->work = base + gm->bias_floats;
    gm->acc = acc;

    if (gm->chunked && gm->blocked) memset(gm->acc, 0, (size_t)(m * n) * sizeof(float)); /* blocks add from 0 */
    for (gm->k0 = 0; gm->k0 < k; gm->k0 += kc) {
        gm->k1 = k - gm->k0 < kc ? k : gm->k0 + kc;
        SharedJob sj = {sh, gm->r, k, gm->k0, gm->k1, !gm->stream_b, sbuf};
        if (sbuf) { /* decode the shared chunk, split by its stored rows */
            uint64_t srows = sh->layout == GEMM_K_INNER ? gm->r : gm->k1 - gm->k0;
            uint64_t per_row = sh->layout == GEMM_K_INNER ? gm->k1 - gm->k0 : gm->r;
            if (serial)
                shared_task(&sj, 0, srows, 0);
            else
                par_chunks(srows, (1u << 16) / per_row + 1, shared_task, &sj);
            gm->shared = (View){sbuf, sh->layout == GEMM_K_INNER ? gm->k1 - gm->k0 : gm->r, op_of(sh, !gm->stream_b)};
        } else { /* FP32: in place, nothing decoded */
            gm->shared = view_of(sh, gm->r, k, 0, gm->r, gm->k0, gm->k1, !gm->stream_b, NULL);
        }
        if (serial)
            for (uint64_t t = 0; t < ntiles; t++) tile_task(gm, t, 0);
        else
            par_tasks(ntiles, tile_task, gm);
    }
    if (gm->chunked) {
        if (serial)
            epilogue_task(gm, 0, m, 0);
        else
            par_chunks(m, EPI_ROWS, epilogue_task, gm);
    }
    if (g->d.amax) {
        float amax = 0.0f;
        for (int w = 0; w < (serial ? 1 : par_threads()); w++) amax = gm->amax[w] > amax ? gm->amax[w] : amax;
        *g->d.amax = fmaxf(*g->d.amax, amax);
    }
}

/* Whether the BLAS's 32-bit sizes hold g (else the reference computes it). */
static int blas_fits(const GemmDesc *g)
{
    uint64_t lda = g->a.ld ? g->a.ld : (g->a.layout == GEMM_K_INNER ? g->k : g->m);
    uint64_t ldb = g->b.ld ? g->b.ld : (g->b.layout == GEMM_K_INNER ? g->k : g->n);
    return g->m <= INT_MAX && g->n <= INT_MAX && g->k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX;
}

Status cpu_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    Status st = cpu_gemm_check(g, e);
    if (st) return st;
    if (!blas_fits(g) || g->acc_precision == GEMM_ACC_TC14) /* beyond the BLAS's 32-bit sizes; the 14-bit */
        return cpu_gemm_ref(bk, g, e);                      /* accumulator is the reference's alone */
    Gm gm;
    uint64_t need[3];
    gemm_plan(g, par_threads(), &gm, need);
    /* scratch: 0 = the shared chunk, 1 = bias + per-worker buffers, 2 = the (M, N) accumulator */
    float *sbuf = need[0] ? cpu_scratch(bk, 0, need[0], e) : NULL;
    float *wbuf = cpu_scratch(bk, 1, need[1], e);
    float *acc = need[2] && wbuf ? cpu_scratch(bk, 2, need[2], e) : NULL;
    if ((need[0] && !sbuf) || !wbuf || (need[2] && !acc)) return e ? e->st : ST_NOMEM;
    gemm_exec(&gm, sbuf, wbuf, acc, 0);
    return ST_OK;
}

Status cpu_gemm_serial_plan(const GemmDesc *g, uint64_t need[2], Err *e)
{
    Status st = cpu_gemm_check(g, e);
    if (st) return st;
    Gm gm;
    uint64_t all[3];
    gemm_plan(g, 1, &gm, all);
    if (!blas_fits(g) || gm.chunked || g->acc_precision == GEMM_ACC_TC14)
        return err_set(e, ST_SOFTWARE, "cpu gemm: a %llux%llux%llu GEMM has no serial path", (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    need[0] = all[0];
    need[1] = all[1];
    return ST_OK;
}

void cpu_gemm_serial(const GemmDesc *g, float *sbuf, float *wbuf)
{
    Gm gm;
    uint64_t need[3];
    gemm_plan(g, 1, &gm, need);
    gemm_exec(&gm, need[0] ? sbuf : NULL, wbuf, NULL, 1);
}
