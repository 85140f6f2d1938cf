/* exec/backend/lt_map.h — how one row-major GEMM of the backend interface becomes one
 * cuBLASLt call, and the key under which the CUDA backend caches that call's
 * descriptors and heuristic. Pure C with no CUDA header, so CI checks the
 * mapping and the cache without a GPU; exec/cuda/gemm_lt.cu is the one user.
 *
 * cuBLAS is column-major. A row-major D (M, N) with leading dimension ldd is the
 * column-major matrix Dᶜ (N × M) with the same ld, and D = A·Bᵀ is
 * Dᶜ = B·Aᵀ. So cuBLAS's "A" is our B operand and its "B" is our A:
 *
 *   ours               stored (row-major)   cuBLAS operand        op
 *   B K_INNER (N,K)    (N, K)               (K × N) col-major     T
 *   B K_OUTER (N,K)    (K, N)               (N × K)               N
 *   A K_INNER (M,K)    (M, K)               (K × M)               N
 *   A K_OUTER (M,K)    (K, M)               (M × K)               T
 *
 * with cuBLAS m = N, n = M, k = K. Both operands K_INNER is "TN", the only layout
 * Hopper's FP8 tensor cores take; gemm_desc_check() refuses FP8 in any other. */
#ifndef FP8PLAN_EXEC_LT_MAP_H
#define FP8PLAN_EXEC_LT_MAP_H

#include <stdint.h>

#include "exec/backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An FP8 operand's scales as cuBLASLt reads them (cublasLtMatmulMatrixScale_t, cuBLAS 12.9 on Hopper):
 *   LT_SCALE_SCALAR  one FP32 scale_inv for the tensor (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
 *   LT_SCALE_VEC128  one per 128 K-elements of each row (VEC128_32F): ours are (rows, kb) row-major
 *                    (fp8/quant.h's 1x128 order), cuBLASLt's (kb, ld) with the rows contiguous,
 *                    ld = rows rounded up to 4 (16 bytes): TE's "GEMM-ready" 1x128 layout;
 *   LT_SCALE_BLK128  one per 128x128 block (BLK128x128_32F): ours are (ceil(rows/128), kb), cuBLASLt's
 *                    the same order with ld = kb rounded up to 4 (TE's GEMM-ready 128x128 layout).
 * kb = ceil(K/128). The CUDA backend copies ours into that layout before each block-scaled matmul
 * (exec/cuda/gemm_lt.cu), the padding zero; lt_scales_at is the one place the index is computed.
 * The layouts are what Transformer Engine hands cuBLASLt; the GPU check (make gpu-check: gpu_kernels'
 * block GEMMs against the CPU reference) is what confirms them on a device. */
typedef enum { LT_SCALE_SCALAR = 0, LT_SCALE_VEC128 = 1, LT_SCALE_BLK128 = 2 } LtScaleMode;

typedef struct {
    const float *src; /* ours (backend memory) */
    uint8_t mode;     /* LtScaleMode */
    uint64_t rows;    /* of the scale array ours: the operand's rows (VEC128) or its 128-row blocks (BLK128) */
    uint64_t kb;      /* 128-wide K blocks */
    uint64_t ld;      /* cuBLASLt's leading dimension (floats) */
    uint64_t count;   /* floats of cuBLASLt's tensor: kb·ld (VEC128), rows·ld (BLK128) */
} LtScales;

#ifdef __CUDACC__
#define LT_HD __host__ __device__
#else
#define LT_HD
#endif
/* Where our scale (i, j) — row (or row block) i, K block j, at src[i·kb + j] — sits in cuBLASLt's tensor. */
static inline LT_HD uint64_t lt_scales_at(uint8_t mode, uint64_t ld, uint64_t i, uint64_t j)
{
    return mode == LT_SCALE_VEC128 ? j * ld + i : i * ld + j;
}
#undef LT_HD

/* The layout of an operand of `rows` x k with scales of granularity gran at src (GRAN_1X128 → VEC128,
 * GRAN_128X128 → BLK128; anything else SCALAR with count 1). */
void lt_scales_of(Granularity gran, const float *src, uint64_t rows, uint64_t k, LtScales *out);

/* cuBLASLt's block-scaled FP8 GEMMs (VEC128_32F / BLK128x128_32F scales) came with cuBLAS 12.9
 * (cublasLtGetVersion() 120900) for compute capability 9.0 only (Hopper; Blackwell's block scaling is
 * MXFP8's instead). */
enum { LT_BLOCK_SCALES_VERSION = 120900 };
int lt_block_scales_ok(uint64_t lt_version, int cc_major, int cc_minor);
/* ST_OK when backend bk can run block-scaled FP8 GEMMs (the cpu backend always; another asked for its
 * device and loaded GEMM library), else ST_UNAVAILABLE saying what the device and library are and what
 * they would need to be. */
Status lt_block_scales_check(Backend *bk, Err *e);

/* How the bias is applied. */
typedef enum {
    LT_BIAS_NONE = 0,
    LT_BIAS_EPILOGUE, /* cuBLASLt's BIAS epilogue (one rounding, like the CPU reference) */
    LT_BIAS_KERNEL,   /* a separate kernel adds it after the GEMM (types cuBLASLt's epilogue refuses) */
} LtBias;

/* One cuBLASLt matmul, column-major: D (m × n) = alpha · op(A) · op(B) [+ C] [+ bias].
 * Operands are stored col-major as rows × cols with their ld (elements). */
typedef struct {
    int trans_a, trans_b; /* 1 = CUBLAS_OP_T */
    uint64_t m, n, k;
    Dtype a_type, b_type, c_type, d_type;
    uint64_t a_rows, a_cols, lda;
    uint64_t b_rows, b_cols, ldb;
    uint64_t ldd; /* C shares D's shape and ld */
    const void *a, *b;
    const void *c; /* D itself when accumulating; NULL otherwise */
    void *d;
    float alpha;
    int beta_one; /* accumulate into D */
    /* FP8: dequantization factors of cuBLAS A and B (our B and A): one each (per tensor), or blocks */
    const float *a_scale_inv, *b_scale_inv;
    LtScales a_blk, b_blk; /* block scales (mode LT_SCALE_VEC128/BLK128): ours, relaid out before the call */
    const float *d_scale;  /* FP8 output: quantization multiplier */
    int fast_accum;        /* CUBLASLT_MATMUL_DESC_FAST_ACCUM */
    const void *bias;
    Dtype bias_type;
    LtBias bias_mode;
    /* output amax: FP8 output → cuBLASLt AMAX_D; other outputs → computed by a kernel over D */
    float *amax;
    int amax_by_lt;
    /* strided batch (attention): count ≥ 1 and element strides between matrices */
    uint32_t batch;
    int64_t stride_a, stride_b, stride_d;
} LtCall;

/* Fill *c from a validated descriptor (gemm_desc_check is called first).
 * ST_USAGE for a bad descriptor; ST_UNAVAILABLE for a legal one cuBLASLt cannot
 * run here: block scales with an FP8 output, an FP8 operand whose leading
 * dimension or K is not a multiple of 16 (tensor-core rule; pad the tensor), or
 * a bias cuBLASLt cannot add to an FP8 output. */
Status lt_map_gemm(const GemmDesc *g, LtCall *c, Err *e);

/* FP8 scale pointers (A/B scale_inv, D scale) cuBLASLt reads from a 16-byte
 * boundary; the executor keeps a tensor's scale_inv at 4-byte offsets in its
 * bank, so those are staged into aligned slots first. Bits of the pointers
 * that are set and not 16-byte aligned. */
enum { LT_SCALE_ALIGN = 16, LT_STAGE_A = 1, LT_STAGE_B = 2, LT_STAGE_D = 4 };
unsigned lt_scale_stage(const LtCall *c);

/* Largest power of two ≤ 256 that divides the address (256 for NULL): what
 * CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES is told. */
uint32_t lt_ptr_align(const void *p);

/* ---- the heuristic cache ----------------------------------------------------------
 * Everything that decides which algorithm cuBLASLt may pick: shapes, types,
 * transposes, leading dimensions, batch and strides, the epilogue, fast
 * accumulation, which scale/amax pointers are set, and the pointers'
 * alignments. Pointer values themselves are not part of it. */
typedef struct {
    uint64_t m, n, k, lda, ldb, ldd, a_rows, a_cols, b_rows, b_cols;
    int64_t stride_a, stride_b, stride_d;
    uint32_t batch;
    uint8_t trans_a, trans_b, a_type, b_type, c_type, d_type, bias_type, bias_mode;
    uint8_t beta_one, fast_accum, has_scales, has_d_scale, amax_by_lt, a_mode, b_mode;
    uint16_t align_a, align_b, align_c, align_d;
} LtKey;

/* The key of a call (padding zeroed, so keys compare as bytes). */
void lt_key_of(const LtCall *c, LtKey *k);
uint64_t lt_key_hash(const LtKey *k);
int lt_key_eq(const LtKey *a, const LtKey *b);

/* Open-addressing hash table from LtKey to an opaque value (the CUDA side keeps
 * its descriptors and algorithm there). Grows at half load. */
typedef struct {
    LtKey key;
    void *val;
    int used;
} LtSlot;

typedef struct {
    LtSlot *slots;
    uint32_t cap, n;
    uint64_t hits, misses; /* lookups that found / did not find their key */
} LtCache;

/* The value stored for k, or NULL (counts a hit or a miss). */
void *lt_cache_find(LtCache *c, const LtKey *k);
/* Store val for k (k not present). ST_NOMEM when the table cannot grow. */
Status lt_cache_put(LtCache *c, const LtKey *k, void *val, Err *e);
/* Call free_val on every value, then release the table. */
void lt_cache_clear(LtCache *c, void (*free_val)(void *val, void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
