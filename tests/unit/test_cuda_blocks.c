/* tests/unit/test_cuda_blocks.c — DeepSeek-V3's block scales on the CUDA backend, checked without a GPU:
 * how a block-scaled GemmDesc becomes a cuBLASLt call (exec/backend/lt_map.c: VEC128_32F / BLK128x128_32F
 * modes, the scale tensors' cuBLASLt layout and where each of our scales goes in it, no fast accumulation,
 * the cache key, the refusals), the library/device gate (cuBLASLt 12.9 on compute capability 9.0) and its
 * message, and model_create applying that gate to the deepseek-v3 recipe on a backend named "cuda" (the
 * cpu backend under that name, with a device_info of an H100 and a chosen cuBLASLt version). Expected
 * values worked by hand in the comments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/lt_map.h"
#include "exec/model/model_internal.h"
#include "support/exec_fixtures.h"
#include "test.h"

enum { B = 4 };

/* Block scales (DeepSeek-V3): our A (M = 201, K = 320) in 1x128 tiles, B (N = 384, K) in 128x128 blocks; kb =
 * ceil(320/128) = 3. cuBLAS A is our B: BLK128 over ceil(384/128) = 3 row blocks, ld = 3 rounded up to 4 = 4,
 * 3·4 = 12 floats; cuBLAS B is our A: VEC128 with the rows contiguous, ld = 201 rounded up to 4 = 204, 3·204 =
 * 612 floats. Our (i, j) = (5, 2) of A's tiles is cuBLASLt's 2·204 + 5 = 413; B's block (2, 1) is 2·4 + 1 = 9.
 * No fast accumulation with blocks (the TC14 request is the hardware's own accumulation there). */
static float blk_a[201 * 3], blk_b[3 * 3];
static Status fake_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)e;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "NVIDIA H100 80GB HBM3");
    out->cc_major = 9, out->cc_minor = 0;
    out->gemm_library_version = bk->impl ? *(const uint64_t *)bk->impl : 0;
    if (bk->impl && *(const uint64_t *)bk->impl == 130100) out->cc_major = 10; /* a B200's library */
    return ST_OK;
}

static void test_block_scales(void)
{
    static uint8_t a[201 * 320 + 16], b[384 * 320 + 16];
    static uint16_t d[201 * 384];
    LtCall c;
    Err e;
    GemmDesc g = {.m = 201, .n = 384, .k = 320, .acc_precision = GEMM_ACC_TC14};
    g.a = (GemmOperand){.ptr = (const void *)(((uintptr_t)a + 15) & ~(uintptr_t)15),
                        .dtype = DT_E4M3,
                        .scale_inv = blk_a,
                        .scale_gran = GRAN_1X128};
    g.b = (GemmOperand){.ptr = (const void *)(((uintptr_t)b + 15) & ~(uintptr_t)15),
                        .dtype = DT_E4M3,
                        .scale_inv = blk_b,
                        .scale_gran = GRAN_128X128};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16};
    Status st = lt_map_gemm(&g, &c, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(c.a_blk.mode, LT_SCALE_BLK128);
    CHECK(c.a_blk.src == blk_b && c.b_blk.src == blk_a);
    CHECK_EQ_U64(c.a_blk.rows, 3);
    CHECK_EQ_U64(c.a_blk.kb, 3);
    CHECK_EQ_U64(c.a_blk.ld, 4);
    CHECK_EQ_U64(c.a_blk.count, 12);
    CHECK_EQ_INT(c.b_blk.mode, LT_SCALE_VEC128);
    CHECK_EQ_U64(c.b_blk.rows, 201);
    CHECK_EQ_U64(c.b_blk.ld, 204);
    CHECK_EQ_U64(c.b_blk.count, 612);
    CHECK_EQ_U64(lt_scales_at(LT_SCALE_VEC128, 204, 5, 2), 413);
    CHECK_EQ_U64(lt_scales_at(LT_SCALE_BLK128, 4, 2, 1), 9);
    CHECK_EQ_INT(c.fast_accum, 0);
    LtKey k14, ksplit; /* TC14 (the CPU's model of the tensor core) and SPLIT are the same cuBLASLt call */
    lt_key_of(&c, &k14);
    g.acc_precision = GEMM_ACC_SPLIT;
    CHECK(!lt_map_gemm(&g, &c, &e));
    lt_key_of(&c, &ksplit);
    CHECK(lt_key_eq(&k14, &ksplit));
    g.acc_precision = GEMM_ACC_FAST;
    CHECK(!lt_map_gemm(&g, &c, &e));
    CHECK_EQ_INT(c.fast_accum, 0);
    /* the key tells block scales from per-tensor ones of the same shape */
    LtKey kb, kt;
    lt_key_of(&c, &kb);
    GemmDesc t = g;
    float one = 1.0f;
    t.a.scale_gran = t.b.scale_gran = GRAN_TENSOR, t.a.scale_inv = t.b.scale_inv = &one;
    CHECK(!lt_map_gemm(&t, &c, &e));
    lt_key_of(&c, &kt);
    CHECK(!lt_key_eq(&kb, &kt));
    CHECK_EQ_INT(c.a_blk.mode, LT_SCALE_SCALAR);
    /* 1x128 x 1x128 (the weight gradient): both VEC128, B's ld = 384 */
    g.b.scale_gran = GRAN_1X128;
    CHECK(!lt_map_gemm(&g, &c, &e));
    CHECK_EQ_INT(c.a_blk.mode, LT_SCALE_VEC128);
    CHECK_EQ_U64(c.a_blk.ld, 384);
    CHECK_EQ_U64(c.a_blk.count, 3 * 384);
    /* refusals: a block-scaled and a per-tensor operand; an FP8 output */
    g.b.scale_gran = GRAN_TENSOR;
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "one block-scaled and one per-tensor FP8 operand (1x128 x tensor)");
    g.b.scale_gran = GRAN_128X128;
    float ds = 1.0f;
    g.d.dtype = DT_E4M3, g.d.scale = &ds, g.acc_precision = GEMM_ACC_SPLIT;
    CHECK_EQ_INT(lt_map_gemm(&g, &c, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "with an FP8 output (e4m3)");
    /* the library and device: cuBLAS 12.9 (120900) on compute capability 9.0 */
    CHECK(lt_block_scales_ok(120900, 9, 0));
    CHECK(lt_block_scales_ok(130100, 9, 0));
    CHECK(!lt_block_scales_ok(120804, 9, 0));
    CHECK(!lt_block_scales_ok(130100, 10, 0));
    CHECK(!lt_block_scales_ok(120900, 8, 9));
    uint64_t v = 120804;
    Backend fake;
    memset(&fake, 0, sizeof fake);
    fake.name = "cuda", fake.impl = &v, fake.device_info = fake_info;
    CHECK_EQ_INT(lt_block_scales_check(&fake, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "the cuda backend's block-scaled FP8 GEMMs (1x128 / 128x128 FP32 scales: cuBLASLt's "
                          "VEC128_32F and BLK128x128_32F modes) need cuBLASLt 12.9 or later on compute capability "
                          "9.0; this process loaded cuBLASLt 12.8.4 on NVIDIA H100 80GB HBM3 (compute capability "
                          "9.0); the cpu backend runs them (--backend cpu)");
    v = 130100;
    CHECK_EQ_INT(lt_block_scales_check(&fake, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "loaded cuBLASLt 13.1.0 on NVIDIA H100 80GB HBM3 (compute capability 10.0)");
    v = 120900;
    CHECK_EQ_INT(lt_block_scales_check(&fake, &e), ST_OK);
    fake.name = "cpu", v = 0;
    CHECK_EQ_INT(lt_block_scales_check(&fake, &e), ST_OK);
}

/* A device for the block-scaling check: an H100 with the cuBLASLt version h100_lt. */
static uint64_t h100_lt;
static Status h100_info(Backend *bk, BackendDeviceInfo *out, Err *e)
{
    (void)bk, (void)e;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "NVIDIA H100");
    out->cc_major = 9, out->cc_minor = 0, out->gemm_library_version = h100_lt;
    return ST_OK;
}

/* deepseek-v3 on a dense model under the cuda name: cuBLASLt 12.8.4 on an H100 refused by model_create before
 * anything is allocated, naming the library and the device; 12.9.0 made (the cpu backend runs it). */
static void test_model_gate(void)
{
    Backend *bk = NULL;
    Comm *comm = NULL;
    Model *g = NULL;
    static Plan p;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e) && !comm_single_create(&comm, &e));
    if (bk && comm) {
        const char *name = bk->name;
        Status (*info)(Backend *, BackendDeviceInfo *, Err *) = bk->device_info;
        bk->name = "cuda";
        ModelSpec dense = fx_llama();
        Recipe dsr = fx_recipe("deepseek-v3");
        CHECK(!fx_plan(&dense, &dsr, B, 1, &p, &e));
        bk->device_info = h100_info, h100_lt = 120804;
        CHECK_EQ_INT(model_create(&p, NULL, bk, comm, &g, &e), ST_UNAVAILABLE);
        CHECK(g == NULL);
        CHECK_CONTAINS(e.msg, "recipe deepseek-v3 on model fx-llama: the cuda backend's block-scaled FP8 GEMMs");
        CHECK_CONTAINS(e.msg, "need cuBLASLt 12.9 or later on compute capability 9.0; this process loaded cuBLASLt "
                              "12.8.4 on NVIDIA H100 (compute capability 9.0)");
        h100_lt = 120900;
        CHECKF(model_create(&p, NULL, bk, comm, &g, &e) == ST_OK, "%s", e.msg);
        if (g) model_destroy(g);
        bk->device_info = info;
        bk->name = name;
    }
    if (comm) comm->destroy(comm);
    if (bk) bk->destroy(bk);
}

int main(void)
{
    RUN(test_block_scales);
    RUN(test_model_gate);
    return test_summary();
}
