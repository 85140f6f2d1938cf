/* tests/unit/test_par_pool.c — the one thread pool (exec/backend/par.h): every task runs once on a valid
 * worker, nested calls run inline, and chunks are cut by the problem's size, never by the thread count. */
#include <stdatomic.h>
#include <stdlib.h>

#include "exec/backend/par.h"
#include "test.h"

/* ---- the pool ---------------------------------------------------------------------- */

typedef struct {
    atomic_int *seen;
    atomic_int bad_worker, nested;
} PoolCheck;

static void count_task(void *ctx, uint64_t task, int worker)
{
    PoolCheck *c = ctx;
    atomic_fetch_add(&c->seen[task], 1);
    if (worker < 0 || worker >= par_threads()) atomic_fetch_add(&c->bad_worker, 1);
}

static void nested_task(void *ctx, uint64_t task, int worker)
{
    (void)worker;
    PoolCheck *c = ctx;
    atomic_int inner[5] = {0};
    PoolCheck ic = {.seen = inner};
    par_tasks(5, count_task, &ic); /* inline: the pool is busy with this job */
    int ok = 1;
    for (int i = 0; i < 5; i++) ok &= inner[i] == 1;
    if (ok) atomic_fetch_add(&c->nested, 1);
    atomic_fetch_add(&c->seen[task], 1);
}

static void test_pool_runs_each_task_once(void)
{
    static const uint64_t ns[] = {0, 1, 2, 3, 17, 1000, 10007};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int rep = 0; rep < 20; rep++) { /* many jobs back to back: workers join late or not at all */
            atomic_int *seen = calloc(ns[k] + 1, sizeof *seen);
            PoolCheck c = {.seen = seen};
            par_tasks(ns[k], count_task, &c);
            int wrong = 0;
            for (uint64_t i = 0; i < ns[k]; i++) wrong += seen[i] != 1;
            CHECKF(!wrong && !seen[ns[k]], "n=%llu: %d tasks not run exactly once", (unsigned long long)ns[k], wrong);
            CHECK(c.bad_worker == 0);
            free(seen);
        }
    atomic_int seen[40] = {0};
    PoolCheck c = {.seen = seen};
    par_tasks(40, nested_task, &c);
    CHECK_EQ_INT(c.nested, 40);
}

typedef struct {
    atomic_int *seen;
    uint64_t chunk;
    atomic_int misaligned;
} ChunkCheck;

static void chunk_fn(void *ctx, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    ChunkCheck *c = ctx;
    if (b % c->chunk || (e - b > c->chunk)) atomic_fetch_add(&c->misaligned, 1);
    for (uint64_t i = b; i < e; i++) atomic_fetch_add(&c->seen[i], 1);
}

static void test_chunks_are_cut_by_size(void)
{
    static const uint64_t ns[] = {0, 1, 100, 101, 1000, 99999};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        atomic_int *seen = calloc(ns[k] + 1, sizeof *seen);
        ChunkCheck c = {.seen = seen, .chunk = 100};
        par_chunks(ns[k], 100, chunk_fn, &c);
        int wrong = 0;
        for (uint64_t i = 0; i < ns[k]; i++) wrong += seen[i] != 1;
        CHECK_EQ_INT(wrong, 0);
        CHECK_EQ_INT(c.misaligned, 0);
        free(seen);
    }
}

/* A chunk (or grain) of 0 means 1 (par.h): 7 elements in 7 one-element calls, each element once; the pieces
 * of grain 0 are those of grain 1, min(threads, n). */
static void test_zero_chunk_is_one(void)
{
    atomic_int seen[8] = {0};
    ChunkCheck c = {.seen = seen, .chunk = 1};
    par_chunks(7, 0, chunk_fn, &c);
    int wrong = 0;
    for (int i = 0; i < 7; i++) wrong += seen[i] != 1;
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(seen[7], 0);
    CHECK_EQ_INT(c.misaligned, 0);
    const int t = par_threads();
    CHECK_EQ_INT(par_pieces(5, 0), t < 5 ? t : 5);
    CHECK_EQ_INT(par_pieces(1000, 0), t < 1000 ? t : 1000);
    CHECK_EQ_INT(par_pieces(0, 0), 1);
}

/* ---- runs of elements -------------------------------------------------------------- */

int main(void)
{
    RUN(test_pool_runs_each_task_once);
    RUN(test_chunks_are_cut_by_size);
    RUN(test_zero_chunk_is_one);
    return test_summary();
}
