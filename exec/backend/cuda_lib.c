/* exec/backend/cuda_lib.c — loading the CUDA backend's shared library (see cuda_lib.h). */
#include "exec/backend/cuda_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *lib;
static char lib_error[200];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* the programs' run path ($ORIGIN, $ORIGIN/..) finds it beside them */
    lib = dlopen(CUDA_LIB_NAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(lib_error, sizeof lib_error, "%s", why ? why : "unknown reason");
    }
}

/* The library's function `name`, or NULL with e filled. */
static void *symbol(const char *name, const char *what, Err *e)
{
    pthread_once(&once, load);
    if (!lib) {
        err_set(e, ST_UNAVAILABLE, "%s: cannot load the CUDA backend (%s)", what, lib_error);
        return NULL;
    }
    void *f = dlsym(lib, name);
    if (!f) err_set(e, ST_UNAVAILABLE, "%s: %s has no %s", what, CUDA_LIB_NAME, name);
    return f;
}

Status cuda_lib_backend_create(Backend **out, Err *e)
{
    *out = NULL;
    Status (*create)(Backend **, Err *);
    void *f = symbol("backend_cuda_create", "--backend cuda", e);
    if (!f) return ST_UNAVAILABLE;
    memcpy(&create, &f, sizeof create); /* POSIX: a data pointer from dlsym holds a function */
    return create(out, e);
}

Status cuda_lib_comm_create(Backend *bk, int rank, int size, Comm **out, Err *e)
{
    *out = NULL;
    Status (*create)(Backend *, int, int, Comm **, Err *);
    void *f = symbol("comm_nccl_create", "nccl", e);
    if (!f) return ST_UNAVAILABLE;
    memcpy(&create, &f, sizeof create);
    return create(bk, rank, size, out, e);
}

Status cuda_lib_nccl_unique_id(void *id, size_t bytes, Err *e)
{
    Status (*make)(void *, size_t, Err *);
    void *f = symbol("comm_nccl_unique_id", "nccl", e);
    if (!f) return ST_UNAVAILABLE;
    memcpy(&make, &f, sizeof make);
    return make(id, bytes, e);
}

Status cuda_lib_comm_create_id(Backend *bk, int rank, int size, const void *id, size_t bytes, Comm *host, Comm **out,
                               Err *e)
{
    *out = NULL;
    Status (*create)(Backend *, int, int, const void *, size_t, Comm *, Comm **, Err *);
    void *f = symbol("comm_nccl_create_id", "nccl", e);
    if (!f) return ST_UNAVAILABLE;
    memcpy(&create, &f, sizeof create);
    return create(bk, rank, size, id, bytes, host, out, e);
}
