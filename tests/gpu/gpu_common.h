/* tests/gpu/gpu_common.h — what the GPU check programs share: both backends,
 * device buffers, poisoning, comparison against the CPU reference with named
 * tolerances, and a CSV of the results (static inline: each program takes what
 * it uses).
 *
 * Comparison rules (METHOD.md): every output is poisoned with 0xFF bytes before
 * the GPU runs (NaN in FP32/BF16/FP16 and in both FP8 formats), so an element
 * the kernel did not write stays NaN; a GPU value that is NaN or infinite where
 * the reference is finite fails, whatever the tolerance. An element passes when
 *     |gpu − cpu| ≤ rel·|cpu| + abs_rms·rms(cpu) + abs
 * and the tensor passes when every element does and ‖gpu − cpu‖₂ ≤ norm·‖cpu‖₂
 * (gpu_tol.h). Each check names its tolerance and where it comes from. */
#ifndef FP8PLAN_TESTS_GPU_COMMON_H
#define FP8PLAN_TESTS_GPU_COMMON_H

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/backend/backend.h"
#include "exec/cuda/backend_cuda.h"
#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "gpu_tol.h"
#include "util/fileio.h"

/* unit roundoff of a format: half its ulp at 1 */
#define U_BF16 0x1p-8
#define U_FP16 0x1p-11
#define U_FP32 0x1p-24

typedef struct {
    Backend *cpu, *gpu;
    Rng rng;
    uint64_t seed;
    FILE *csv; /* rows: program,check,case,dtype,elements,max_err,norm_err,tol_rel,tol_rms,tol_norm,bad,result */
    OutFile out;
    const char *prog;
    int passed, failed;
    int selftest;                   /* FP8PLAN_GPU_SELFTEST=1: the "GPU" is a second CPU backend */
    int check_rows;                 /* the main CSV has GC_CHECK_HEADER's columns */
    OutFile *extra[2];              /* further CSVs of the program (gc_keep), committed with the main one */
    long calls, fail_at, signal_at; /* GC_OK calls so far; FP8PLAN_GPU_FAIL_AT / _SIGNAL_AT (test hooks) */
} Gc;

#define GC_CHECK_HEADER "program,check,case,dtype,elements,max_err,norm_err,tol_rel,tol_rms,tol_norm,bad,result"

/* Set by SIGTERM/SIGINT (the GPU check's per-stage `timeout`): the program
 * stops at its next backend call, keeping every row it has. */
static volatile sig_atomic_t gc_stop_signal;
static inline void gc_on_signal(int sig) { gc_stop_signal = sig; }

/* A further output of the program, committed by gc_finish and by gc_abort. */
static inline void gc_keep(Gc *g, OutFile *o)
{
    for (int i = 0; i < 2; i++)
        if (!g->extra[i]) {
            g->extra[i] = o;
            return;
        }
}

/* Unexpected failure (or the stage's time limit): keep what was measured —
 * a FAIL row naming the cause in a check CSV, every output committed with the
 * rows it has — then exit with `code` (70 internal error, 124 stopped). */
static inline void gc_abort(Gc *g, const char *cause, int code)
{
    Err e;
    if (g->csv && g->check_rows) {
        char f[200];
        size_t i = 0;
        for (; cause[i] && i + 1 < sizeof f; i++) f[i] = cause[i] == ',' || cause[i] == '\n' ? ';' : cause[i];
        f[i] = '\0';
        fprintf(g->csv, "%s,abort,%s,,,,,,,,1,FAIL\n", g->prog, f);
    }
    for (int k = 0; k < 2; k++)
        if (g->extra[k] && g->extra[k]->f && outfile_commit(g->extra[k], &e))
            fprintf(stderr, "%s: %s\n", g->prog, e.msg);
    if (g->csv && outfile_commit(&g->out, &e)) fprintf(stderr, "%s: %s\n", g->prog, e.msg);
    g->csv = NULL;
    fprintf(stderr, "%s: %s; the rows measured so far are kept\n", g->prog, cause);
    printf("%d passed, %d failed\n", g->passed, g->failed + (code != 0));
    exit(code);
}

static inline long gc_env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : 0;
}

/* `PROG --version`: the CUDA, cuBLASLt and NCCL versions built in and found
 * here, one line each, then exit 0 — the GPU check runs it to see that the
 * program loads before any stage (no GPU needed). Call first in main. */
static inline void gc_version_flag(const char *prog, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--version") != 0) return;
    CudaVersions v;
    backend_cuda_versions(&v);
    printf("%s: cuda runtime built %d.%d loaded %d.%d\n", prog, v.runtime_built / 1000, v.runtime_built % 1000 / 10,
           v.runtime_loaded / 1000, v.runtime_loaded % 1000 / 10);
    printf("%s: cuda driver %d.%d%s\n", prog, v.driver / 1000, v.driver % 1000 / 10, v.driver ? "" : " (none)");
    printf("%s: nccl built %d.%d.%d loaded %d.%d.%d\n", prog, v.nccl_built / 10000, v.nccl_built / 100 % 100,
           v.nccl_built % 100, v.nccl_loaded / 10000, v.nccl_loaded / 100 % 100, v.nccl_loaded % 100);
    printf("%s: cublaslt %llu\n", prog, (unsigned long long)v.cublaslt);
    exit(0);
}

/* Create both backends, or say why there is no GPU and exit 69 (EX_UNAVAILABLE).
 * csv_path: where the CSV goes ("-": stdout), written atomically at the end;
 * seed: decimal seed, or NULL for a fresh one from the clock. */
static inline void gc_init(Gc *g, const char *prog, const char *csv_path, const char *seed, const char *header)
{
    memset(g, 0, sizeof *g);
    g->prog = prog;
    Err e;
    /* FP8PLAN_GPU_SELFTEST=1: a second CPU backend stands in for the GPU, to
     * test these programs themselves on a machine without one (every check
     * must then pass exactly, except those of GPU-only behaviour) */
    const char *self = getenv("FP8PLAN_GPU_SELFTEST");
    g->selftest = self && !strcmp(self, "1");
    if (g->selftest) {
        printf("%s: SELFTEST: the CPU backend stands in for the GPU; nothing here measures a GPU\n", prog);
        if (backend_cpu_create(&g->gpu, &e)) {
            fprintf(stderr, "%s: %s\n", prog, e.msg);
            exit(status_exit_code(e.st));
        }
    } else if (backend_create("cuda", &g->gpu, &e)) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        exit(status_exit_code(e.st));
    }
    if (backend_cpu_create(&g->cpu, &e)) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        exit(status_exit_code(e.st));
    }
    /* fresh random data each run (METHOD.md); the seed is printed to reproduce one */
    g->seed = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL);
    g->rng.s = g->seed;
    printf("%s: seed %llu\n", prog, (unsigned long long)g->seed);
    if (outfile_open(&g->out, csv_path, &e)) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        exit(status_exit_code(e.st));
    }
    g->csv = g->out.f;
    g->check_rows = !strcmp(header, GC_CHECK_HEADER);
    fprintf(g->csv, "%s\n", header);
    g->fail_at = gc_env_long("FP8PLAN_GPU_FAIL_AT");
    g->signal_at = gc_env_long("FP8PLAN_GPU_SIGNAL_AT");
    signal(SIGTERM, gc_on_signal);
    signal(SIGINT, gc_on_signal);
}

/* The usual command line of a check program: [CSV] [SEED]. */
static inline void gc_init_check(Gc *g, const char *prog, int argc, char **argv)
{
    gc_init(g, prog, argc > 1 ? argv[1] : "-", argc > 2 ? argv[2] : NULL, GC_CHECK_HEADER);
}

static inline int gc_finish(Gc *g)
{
    Err e;
    for (int k = 0; k < 2; k++)
        if (g->extra[k] && g->extra[k]->f && outfile_commit(g->extra[k], &e))
            fprintf(stderr, "%s: %s\n", g->prog, e.msg);
    if (outfile_commit(&g->out, &e)) fprintf(stderr, "%s: %s\n", g->prog, e.msg);
    printf("%d passed, %d failed\n", g->passed, g->failed);
    g->gpu->destroy(g->gpu);
    g->cpu->destroy(g->cpu);
    return g->failed ? 1 : 0;
}

/* After each backend call: a failure (or an injected one) aborts, keeping the rows. */
static inline void gc_after(Gc *g, Status st, const Err *e, const char *file, int line, const char *call)
{
    char cause[1200];
    Err injected = {.msg = "injected by FP8PLAN_GPU_FAIL_AT"};
    g->calls++;
    if (g->signal_at && g->calls == g->signal_at) raise(SIGTERM); /* test hook: the time limit strikes here */
    if (!st && g->fail_at && g->calls == g->fail_at) {
        st = ST_SOFTWARE;
        e = &injected;
    }
    if (st) {
        snprintf(cause, sizeof cause, "%s:%d: %.300s failed: %s: %.600s", file, line, call, status_str(st), e->msg);
        gc_abort(g, cause, 70);
    }
    if (gc_stop_signal) {
        snprintf(cause, sizeof cause, "stopped by signal %d (the stage's time limit) after %.300s", (int)gc_stop_signal,
                 call);
        gc_abort(g, cause, 124);
    }
}

/* Abort the program on an unexpected backend error (the check cannot go on). */
#define GC_OK(g, call)                                            \
    do {                                                          \
        Err gc_e_;                                                \
        err_clear(&gc_e_);                                        \
        Status gc_st_ = (call);                                   \
        gc_after((g), gc_st_, &gc_e_, __FILE__, __LINE__, #call); \
    } while (0)
#define GE (&gc_e_)

/* A check's size: n on the GPU; in the selftest (the CPU standing in, which
 * tests the plumbing, not the kernels) at most `self`, so CI stays short. */
static inline uint64_t gc_n(const Gc *g, uint64_t n, uint64_t self) { return g->selftest && self < n ? self : n; }

/* ---- memory ---------------------------------------------------------------------- */

static inline void *gc_dalloc(Gc *g, uint64_t bytes)
{
    void *p = NULL;
    GC_OK(g, g->gpu->alloc(g->gpu, bytes, &p, GE));
    return p;
}

static inline void *gc_halloc(uint64_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%llu bytes)\n", (unsigned long long)bytes);
        exit(71);
    }
    return p;
}

/* A device copy of host data. */
static inline void *gc_dup(Gc *g, const void *h, uint64_t bytes)
{
    void *d = gc_dalloc(g, bytes);
    GC_OK(g, g->gpu->copy_to_device(g->gpu, d, h, bytes, GE));
    return d;
}

static inline void gc_put(Gc *g, void *d, const void *h, uint64_t bytes)
{
    GC_OK(g, g->gpu->copy_to_device(g->gpu, d, h, bytes, GE));
}

static inline void gc_get(Gc *g, void *h, const void *d, uint64_t bytes)
{
    GC_OK(g, g->gpu->sync(g->gpu, GE));
    GC_OK(g, g->gpu->copy_to_host(g->gpu, h, d, bytes, GE));
}

/* 0xFF bytes: NaN in every float format this project stores. */
static inline void gc_poison(Gc *g, void *d, uint64_t bytes)
{
    void *h = gc_halloc(bytes);
    memset(h, 0xff, bytes);
    gc_put(g, d, h, bytes);
    free(h);
}

static inline void gc_dfree(Gc *g, void *d) { g->gpu->free(g->gpu, d); }

/* ---- data ---------------------------------------------------------------------------- */

/* n values N(0, sd²) stored in dt (host buffer). */
static inline void *gc_randn(Gc *g, Dtype dt, uint64_t n, double sd)
{
    void *h = gc_halloc(n * dtype_bytes(dt));
    for (uint64_t i = 0; i < n; i++) elem_store(h, dt, i, (float)(rng_normal(&g->rng) * sd));
    return h;
}

/* ---- comparison ------------------------------------------------------------------------- */

static const Tol TOL_EXACT = {0.0, 0.0, 0.0, "same IEEE operations in the same order: bit-identical values", 0.0};

/* A free-text CSV field: commas become ';' (the summary script splits on commas). */
static inline const char *gc_field(const char *s, char *buf, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) buf[i] = s[i] == ',' || s[i] == '\n' ? ';' : s[i];
    buf[i] = '\0';
    return buf;
}

/* Compare n values of dt (host copies); records one CSV row and counts a pass/fail. */
/* gc_check with a per-element allowance added to the tolerance: extra[i] (in
 * the stored units; NULL for none) where an element's bound depends on its own
 * terms, not only on the tensor's rms. */
static inline int gc_check_extra(Gc *g, const char *check, const char *cas, Dtype dt, const void *gpu, const void *cpu,
                                 uint64_t n, Tol t, const double *extra)
{
    double ss_ref = 0.0, ss_err = 0.0, max_err = 0.0;
    uint64_t bad = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        double r = elem_load(cpu, dt, i);
        if (isfinite(r)) ss_ref += r * r;
    }
    double rms = n ? sqrt(ss_ref / (double)n) : 0.0;
    for (uint64_t i = 0; i < n; i++) {
        double r = elem_load(cpu, dt, i), x = elem_load(gpu, dt, i);
        int ok;
        if (isnan(r))
            ok = isnan(x); /* NaN is expected only where the reference has it */
        else if (isinf(r))
            ok = x == r;
        else if (!isfinite(x))
            ok = 0; /* unwritten (poison) or overflowed */
        else {
            double d = fabs(x - r);
            ss_err += d * d;
            if (d > max_err) max_err = d;
            ok = tol_element_ok(t, x, r, rms) || (extra && d <= tol_allowed(t, r, rms) + extra[i]);
        }
        if (!ok) {
            if (first == UINT64_MAX) first = i;
            bad++;
        }
    }
    double norm_err = ss_ref > 0 ? sqrt(ss_err / ss_ref) : sqrt(ss_err);
    int pass = bad == 0 && norm_err <= t.norm;
    char f1[128], f2[160];
    fprintf(g->csv, "%s,%s,%s,%s,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%llu,%s\n", g->prog, gc_field(check, f1, sizeof f1),
            gc_field(cas, f2, sizeof f2), dtype_name(dt), (unsigned long long)n, max_err, norm_err, t.rel, t.abs_rms,
            t.norm, (unsigned long long)bad, pass ? "pass" : "FAIL");
    if (pass) {
        g->passed++;
        printf("ok - %s %s (%s, %llu values, max err %.3g, norm err %.3g)\n", check, cas, dtype_name(dt),
               (unsigned long long)n, max_err, norm_err);
    } else {
        g->failed++;
        printf("FAIL - %s %s (%s): %llu of %llu values outside tolerance, norm err %.3g (allowed %.3g)\n", check, cas,
               dtype_name(dt), (unsigned long long)bad, (unsigned long long)n, norm_err, t.norm);
        if (first != UINT64_MAX)
            printf("  first at %llu: gpu %.9g, cpu %.9g; tolerance: %s\n", (unsigned long long)first,
                   (double)elem_load(gpu, dt, first), (double)elem_load(cpu, dt, first), t.why);
    }
    return pass;
}

static inline int gc_check(Gc *g, const char *check, const char *cas, Dtype dt, const void *gpu, const void *cpu,
                           uint64_t n, Tol t)
{
    return gc_check_extra(g, check, cas, dt, gpu, cpu, n, t, NULL);
}

/* A yes/no condition (e.g. an expected error) as a check row. */
static inline int gc_expect(Gc *g, const char *check, const char *cas, int cond, const char *what)
{
    char f1[128], f2[160];
    fprintf(g->csv, "%s,%s,%s,,,,,,,,%d,%s\n", g->prog, gc_field(check, f1, sizeof f1), gc_field(cas, f2, sizeof f2),
            !cond, cond ? "pass" : "FAIL");
    if (cond)
        g->passed++;
    else
        g->failed++;
    printf("%s - %s %s%s%s\n", cond ? "ok" : "FAIL", check, cas, cond ? "" : ": ", cond ? "" : what);
    return cond;
}

#endif
