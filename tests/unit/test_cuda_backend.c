/* tests/unit/test_cuda_backend.c — asking for the CUDA backend.
 *
 * Without a GPU (CI, this build machine) the answer must be a clean
 * ST_UNAVAILABLE (exit 69 at the command line) whose message says why, from
 * both entry points, with nothing left allocated. With a GPU (the device
 * machine) the backend must come up complete: every operation of the table
 * and every measurement hook set, its GEMM workspace request, a device of
 * compute capability 9.0+, a memory round trip, and descriptor errors reported
 * before anything is launched. The kernels themselves are checked against the
 * CPU reference by tests/gpu (make gpu-check). */
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "test.h"
#ifdef FP8PLAN_HAVE_CUDA
#include "exec/cuda/backend_cuda.h"
#endif

static int have_gpu(void)
{
#ifdef FP8PLAN_HAVE_CUDA
    int n = 0;
    Err e;
    return cuda_device_probe(&n, &e) == ST_OK && n > 0;
#else
    return 0;
#endif
}

static void test_no_gpu_is_unavailable(void)
{
    Backend *bk = (Backend *)1;
    Err e;
    err_clear(&e);
    Status st = backend_create("cuda", &bk, &e);
    CHECK_EQ_INT(st, ST_UNAVAILABLE);
    CHECK_EQ_INT(status_exit_code(st), 69);
    CHECK(bk == NULL);
#ifdef FP8PLAN_HAVE_CUDA
    CHECK_CONTAINS(e.msg, "--backend cuda: no");
    CHECK_CONTAINS(e.msg, "GPU");
    int n = -1;
    Err e2;
    CHECK_EQ_INT(cuda_device_probe(&n, &e2), ST_UNAVAILABLE);
    CHECK_EQ_INT(n, 0);
    bk = (Backend *)1;
    CHECK_EQ_INT(backend_cuda_create(&bk, &e2), ST_UNAVAILABLE);
    CHECK(bk == NULL);
#else
    CHECK_CONTAINS(e.msg, "without CUDA");
#endif
    /* unknown names stay a usage error */
    CHECK_EQ_INT(backend_create("tpu", &bk, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "tpu");
}

#ifdef FP8PLAN_HAVE_CUDA
static void test_gpu_backend_is_complete(void)
{
    Backend *bk = NULL;
    Err e;
    Status st = backend_create("cuda", &bk, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (st) return;
    CHECK_STR(bk->name, "cuda");
    CHECK(bk->alloc && bk->free && bk->memset0 && bk->copy_to_device && bk->copy_to_host && bk->sync);
    /* every operation of the one list (exec/backend/backend.h BACKEND_OPS) */
#define HAS_OP(P, name, params, args) CHECKF(bk->name != NULL, "cuda backend lacks %s", #name);
    BACKEND_OPS(HAS_OP, _)
#undef HAS_OP
    /* the mixture-of-experts kernels check the expert ids they read: a bad one is skipped (nothing read or
     * written outside a tensor) and reported by the next sync as a usage error naming token and slot */
    {
        int32_t ids[4] = {0, 1, 2, 7}; /* 2 tokens, k 2, 4 experts: token 1 slot 1 is outside */
        void *dev = NULL;
        CHECK_EQ_INT(bk->alloc(bk, 4096, &dev, &e), ST_OK);
        if (dev) {
            CHECK_EQ_INT(bk->copy_to_device(bk, dev, ids, sizeof ids, &e), ST_OK);
            MoePermuteDesc pd = {.tokens = 2, .experts = 4, .k = 2, .cols = 8, .dtype = DT_BF16};
            pd.ids = (const int32_t *)dev;
            pd.in = (char *)dev + 256;
            pd.out = (char *)dev + 512;
            pd.row_of = (int32_t *)((char *)dev + 1024);
            CHECK_EQ_INT(bk->moe_permute(bk, &pd, &e), ST_OK);
            CHECK_EQ_INT(bk->sync(bk, &e), ST_USAGE);
            CHECK_CONTAINS(e.msg, "token 1 slot 1: expert id 7 is outside [0, 4)");
            CHECK_EQ_INT(bk->sync(bk, &e), ST_OK); /* reported once */
            bk->free(bk, dev);
        }
    }
    CHECK(bk->destroy);
    CHECK(bk->mem_info && bk->device_info && bk->mark && bk->elapsed && bk->op_times);
    CHECK_EQ_U64(bk->gemm_workspace_bytes, CUDA_LT_WORKSPACE_BYTES);

    BackendDeviceInfo info;
    CHECK_EQ_INT(bk->device_info(bk, &info, &e), ST_OK);
    CHECK(info.cc_major >= 9 && info.sm_count > 0 && info.total_bytes > 0 && info.name[0]);
    printf("  device: %s, cc %d.%d, %d SMs, %.1f GiB, runtime %d, cuBLASLt %llu\n", info.name, info.cc_major,
           info.cc_minor, info.sm_count, (double)info.total_bytes / (1ull << 30), info.runtime_version,
           (unsigned long long)info.gemm_library_version);
    uint64_t fr = 0, tot = 0;
    CHECK_EQ_INT(bk->mem_info(bk, &fr, &tot, &e), ST_OK);
    CHECK(fr > 0 && fr <= tot);

    /* a round trip through device memory */
    enum { N = 1000 };
    float h[N], back[N];
    for (int i = 0; i < N; i++) h[i] = (float)i * 0.5f - 3.0f;
    void *d = NULL;
    CHECK_EQ_INT(bk->alloc(bk, sizeof h, &d, &e), ST_OK);
    if (d) {
        CHECK(((uintptr_t)d & 255u) == 0);
        CHECK_EQ_INT(bk->copy_to_device(bk, d, h, sizeof h, &e), ST_OK);
        memset(back, 0xff, sizeof back);
        CHECK_EQ_INT(bk->copy_to_host(bk, back, d, sizeof back, &e), ST_OK);
        CHECK(memcmp(h, back, sizeof h) == 0);
        /* the FP8 TN rule is enforced before anything runs */
        float one = 1.0f;
        GemmDesc g = {.m = 16, .n = 16, .k = 16};
        g.a = (GemmOperand){.ptr = d, .dtype = DT_E4M3, .layout = GEMM_K_OUTER, .scale_inv = &one};
        g.b = (GemmOperand){.ptr = d, .dtype = DT_E4M3, .scale_inv = &one};
        g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16};
        CHECK_EQ_INT(bk->gemm(bk, &g, &e), ST_USAGE);
        CHECK_CONTAINS(e.msg, "TN");
        CHECK_EQ_INT(bk->sync(bk, &e), ST_OK);
        bk->free(bk, d);
    }
    bk->destroy(bk);
}
#endif

int main(void)
{
    if (!have_gpu()) {
        RUN(test_no_gpu_is_unavailable);
#ifdef FP8PLAN_HAVE_CUDA
        SKIP_HW(test_gpu_backend_is_complete, "no GPU here");
#endif
    } else {
        SKIP_HW(test_no_gpu_is_unavailable, "a GPU is present");
#ifdef FP8PLAN_HAVE_CUDA
        RUN(test_gpu_backend_is_complete);
#endif
    }
    return test_summary();
}
