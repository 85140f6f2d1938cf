/* exec/backend/backend.c — creating a backend by name (the CPU reference always; CUDA
 * when the build has it). What the backends share otherwise — every
 * operation's descriptor check — is exec/backend/backend_check.c. */
#include "exec/backend/backend.h"

#include <stdlib.h>
#include <string.h>

#ifdef FP8PLAN_HAVE_CUDA /* the Makefile defines it when it builds exec/cuda/ with nvcc */
#include "exec/backend/cuda_lib.h"
#endif

Status backend_new(const char *name, size_t impl_bytes, Backend **out, Err *e)
{
    Backend *bk = calloc(1, sizeof *bk);
    void *impl = calloc(1, impl_bytes ? impl_bytes : 1);
    *out = NULL;
    if (!bk || !impl) {
        free(bk);
        free(impl);
        return err_set(e, ST_NOMEM, "%s backend: out of host memory", name);
    }
    bk->name = name;
    bk->impl = impl;
    *out = bk;
    return ST_OK;
}

Status backend_create(const char *name, Backend **out, Err *e)
{
    *out = NULL;
    if (!name || !strcmp(name, "cpu")) return backend_cpu_create(out, e);
    if (!strcmp(name, "cuda")) {
#ifdef FP8PLAN_HAVE_CUDA
        return cuda_lib_backend_create(out, e);
#else
        return err_set(e, ST_UNAVAILABLE,
                       "--backend cuda: fp8plan was built without CUDA (no nvcc at build time); rebuild with "
                       "CUDA_HOME pointing at a CUDA toolkit, or use --backend cpu");
#endif
    }
    return err_set(e, ST_USAGE, "--backend: unknown backend '%s' (known: cpu, cuda)", name);
}
