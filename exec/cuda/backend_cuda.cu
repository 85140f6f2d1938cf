/* exec/cuda/backend_cuda.cu — creating the CUDA backend, its memory and
 * synchronization operations, the measurement hooks, and the function table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_nccl_boot.h"
#include "exec/comm/comm_nccl_rules.h"
#include "exec/cuda/cuda_impl.h"

/* ---- error reporting ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

Status cuda_fail(Err *e, const char *file, int line, const char *call, cudaError_t err)
{
    Status st = ST_SOFTWARE;
    if (err == cudaErrorMemoryAllocation) st = ST_NOMEM;
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInitializationError ||
        err == cudaErrorDevicesUnavailable || err == cudaErrorSystemDriverMismatch ||
        err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorNoKernelImageForDevice)
        st = ST_UNAVAILABLE;
    return err_set(e, st, "%s:%d: %s failed: %s (%s)", base_name(file), line, call, cudaGetErrorName(err),
                   cudaGetErrorString(err));
}

Status cublaslt_fail(Err *e, const char *file, int line, const char *call, cublasStatus_t s)
{
    Status st = s == CUBLAS_STATUS_ALLOC_FAILED ? ST_NOMEM : ST_SOFTWARE;
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH) st = ST_UNAVAILABLE;
    return err_set(e, st, "%s:%d: %s failed: %s (%s)", base_name(file), line, call, cublasLtGetStatusName(s),
                   cublasLtGetStatusString(s));
}

/* ---- probing and creation ---------------------------------------------------------- */

Status cuda_device_probe(int *count, Err *e)
{
    *count = 0;
    cudaError_t err = cudaGetDeviceCount(count);
    if (err != cudaSuccess) {
        *count = 0;
        (void)cudaGetLastError(); /* reset the runtime's last error */
        return err_set(e, ST_UNAVAILABLE, "--backend cuda: no usable GPU: %s (%s)%s", cudaGetErrorName(err),
                       cudaGetErrorString(err),
                       err == cudaErrorInsufficientDriver ? "; no NVIDIA driver is loaded, or it is older than this "
                                                            "build's CUDA runtime"
                                                          : "");
    }
    if (*count < 1) return err_set(e, ST_UNAVAILABLE, "--backend cuda: no GPU is present (the CUDA driver reports 0)");
    return ST_OK;
}

void backend_cuda_versions(CudaVersions *out)
{
    memset(out, 0, sizeof *out);
    out->runtime_built = CUDART_VERSION;
    if (cudaRuntimeGetVersion(&out->runtime_loaded) != cudaSuccess) out->runtime_loaded = 0;
    if (cudaDriverGetVersion(&out->driver) != cudaSuccess) out->driver = 0;
    out->cublaslt = cublasLtGetVersion();
    comm_nccl_versions(&out->nccl_built, &out->nccl_loaded);
    (void)cudaGetLastError();
}

static void impl_release(CudaImpl *im)
{
    if (!im) return;
    if (im->device >= 0) (void)cudaSetDevice(im->device);
    if (im->stream) (void)cudaStreamSynchronize(im->stream);
    cuda_lt_cache_free(im);
    for (int i = 0; i < BACKEND_MARKS; i++)
        if (im->marks[i]) (void)cudaEventDestroy(im->marks[i]);
    for (int i = 0; i < 2 * EV_PAIRS; i++)
        if (im->ev[i]) (void)cudaEventDestroy(im->ev[i]);
    if (im->scratch) (void)cudaFree(im->scratch);
    if (im->scratch2) (void)cudaFree(im->scratch2);
    if (im->scratch3) (void)cudaFree(im->scratch3);
    if (im->small) (void)cudaFree(im->small);
    if (im->ws) (void)cudaFree(im->ws);
    if (im->lt) (void)cublasLtDestroy(im->lt);
    if (im->stream) (void)cudaStreamDestroy(im->stream);
    free(im);
}

static void cuda_destroy(Backend *bk)
{
    if (!bk) return;
    impl_release(cuda_impl(bk));
    free(bk);
}

/* ---- memory -------------------------------------------------------------------------- */

static Status cuda_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    Status st = ST_OK;
    *out = NULL;
    (void)bk;
    CU_TRY(cudaMalloc(out, bytes ? (size_t)bytes : 1), e); /* cudaMalloc aligns to 256 bytes */
done:
    if (st) {
        *out = NULL;
        if (st == ST_NOMEM) err_prefix(e, "allocating %llu bytes on the GPU", (unsigned long long)bytes);
    }
    return st;
}

static void cuda_free(Backend *bk, void *p)
{
    (void)bk;
    if (p) (void)cudaFree(p);
}

static Status cuda_memset0(Backend *bk, void *p, uint64_t bytes, Err *e)
{
    Status st = ST_OK;
    if (bytes) CU_TRY(cudaMemsetAsync(p, 0, (size_t)bytes, cuda_impl(bk)->stream), e);
done:
    return st;
}

/* A copy in the stream, waited for: to the device it returns once the
 * (pageable, staged) source may be reused; to the host once the data is there. */
static Status copy(Backend *bk, void *dst, const void *src, uint64_t bytes, cudaMemcpyKind kind, Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    if (bytes) CU_TRY(cudaMemcpyAsync(dst, src, (size_t)bytes, kind, im->stream), e);
    CU_TRY(cudaStreamSynchronize(im->stream), e);
done:
    return st;
}

static Status cuda_copy_to_device(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return copy(bk, dst, src, bytes, cudaMemcpyHostToDevice, e);
}

static Status cuda_copy_to_host(Backend *bk, void *dst, const void *src, uint64_t bytes, Err *e)
{
    return copy(bk, dst, src, bytes, cudaMemcpyDeviceToHost, e);
}

/* Waits for the stream, then reports the first input error a kernel recorded. */
static Status cuda_sync(Backend *bk, Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    DevSmall rec;
    CU_TRY(cudaMemcpyAsync(&rec, im->small, sizeof rec, cudaMemcpyDeviceToHost, im->stream), e);
    CU_TRY(cudaStreamSynchronize(im->stream), e);
    if (rec.code != DEV_ERR_NONE) {
        CU_TRY(cudaMemsetAsync(im->small, 0, sizeof rec, im->stream), e);
        if (rec.code == DEV_ERR_EXPERT || rec.code == DEV_ERR_EXPERT_TWICE)
            st = err_set(e, ST_USAGE, "mixture of experts: token %lld slot %lld: expert id %lld %s [0, %lld)",
                         rec.pos / rec.limit2, rec.pos % rec.limit2, rec.value,
                         rec.code == DEV_ERR_EXPERT ? "is outside" : "is picked twice; the ids must be distinct in",
                         rec.limit);
        else if (rec.code == DEV_ERR_ROW)
            st = err_set(e, ST_USAGE, "mixture of experts: token %lld slot %lld maps to row %lld, outside [0, %lld)",
                         rec.pos / rec.limit2, rec.pos % rec.limit2, rec.value, rec.limit);
        else
            st = err_set(e, ST_USAGE, "%s: %s %lld at position %lld is outside the vocabulary [0, %lld)",
                         rec.code == DEV_ERR_TOKEN ? "embedding" : "cross-entropy",
                         rec.code == DEV_ERR_TOKEN ? "token" : "target", rec.value, rec.pos, rec.limit);
    }
done:
    return st;
}

/* Grow one private buffer to `bytes` (256-byte aligned). */
static Status grow(CudaImpl *im, void **buf, size_t *have, size_t bytes, void **out, Err *e)
{
    Status st = ST_OK;
    if (bytes <= *have) {
        *out = *buf;
        return ST_OK;
    }
    *out = NULL;
    /* kernels issued earlier may still read the old buffer */
    CU_TRY(cudaStreamSynchronize(im->stream), e);
    if (*buf) CU_TRY(cudaFree(*buf), e);
    *buf = NULL;
    *have = 0;
    CU_TRY(cudaMalloc(buf, bytes), e);
    *have = bytes;
    *out = *buf;
done:
    return st;
}

Status cuda_scratch(CudaImpl *im, size_t bytes, void **out, Err *e)
{
    return grow(im, &im->scratch, &im->scratch_bytes, bytes, out, e);
}

Status cuda_scratch2(CudaImpl *im, size_t bytes, void **out, Err *e)
{
    return grow(im, &im->scratch2, &im->scratch2_bytes, bytes, out, e);
}

Status cuda_scratch3(CudaImpl *im, size_t bytes, void **out, Err *e)
{
    return grow(im, &im->scratch3, &im->scratch3_bytes, bytes, out, e);
}

/* ---- measurement hooks ------------------------------------------------------------------ */

static Status cuda_mem_info(Backend *bk, uint64_t *free_bytes, uint64_t *total_bytes, Err *e)
{
    Status st = ST_OK;
    size_t f = 0, t = 0;
    CU_TRY(cudaSetDevice(cuda_impl(bk)->device), e);
    CU_TRY(cudaMemGetInfo(&f, &t), e);
    *free_bytes = f;
    *total_bytes = t;
done:
    return st;
}

static Status cuda_device_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)e;
    CudaImpl *im = cuda_impl(bk);
    *out = im->info;
    out->workspace_bytes = im->ws ? CUDA_LT_WORKSPACE_BYTES : 0; /* private only: an arena slice is counted there */
    out->scratch_bytes = im->scratch_bytes + im->scratch2_bytes + im->scratch3_bytes;
    return ST_OK;
}

static Status cuda_mark(Backend *bk, uint32_t id, Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    if (id >= BACKEND_MARKS) return err_set(e, ST_USAGE, "mark: id %u is not below %d", id, (int)BACKEND_MARKS);
    CU_TRY(cudaEventRecord(im->marks[id], im->stream), e);
    im->marked |= 1ull << id;
done:
    return st;
}

static Status cuda_elapsed(Backend *bk, uint32_t from, uint32_t to, double *seconds, Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    float ms = 0.0f;
    *seconds = 0.0;
    if (from >= BACKEND_MARKS || to >= BACKEND_MARKS || !(im->marked >> from & 1) || !(im->marked >> to & 1))
        return err_set(e, ST_USAGE, "elapsed: marks %u and %u must both have been recorded", from, to);
    CU_TRY(cudaEventSynchronize(im->marks[to]), e);
    CU_TRY(cudaEventElapsedTime(&ms, im->marks[from], im->marks[to]), e);
    *seconds = 1e-3 * (double)ms;
done:
    return st;
}

/* Sum the recorded operation pairs into op_s and reuse the events. */
static Status ops_flush(CudaImpl *im, Err *e)
{
    Status st = ST_OK;
    if (!im->ev_pairs) return ST_OK;
    CU_TRY(cudaEventSynchronize(im->ev[2 * im->ev_pairs - 1]), e);
    for (uint32_t i = 0; i < im->ev_pairs; i++) {
        float ms = 0.0f;
        CU_TRY(cudaEventElapsedTime(&ms, im->ev[2 * i], im->ev[2 * i + 1]), e);
        im->op_s[im->ev_cat[i]] += 1e-3 * (double)ms;
    }
    im->ev_pairs = 0;
done:
    return st;
}

Status cuda_op_begin(CudaImpl *im, BackendOpCat cat, Err *e)
{
    Status st = ST_OK;
    if (!im->timing) return ST_OK;
    if (im->ev_pairs == EV_PAIRS) ST_TRY(ops_flush(im, e));
    im->ev_cat[im->ev_pairs] = (unsigned char)cat;
    CU_TRY(cudaEventRecord(im->ev[2 * im->ev_pairs], im->stream), e);
    im->ev_open = 1;
done:
    return st;
}

Status cuda_op_end(CudaImpl *im, Err *e)
{
    Status st = ST_OK;
    if (!im->timing || !im->ev_open) return ST_OK;
    CU_TRY(cudaEventRecord(im->ev[2 * im->ev_pairs + 1], im->stream), e);
    im->ev_pairs++;
    im->ev_open = 0;
done:
    return st;
}

static Status cuda_op_times(Backend *bk, int enable, double seconds[BK_OPCAT_COUNT], Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    ST_TRY(ops_flush(im, e));
    for (int i = 0; i < BK_OPCAT_COUNT; i++) {
        if (seconds) seconds[i] = im->op_s[i];
        im->op_s[i] = 0.0;
    }
    im->timing = enable != 0;
done:
    return st;
}

/* ---- the table ------------------------------------------------------------------------------ */

static Status impl_init(CudaImpl *im, Err *e)
{
    Status st = ST_OK;
    cudaDeviceProp p;
    int clock_khz = 0;
    CU_TRY(cudaGetDevice(&im->device), e);
    CU_TRY(cudaGetDeviceProperties(&p, im->device), e);
    snprintf(im->info.name, sizeof im->info.name, "%s", p.name);
    im->info.cc_major = p.major;
    im->info.cc_minor = p.minor;
    im->info.sm_count = p.multiProcessorCount;
    im->info.total_bytes = p.totalGlobalMem;
    CU_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, im->device), e);
    im->info.sm_clock_ghz = 1e-6 * clock_khz;
    CU_TRY(cudaRuntimeGetVersion(&im->info.runtime_version), e);
    CU_TRY(cudaDriverGetVersion(&im->info.driver_version), e);
    im->info.gemm_library_version = cublasLtGetVersion();
    if (p.major < 9) { /* the build carries sm_90a code and compute_90 PTX, nothing older */
        st = err_set(e, ST_UNAVAILABLE,
                     "--backend cuda: %s has compute capability %d.%d; this build targets 9.0 and newer (Hopper: "
                     "sm_90a code, compute_90 PTX); set CUDA_ARCH for another GPU",
                     p.name, p.major, p.minor);
        goto done;
    }
    CU_TRY(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking), e);
    LT_TRY(cublasLtCreate(&im->lt), e);
    CU_TRY(cudaMalloc((void **)&im->small, sizeof(DevSmall)), e);
    CU_TRY(cudaMemsetAsync(im->small, 0, sizeof(DevSmall), im->stream), e); /* ordered before every kernel */
    for (int i = 0; i < BACKEND_MARKS; i++) CU_TRY(cudaEventCreate(&im->marks[i]), e);
    for (int i = 0; i < 2 * EV_PAIRS; i++) CU_TRY(cudaEventCreate(&im->ev[i]), e);
done:
    return st;
}

BACKEND_TABLE(cuda)

Status backend_cuda_create(Backend **out, Err *e)
{
    *out = NULL;
    int count = 0;
    Status st = cuda_device_probe(&count, e);
    if (st) return st;
    /* under a launcher each rank drives the GPU of its local rank (modulo the GPUs it sees) */
    int local = 0;
    if ((st = comm_boot_local_rank(&local, e))) return st;
    const int dev = comm_device_of_rank(local, count);
    cudaError_t set = cudaSetDevice(dev);
    if (set != cudaSuccess) return cuda_fail(e, __FILE__, __LINE__, "cudaSetDevice(local rank mod GPUs)", set);
    Backend *bk = NULL;
    if ((st = backend_new("cuda", sizeof(CudaImpl), &bk, e))) return st;
    CudaImpl *im = cuda_impl(bk);
    im->device = -1;
    st = impl_init(im, e);
    if (st) {
        impl_release(im);
        free(bk);
        return st;
    }
    im->bk = bk;
    bk->gemm_workspace_bytes = CUDA_LT_WORKSPACE_BYTES;
    bk->gemm_workspace = NULL;
    cuda_fill_ops(bk);
    bk->mem_info = cuda_mem_info;
    bk->device_info = cuda_device_info;
    bk->mark = cuda_mark;
    bk->elapsed = cuda_elapsed;
    bk->op_times = cuda_op_times;
    *out = bk;
    return ST_OK;
}
