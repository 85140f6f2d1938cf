/* exec/backend/par.h — the executor's one pool of host threads: the CPU backend's
 * GEMM tiles and kernels, and the weight initialization, all run on it. No
 * other code in fp8plan starts threads; the BLAS (OpenBLAS) is set to one
 * thread per call and driven tile by tile from here (the threads it starts
 * when it loads stay idle).
 *
 * The pool is persistent: par_threads() − 1 workers are started on first use
 * and wait between calls (a short spin, then a condition variable), so a
 * parallel call costs a wake-up, not a thread start. The calling thread works
 * too, as worker 0. One parallel call runs at a time; a call made while
 * another is running (from a task, or from a second thread) runs its tasks
 * inline on the calling thread, so nesting is safe but not parallel.
 *
 * Determinism. Work is cut into tasks whose boundaries depend only on the
 * problem (never on the thread count), and a result may depend only on the
 * task it is computed in, never on which worker ran it or when: then every
 * result is bit-identical for any FP8PLAN_THREADS. Per-worker scratch is keyed
 * by the `worker` argument. */
#ifndef FP8PLAN_EXEC_PAR_H
#define FP8PLAN_EXEC_PAR_H

#include <stdint.h>

enum { PAR_MAX_THREADS = 64 };

/* Threads of the pool (the caller included): $FP8PLAN_THREADS when it is a
 * number in [1, PAR_MAX_THREADS], else the CPUs this process may run on (at
 * most PAR_MAX_THREADS). Fixed at the first call. */
int par_threads(void);

/* The CPUs this process may run on (sched_getaffinity): flag[i] = 1 for CPU i (i < n), 0 for the others; their
 * count. Where the set cannot be read, the first online_cpus() (_SC_NPROCESSORS_ONLN) flagged. A rank's own set is
 * not the host's: Open MPI 4.1 binds each rank to a core of its own when the ranks do not outnumber the cores
 * (`mpirun -np 2 nproc` printed 1 and 1 on this project's 2-vCPU host, `mpirun --oversubscribe -np 4 nproc` 2 four
 * times), so the cores the ranks share are the union of their sets (exec/run/run_session.c). */
enum { PAR_CPU_FLAGS = 1024 }; /* glibc's CPU_SETSIZE */
int par_cpu_flags(float *flag, int n);

/* fn(ctx, task, worker) for every task in [0, ntasks), each exactly once,
 * handed out dynamically; worker is in [0, par_threads()) and no two tasks
 * run on the same worker at once. Returns when all have finished. */
typedef void (*ParTaskFn)(void *ctx, uint64_t task, int worker);
void par_tasks(uint64_t ntasks, ParTaskFn fn, void *ctx);

/* fn(ctx, begin, end, worker) over [0, n) in chunks of `chunk` elements (the
 * last one shorter): chunk boundaries are multiples of `chunk`, whatever the
 * thread count. n ≤ chunk runs inline as one call. A chunk of 0 is 1. */
typedef void (*ParRangeFn)(void *ctx, uint64_t begin, uint64_t end, int worker);
void par_chunks(uint64_t n, uint64_t chunk, ParRangeFn fn, void *ctx);

/* fn(ctx, piece, begin, end) for par_pieces(n, grain) contiguous pieces of
 * [0, n), piece numbers 0 .. par_pieces − 1, for per-piece partial results
 * (e.g. an amax per piece, max-combined afterwards). Pieces shorter than
 * `grain` elements are not made (a grain of 0 is 1). Unlike par_chunks, the cut depends on the
 * thread count: use it only where every element is a function of its index
 * alone or the reduction is order-free. */
typedef void (*ParFn)(void *ctx, int piece, uint64_t begin, uint64_t end);
void par_for(uint64_t n, uint64_t grain, ParFn fn, void *ctx);
int par_pieces(uint64_t n, uint64_t grain);

#endif
