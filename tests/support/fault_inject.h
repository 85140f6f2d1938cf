/* tests/support/fault_inject.h — fault injection for the sweeps of
 * test_exec_faults.c and test_cli_faults.c: a counter that makes the k-th
 * call of one kind fail, the C library's allocators wrapped (malloc, calloc,
 * realloc, aligned_alloc, strdup, free: the binary is linked with
 * -Wl,--wrap=... for each, see the Makefile) with every block they hand out
 * tracked by address, and sweep(), which runs an operation once per fallible
 * call with that call failing.
 *
 * Include it from exactly one file of a binary linked with those flags: it
 * defines the __wrap_ functions. */
#ifndef FP8PLAN_TESTS_FAULT_INJECT_H
#define FP8PLAN_TESTS_FAULT_INJECT_H

#include <dirent.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "test.h"
#include "util/status.h"

/* ---- the fault counter ------------------------------------------------------------ */

/* One class of call is swept at a time. Calls of the armed class are numbered
 * from 0; call `at` fails; `n` ends as the number made. at < 0: count only. */
enum { K_NONE, K_BACKEND, K_COMM, K_MALLOC };
static struct {
    int kind;
    long at, n;
    char what[64]; /* the call that failed */
} F;
static pthread_mutex_t F_lock = PTHREAD_MUTEX_INITIALIZER;
static long fault_held; /* resources a test's own wrappers hand out and take back (backend allocations) */

static int fault_hit(int kind, const char *what)
{
    if (__atomic_load_n(&F.kind, __ATOMIC_ACQUIRE) != kind) return 0;
    pthread_mutex_lock(&F_lock);
    long num = F.n++, at = F.at;
    int hit = num == at;
    if (hit) snprintf(F.what, sizeof F.what, "%s", what);
    pthread_mutex_unlock(&F_lock);
    /* FAULT_TRACE=k: the stack of call k where it fails and in the counting run, appended to
     * /tmp/fault-trace.txt as binary(+offset) (addr2line -f -e BINARY OFFSET gives the line); a
     * diagnosis aid, off in the suite */
    const char *t = getenv("FAULT_TRACE");
    if (t && atol(t) == num && (hit || at < 0)) {
        void *frames[24];
        int n = backtrace(frames, 24);
        FILE *f = fopen("/tmp/fault-trace.txt", "a");
        if (f) {
            fflush(f);
            backtrace_symbols_fd(frames + 1, n - 1, fileno(f));
            fclose(f);
        }
    }
    return hit;
}

static const char INJECTED[] = "injected fault";
static inline Status fault_err(Err *e, const char *what) { return err_set(e, ST_IO, "%s in %s", INJECTED, what); }

/* ---- the C library's allocators (linked with --wrap) ------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);

/* The blocks allocated while tracking is on, by address (open addressing with
 * tombstones); what is still here at the end of a sweep step leaked. */
enum { SLOTS = 1 << 16 };
static void *const TOMB = (void *)1;
static void *live[SLOTS];
static long live_seq[SLOTS]; /* each block's number among the calls counted (F.n when it was made) */
static long nlive;
static int tracking, overflow;

static size_t slot_of(const void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 48; }

static void track_add(void *p)
{
    if (!p || !__atomic_load_n(&tracking, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&F_lock);
    size_t i = slot_of(p), k = 0;
    while (live[i] && live[i] != TOMB && k++ < SLOTS) i = (i + 1) % SLOTS;
    if (k <= SLOTS)
        live[i] = p, live_seq[i] = F.n - 1, nlive++; /* a full table tracks no more (the leak check fails) */
    else
        overflow = 1;
    pthread_mutex_unlock(&F_lock);
}

static void track_drop(void *p)
{
    if (!p) return;
    pthread_mutex_lock(&F_lock);
    for (size_t i = slot_of(p), k = 0; live[i] && k < SLOTS; i = (i + 1) % SLOTS, k++)
        if (live[i] == p) {
            live[i] = TOMB;
            nlive--;
            break;
        }
    pthread_mutex_unlock(&F_lock);
}

/* Heap bytes handed out, by glibc's own count: it sees what the C library allocates inside (an
 * open_memstream buffer, a FILE), which the wrappers do not. Under ASan (its own allocator) it
 * stays 0. glibc counts the small blocks its per-thread cache keeps after a free as in use, so a
 * run may end a few hundred bytes up; HEAP_SLACK allows for that, and is well under what a lost
 * checkpoint image (150 KB and more for these models: 14 bytes of state per parameter) or step
 * log would hold. */
enum { HEAP_SLACK = 64 << 10 };
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Forget every block (between sweep steps: the table fills with tombstones). */
static void track_reset(void)
{
    pthread_mutex_lock(&F_lock);
    memset(live, 0, sizeof live);
    nlive = overflow = 0;
    pthread_mutex_unlock(&F_lock);
}

void *__wrap_malloc(size_t n)
{
    if (fault_hit(K_MALLOC, "malloc")) return NULL;
    void *p = __real_malloc(n);
    track_add(p);
    return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
    if (fault_hit(K_MALLOC, "calloc")) return NULL;
    void *p = __real_calloc(k, n);
    track_add(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fault_hit(K_MALLOC, "realloc")) return NULL;
    void *q = __real_realloc(p, n);
    if (q) {
        track_drop(p);
        track_add(q);
    }
    return q;
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    if (fault_hit(K_MALLOC, "aligned_alloc")) return NULL;
    void *p = __real_aligned_alloc(a, n);
    track_add(p);
    return p;
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void __wrap_free(void *p)
{
    track_drop(p);
    __real_free(p);
}

/* Files left in dir (a failed save must leave none). */
static int dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *de; (de = readdir(d));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

static const char *KIND_NAME[] = {"", "backend", "communicator", "allocator"};

/* An operation the sweeps run: everything it allocates is freed by the time it returns. */
typedef Status (*OpFn)(const void *arg, Err *e);

/* Run op once counting the calls of `kind`, then once per call with that call
 * failing; every run must fail with the injected error (the allocator's:
 * ST_NOMEM, named by the message) and leave nothing allocated and no file in
 * dir (when set). `what` names the operation in messages. */
static void sweep(int kind, const char *what, OpFn op, const void *arg, const char *dir)
{
    Err e;
    F.kind = kind, F.at = -1, F.n = 0;
    track_reset();
    fault_held = 0;
    size_t heap = heap_in_use();
    __atomic_store_n(&tracking, 1, __ATOMIC_RELEASE);
    Status st = op(arg, &e);
    __atomic_store_n(&tracking, 0, __ATOMIC_RELEASE);
    long n = F.n;
    CHECKF(heap_in_use() <= heap + HEAP_SLACK, "%s without a fault: %zu heap bytes in use before, %zu after", what,
           heap, heap_in_use());
    F.kind = K_NONE;
    CHECKF(st == ST_OK, "%s without a fault: %s", what, e.msg);
    long first = -1; /* the first block left: FAULT_TRACE with its number shows where it was made */
    for (size_t i = 0; i < SLOTS; i++)
        if (live[i] && live[i] != TOMB && (first < 0 || live_seq[i] < first)) first = live_seq[i];
    CHECKF(nlive == 0 && fault_held == 0 && !overflow,
           "%s without a fault: %ld blocks (the first made by call %ld), %ld handles left", what, nlive, first,
           fault_held);
    CHECKF(n > 0, "%s: no %s call to fail", what, KIND_NAME[kind]);
    if (st || n <= 0) return;
    Status want = kind == K_MALLOC ? ST_NOMEM : ST_IO;
    long bad = 0, step = 1, tried = 0;
#ifdef __SANITIZE_ADDRESS__
    /* ASan maps every large block afresh (the arena: 34 MB a run): a long sweep takes every 4th call and
     * the last under it; the plain build takes every call */
    if (n > 500) step = 4;
#endif
    for (long k = 0; k < n; k = k + step < n || k == n - 1 ? k + step : n - 1) {
        tried++;
        F.kind = kind, F.at = k, F.n = 0, F.what[0] = '\0';
        track_reset();
        fault_held = 0;
        memset(&e, 0, sizeof e);
        heap = heap_in_use();
        __atomic_store_n(&tracking, 1, __ATOMIC_RELEASE);
        st = op(arg, &e);
        __atomic_store_n(&tracking, 0, __ATOMIC_RELEASE);
        F.kind = K_NONE;
        int named =
            kind == K_MALLOC ? strstr(e.msg, "memory") != NULL : strstr(e.msg, INJECTED) && strstr(e.msg, F.what);
        int files = dir ? dir_files(dir) : 0;
        ssize_t held = (ssize_t)(heap_in_use() - heap);
        if (st == want && named && nlive == 0 && fault_held == 0 && !overflow && files == 0 && held <= HEAP_SLACK)
            continue;
        if (F.n <= k) { /* no call k to fail: the operation's calls vary from run to run (they must not) */
            if (bad++ < 4)
                CHECKF(
                    0,
                    "%s, %s call %ld of %ld never made: this run made %ld (status %d); the sweep needs the same calls "
                    "in every run",
                    what, KIND_NAME[kind], k, n, F.n, st);
            continue;
        }
        if (bad++ < 4)
            CHECKF(0,
                   "%s, %s call %ld of %ld (%s) failed: status %d (want %d) '%s'; %ld blocks and %ld handles "
                   "left, %d files, %zd heap bytes more in use",
                   what, KIND_NAME[kind], k, n, F.what, st, want, e.msg, nlive, fault_held, files, held);
    }
    CHECKF(bad == 0, "%s: %ld of %ld injected %s faults not handled cleanly", what, bad, n, KIND_NAME[kind]);
    if (!bad)
        printf("  %s: %ld %s calls, %s failing cleanly\n", what, n, KIND_NAME[kind], tried == n ? "each" : "every 4th");
}
#endif
