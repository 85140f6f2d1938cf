/* exec/cpu/cpu_backend.c — the CPU reference backend: host memory, and the
 * table of operations implemented in cpu_gemm.c, cpu_nn.c, cpu_attn.c,
 * cpu_quant.c, cpu_optim.c, cpu_shard.c, cpu_moe.c and cpu_gemm_group.c, each
 * behind its shared check. Work runs synchronously (on the thread pool of
 * exec/backend/par.h), so sync() has nothing to wait for. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"
#include "util/num.h"

enum { CPU_ALIGN = 256 };

float *cpu_scratch(Backend *bk, int slot, uint64_t n, Err *e)
{
    CpuImpl *impl = bk->impl;
    if (n <= impl->cap[slot]) return impl->buf[slot];
    if (n > SIZE_MAX / sizeof(float)) {
        err_set(e, ST_NOMEM, "cpu backend: scratch of %llu floats is too large", (unsigned long long)n);
        return NULL;
    }
    float *p = realloc(impl->buf[slot], (size_t)n * sizeof(float));
    if (!p) {
        err_set(e, ST_NOMEM, "cpu backend: out of memory for %llu bytes of scratch", (unsigned long long)n * 4);
        return NULL;
    }
    impl->buf[slot] = p;
    impl->cap[slot] = n;
    return p;
}

float *cpu_scratch_workers(Backend *bk, int slot, uint64_t floats, uint64_t *stride, Err *e)
{
    enum { ALIGN = 16 }; /* floats: 64 bytes */
    uint64_t per = (floats + ALIGN - 1) / ALIGN * ALIGN, threads = (uint64_t)par_threads();
    if (per > (UINT64_MAX - ALIGN) / threads) {
        err_set(e, ST_NOMEM, "cpu backend: per-thread scratch of %llu floats is too large", (unsigned long long)floats);
        return NULL;
    }
    float *p = cpu_scratch(bk, slot, per * threads + ALIGN, e);
    if (!p) return NULL;
    *stride = per;
    return p + (ALIGN - (uintptr_t)p / sizeof(float) % ALIGN) % ALIGN;
}

static Status cpu_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    (void)bk;
    *out = NULL;
    /* Refuse what cannot fit in RAM up front: with overcommit a huge malloc
     * succeeds and the first touch of its pages gets the process killed. */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && bytes > (uint64_t)pages * (uint64_t)psize) {
        char need[32], have[32];
        return err_set(e, ST_NOMEM,
                       "cpu backend: the arena needs %s bytes but this machine has %s bytes of memory; reduce "
                       "--layers, --hidden, --seq, --mbs or --vocab",
                       num_fmt_grouped(bytes, need, sizeof need),
                       num_fmt_grouped((uint64_t)pages * (uint64_t)psize, have, sizeof have));
    }
    uint64_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (!rounded) rounded = CPU_ALIGN;
    if (rounded < bytes || rounded > SIZE_MAX)
        return err_set(e, ST_NOMEM, "cpu backend: %llu bytes cannot be allocated", (unsigned long long)bytes);
    void *p = aligned_alloc(CPU_ALIGN, (size_t)rounded);
    if (!p) return err_set(e, ST_NOMEM, "cpu backend: out of memory allocating %llu bytes", (unsigned long long)bytes);
    *out = p;
    return ST_OK;
}

static void cpu_free(Backend *bk, void *p)
{
    (void)bk;
    free(p);
}

static Status cpu_memset0(Backend *bk, void *p, uint64_t bytes, Err *e)
{
    (void)bk;
    if (!bytes) return ST_OK;
    if (!p) return err_set(e, ST_USAGE, "memset0: no pointer");
    memset(p, 0, (size_t)bytes);
    return ST_OK;
}

static Status cpu_copy_to_device(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    (void)bk;
    if (!bytes) return ST_OK;
    if (!dst || !src) return err_set(e, ST_USAGE, "copy: no pointer");
    memmove(dst, src, (size_t)bytes);
    return ST_OK;
}

/* Host memory both ways. */
static Status cpu_copy_to_host(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return cpu_copy_to_device(bk, dst, src, bytes, e);
}

static Status cpu_sync(Backend *bk, Err *e)
{
    (void)bk, (void)e;
    return ST_OK;
}

static void cpu_destroy(Backend *bk)
{
    if (!bk) return;
    CpuImpl *impl = bk->impl;
    if (impl)
        for (int i = 0; i < CPU_SCRATCH_SLOTS; i++) free(impl->buf[i]);
    free(impl);
    free(bk);
}

BACKEND_TABLE(cpu)

Status backend_cpu_create(Backend **out, Err *e)
{
    *out = NULL;
    if (elem_init()) return err_set(e, ST_NOMEM, "out of memory for the decoding tables");
    cpu_blas_init();
    Backend *bk = NULL;
    Status st = backend_new("cpu", sizeof(CpuImpl), &bk, e);
    if (st) return st;
    cpu_fill_ops(bk);
    *out = bk;
    return ST_OK;
}
