/* tests/unit/test_oracle_exec_seed.c — executor rules found unguarded by `make mutate` on fresh seeds, each
 * against a value or a verdict worked out by hand: the thread pool in a forked child (exec/par.c). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/par.h"
#include "test.h"

/* ---- the pool across fork() ------------------------------------------------------------------------------- */

enum { FORK_TASKS = 32, FORK_WAIT_MS = 10000 };

typedef struct {
    atomic_ullong sum;    /* the sum of task² over the tasks run */
    atomic_int ran;       /* tasks run */
    atomic_int by_worker; /* tasks run by a pool thread (worker != 0) */
    atomic_int waited;    /* the caller waited once for a pool thread */
} ForkJob;

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Task t adds t²; the caller (worker 0), in its first task, waits up to FORK_WAIT_MS for a pool thread to
 * have run one, so a pool that started its threads shows them, and one that has none shows that too. */
static void fork_task(void *ctx, uint64_t task, int worker)
{
    ForkJob *j = ctx;
    if (worker != 0) atomic_fetch_add(&j->by_worker, 1);
    if (worker == 0 && !atomic_exchange(&j->waited, 1))
        for (int ms = 0; ms < FORK_WAIT_MS && !atomic_load(&j->by_worker); ms++) sleep_ms(1);
    atomic_fetch_add(&j->sum, (unsigned long long)(task * task));
    atomic_fetch_add(&j->ran, 1);
}

/* One job of FORK_TASKS tasks: 0 when every task ran once (sum of t² for t < 32 = 31·32·63/6 = 10,416) and a
 * pool thread ran at least one; 1 for a wrong count or sum, 2 for no pool thread. */
static int fork_job(void)
{
    ForkJob j = {0};
    par_tasks(FORK_TASKS, fork_task, &j);
    if (atomic_load(&j.ran) != FORK_TASKS || atomic_load(&j.sum) != 10416ull) return 1;
    return atomic_load(&j.by_worker) ? 0 : 2;
}

/* A forked child has only the thread that called fork(): the pool must start afresh there (its own threads), not
 * believe it still has the parent's. FP8PLAN_THREADS = 3 (main), so the pool has 2 threads besides the caller.
 * The parent starts its pool, forks; the child runs a job and exits with fork_job's code (0: every task once,
 * the sum 10,416, and a thread of the child's pool ran a task); the parent's pool still runs jobs after. */
static void test_pool_after_fork(void)
{
    CHECK_EQ_INT(par_threads(), 3);
    CHECK_EQ_INT(fork_job(), 0); /* the parent's pool is up */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) return;
    if (pid == 0) _exit(fork_job());
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "child: %s %d (1: a task lost or run twice, 2: no pool thread ran a task)",
           WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK_EQ_INT(fork_job(), 0); /* and the parent's still is */
}

int main(void)
{
    setenv("FP8PLAN_THREADS", "3", 1); /* before the pool's first use: test_pool_after_fork counts 3 */
    RUN(test_pool_after_fork);
    return test_summary();
}
