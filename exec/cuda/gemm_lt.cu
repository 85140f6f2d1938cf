/* exec/cuda/gemm_lt.cu — GEMMs through cuBLASLt.
 *
 * exec/backend/lt_map.c turns a GemmDesc into a column-major call (cuBLAS A = our B, so
 * both operands K-inner is "TN", Hopper's only FP8 layout). Per distinct call
 * shape (LtKey: sizes, types, transposes, leading dimensions, batch, epilogue,
 * fast accumulation, pointer alignments) the matmul descriptor, the four
 * layouts and the top heuristic are made once and cached; a call then only
 * re-points the scale/bias/amax attributes and enqueues. Shapes cuBLASLt has
 * no algorithm for are cached too, so the refusal costs one heuristic query.
 *
 * FP8: compute FP32, scale type FP32, A/B_SCALE_POINTER = scale_inv (the
 * dequantization factors), FAST_ACCUM only where the descriptor asks (TE: the
 * forward GEMM). Block scales (DeepSeek-V3: our A in 1x128 tiles, B in 1x128 or
 * 128x128 blocks) set A/B_SCALE_MODE to VEC128_32F / BLK128x128_32F (cuBLAS 12.9,
 * Hopper; model_create checks the loaded library first: lt_block_scales_check)
 * and point the scales at a copy in cuBLASLt's layout (lt_map.h LtScales: one
 * kernel per operand on the stream, into private scratch slot 2), never fast
 * accumulation. D_SCALE_POINTER + AMAX_D_POINTER only for an FP8 output (C is
 * then unused and typed as the bias, BF16, as TE does). AMAX_D is written, not
 * max-combined, so it goes to a private slot that a one-thread kernel folds
 * into the caller's amax. The workspace is the executor's arena slice
 * (bk->gemm_workspace, the plan's gemm_workspace term) or, without one, a
 * private buffer of the same size. */
#include <stdlib.h>

#include "exec/cuda/cuda_impl.h"

typedef struct {
    int unsupported; /* cuBLASLt returned no algorithm for this key */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
} LtEntry;

static cudaDataType_t lt_type(Dtype t)
{
    switch (t) {
    case DT_FP32: return CUDA_R_32F;
    case DT_FP16: return CUDA_R_16F;
    case DT_BF16: return CUDA_R_16BF;
    case DT_E4M3: return CUDA_R_8F_E4M3;
    case DT_E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
    }
}

#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
static cublasLtMatmulMatrixScale_t scale_mode(uint8_t m)
{
    return m == LT_SCALE_VEC128   ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
           : m == LT_SCALE_BLK128 ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                  : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}
#endif

static void entry_free(void *val, void *ctx)
{
    (void)ctx;
    LtEntry *en = (LtEntry *)val;
    if (!en) return;
    if (en->la) (void)cublasLtMatrixLayoutDestroy(en->la);
    if (en->lb) (void)cublasLtMatrixLayoutDestroy(en->lb);
    if (en->lc) (void)cublasLtMatrixLayoutDestroy(en->lc);
    if (en->ld) (void)cublasLtMatrixLayoutDestroy(en->ld);
    if (en->op) (void)cublasLtMatmulDescDestroy(en->op);
    free(en);
}

void cuda_lt_cache_free(CudaImpl *im) { lt_cache_clear(&im->cache, entry_free, NULL); }

static Status layout(cublasLtMatrixLayout_t *l, Dtype t, uint64_t rows, uint64_t cols, uint64_t ld, uint32_t batch,
                     int64_t stride, Err *e)
{
    Status st = ST_OK;
    LT_TRY(cublasLtMatrixLayoutCreate(l, lt_type(t), rows, cols, (int64_t)ld), e);
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), e);
        LT_TRY(
            cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
            e);
    }
done:
    return st;
}

/* Point the per-call attributes (scales, amax slot, bias) at this call's memory. */
static Status set_pointers(CudaImpl *im, LtEntry *en, const LtCall *c, Err *e)
{
    Status st = ST_OK;
    cublasLtMatmulDesc_t op = en->op;
    if (c->a_scale_inv) {
        const void *pa = c->a_scale_inv, *pb = c->b_scale_inv;
        LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa, sizeof pa), e);
        LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb, sizeof pb), e);
    }
    if (c->d_scale) {
        const void *pd = c->d_scale;
        LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &pd, sizeof pd), e);
    }
    if (c->amax && c->amax_by_lt) {
        void *slot = &im->small->tmp[0];
        LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &slot, sizeof slot), e);
    }
    if (c->bias_mode == LT_BIAS_EPILOGUE) {
        const void *pb = c->bias;
        LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pb, sizeof pb), e);
    }
done:
    return st;
}

static Status entry_make(CudaImpl *im, const LtCall *c, const LtKey *key, LtEntry *en, Err *e)
{
    Status st = ST_OK;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    int fp8 = dtype_is_fp8(c->a_type);
    cublasOperation_t ta = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = c->bias_mode == LT_BIAS_EPILOGUE ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    uint64_t ws = CUDA_LT_WORKSPACE_BYTES;
    uint32_t al[4] = {key->align_a, key->align_b, key->align_c, key->align_d};

    LT_TRY(cublasLtMatmulDescCreate(&en->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), e);
    LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), e);
    LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), e);
    if (c->a_blk.mode != LT_SCALE_SCALAR) {
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
        cublasLtMatmulMatrixScale_t ma = scale_mode(c->a_blk.mode), mb = scale_mode(c->b_blk.mode);
        LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof ma), e);
        LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof mb), e);
#else
        st = err_set(e, ST_UNAVAILABLE, "gemm: this build's cuBLASLt headers predate block scales (cuBLAS 12.9)");
        goto done;
#endif
    }
    if (fp8) {
        int8_t fast = (int8_t)(c->fast_accum != 0);
        LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), e);
        if (c->bias_mode == LT_BIAS_EPILOGUE) {
            cudaDataType_t bt = lt_type(c->bias_type);
            LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt), e);
        }
    }
    LT_TRY(cublasLtMatmulDescSetAttribute(en->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), e);
    ST_TRY(set_pointers(im, en, c, e));

    ST_TRY(layout(&en->la, c->a_type, c->a_rows, c->a_cols, c->lda, c->batch, c->stride_a, e));
    ST_TRY(layout(&en->lb, c->b_type, c->b_rows, c->b_cols, c->ldb, c->batch, c->stride_b, e));
    ST_TRY(layout(&en->lc, c->c_type, c->m, c->n, c->ldd, c->batch, c->stride_d, e));
    ST_TRY(layout(&en->ld, c->d_type, c->m, c->n, c->ldd, c->batch, c->stride_d, e));

    LT_TRY(cublasLtMatmulPreferenceCreate(&pref), e);
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), e);
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4), e);
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4), e);
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4), e);
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], 4), e);
    {
        cublasStatus_t hs =
            cublasLtMatmulAlgoGetHeuristic(im->lt, en->op, en->la, en->lb, en->lc, en->ld, pref, 1, &heur, &found);
        /* NOT_SUPPORTED here means "no algorithm for this combination": cache the refusal */
        if (hs == CUBLAS_STATUS_NOT_SUPPORTED)
            found = 0;
        else if (hs != CUBLAS_STATUS_SUCCESS)
            LT_TRY(hs, e);
    }
    if (found < 1 || heur.state != CUBLAS_STATUS_SUCCESS)
        en->unsupported = 1;
    else
        en->algo = heur.algo;
done:
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    return st;
}

static Status unsupported(const LtCall *c, Err *e)
{
    return err_set(e, ST_UNAVAILABLE,
                   "gemm: cuBLASLt has no algorithm for %s x %s -> %s, m=%llu n=%llu k=%llu (col-major, op %c%c, "
                   "ld %llu/%llu/%llu, batch %u%s%s)",
                   dtype_name(c->a_type), dtype_name(c->b_type), dtype_name(c->d_type), (unsigned long long)c->m,
                   (unsigned long long)c->n, (unsigned long long)c->k, c->trans_a ? 'T' : 'N', c->trans_b ? 'T' : 'N',
                   (unsigned long long)c->lda, (unsigned long long)c->ldb, (unsigned long long)c->ldd, c->batch,
                   c->bias_mode == LT_BIAS_EPILOGUE ? ", bias epilogue" : "", c->fast_accum ? ", fast accum" : "");
}

Status cuda_lt_workspace(CudaImpl *im, void **ws, Err *e)
{
    Status st = ST_OK;
    *ws = im->bk->gemm_workspace;
    if (*ws && ((uintptr_t)*ws & 255u) == 0) return ST_OK;
    if (*ws) return err_set(e, ST_USAGE, "gemm: the workspace slice must be 256-byte aligned");
    if (!im->ws) CU_TRY(cudaMalloc(&im->ws, CUDA_LT_WORKSPACE_BYTES), e);
    *ws = im->ws;
done:
    return st;
}

/* The scales lt_scale_stage names, copied into im->small->lt_scale (ordered on
 * the one stream, so a later GEMM's copy waits for this one's matmul). */
__global__ void k_stage_scales(float *slot, const float *a, const float *b, const float *d)
{
    if (a) slot[0] = *a;
    if (b) slot[4] = *b;
    if (d) slot[8] = *d;
}

static Status stage_scales(CudaImpl *im, unsigned sm, LtCall *c, Err *e)
{
    Status st = ST_OK;
    float *slot = im->small->lt_scale;
    k_stage_scales<<<1, 1, 0, im->stream>>>(slot, sm & LT_STAGE_A ? c->a_scale_inv : NULL,
                                            sm & LT_STAGE_B ? c->b_scale_inv : NULL,
                                            sm & LT_STAGE_D ? c->d_scale : NULL);
    CU_LAUNCHED(e);
    if (sm & LT_STAGE_A) c->a_scale_inv = slot;
    if (sm & LT_STAGE_B) c->b_scale_inv = slot + 4;
    if (sm & LT_STAGE_D) c->d_scale = slot + 8;
done:
    return st;
}

/* Our scales (i, j) at src[i·kb + j] → cuBLASLt's tensor at lt_scales_at(mode, ld, i, j); the padding is
 * zeroed first. */
__global__ void k_lt_scales(const float *src, uint8_t mode, uint64_t rows, uint64_t kb, uint64_t ld, float *dst)
{
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < rows * kb;
         t += (uint64_t)gridDim.x * blockDim.x)
        dst[lt_scales_at(mode, ld, t / kb, t % kb)] = src[t];
}

/* Both operands' block scales into cuBLASLt's layout (scratch slot 2); c is re-pointed at them. */
static Status relayout_scales(CudaImpl *im, LtCall *c, Err *e)
{
    Status st = ST_OK;
    void *buf = NULL;
    const size_t na = ((size_t)c->a_blk.count * sizeof(float) + 255) & ~(size_t)255;
    const size_t nb = (size_t)c->b_blk.count * sizeof(float);
    const LtScales *s[2] = {&c->a_blk, &c->b_blk};
    ST_TRY(cuda_scratch3(im, na + nb, &buf, e));
    CU_TRY(cudaMemsetAsync(buf, 0, na + nb, im->stream), e);
    for (int i = 0; i < 2; i++) {
        float *dst = (float *)((char *)buf + (i ? na : 0));
        const uint64_t n = s[i]->rows * s[i]->kb;
        k_lt_scales<<<cuda_blocks(n, 256, 1024), 256, 0, im->stream>>>(s[i]->src, s[i]->mode, s[i]->rows, s[i]->kb,
                                                                       s[i]->ld, dst);
        CU_LAUNCHED(e);
        if (i)
            c->b_scale_inv = dst;
        else
            c->a_scale_inv = dst;
    }
done:
    return st;
}

Status cuda_lt_call(CudaImpl *im, const LtCall *c, Err *e)
{
    Status st = ST_OK;
    void *ws = NULL;
    LtKey key;
    LtCall staged, blocks;
    if (c->a_blk.mode != LT_SCALE_SCALAR) {
        blocks = *c;
        if ((st = relayout_scales(im, &blocks, e))) return st;
        c = &blocks;
    }
    unsigned sm = lt_scale_stage(c);
    if (sm) {
        staged = *c;
        if ((st = stage_scales(im, sm, &staged, e))) return st;
        c = &staged;
    }
    lt_key_of(c, &key);
    LtEntry *en = (LtEntry *)lt_cache_find(&im->cache, &key);
    if (!en) {
        en = (LtEntry *)calloc(1, sizeof *en);
        if (!en) return err_set(e, ST_NOMEM, "gemm: out of host memory for a cuBLASLt descriptor");
        st = entry_make(im, c, &key, en, e);
        if (!st) st = lt_cache_put(&im->cache, &key, en, e);
        if (st) {
            entry_free(en, NULL);
            return st;
        }
    } else {
        ST_TRY(set_pointers(im, en, c, e));
    }
    if (en->unsupported) return unsupported(c, e);
    ST_TRY(cuda_lt_workspace(im, &ws, e));
    {
        float alpha = c->alpha, beta = c->beta_one ? 1.0f : 0.0f;
        /* C: D itself when accumulating; otherwise D (unread, beta = 0), or none for an FP8 D (TE) */
        const void *cp = c->c ? c->c : (dtype_is_fp8(c->d_type) ? NULL : c->d);
        LT_TRY(cublasLtMatmul(im->lt, en->op, &alpha, c->a, en->la, c->b, en->lb, &beta, cp, en->lc, c->d, en->ld,
                              &en->algo, ws, CUDA_LT_WORKSPACE_BYTES, im->stream),
               e);
    }
done:
    return st;
}

Status cuda_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    LtCall c;
    Status st = lt_map_gemm(g, &c, e);
    if (st) return st;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_GEMM, e));
    st = cuda_lt_call(im, &c, e);
    if (st == ST_UNAVAILABLE && c.bias_mode == LT_BIAS_EPILOGUE && !dtype_is_fp8(c.d_type)) {
        /* no algorithm with the bias epilogue: plain GEMM, then the bias kernel */
        c.bias_mode = LT_BIAS_KERNEL;
        st = cuda_lt_call(im, &c, e);
    }
    if (st) goto done;
    if (c.bias_mode == LT_BIAS_KERNEL)
        ST_TRY(cuda_bias_add(im, g->d.ptr, g->d.dtype, c.ldd, g->m, g->n, g->bias, g->bias_dtype, e));
    if (c.amax && c.amax_by_lt) ST_TRY(cuda_amax_combine(im, c.amax, &im->small->tmp[0], e));
    if (c.amax && !c.amax_by_lt) ST_TRY(cuda_amax_strided(im, g->d.ptr, g->d.dtype, c.ldd, g->m, g->n, c.amax, e));
    ST_TRY(cuda_op_end(im, e));
done:
    if (st) err_prefix(e, "cuda");
    return st;
}
