/* exec/cuda/k_shard.cu — the vocabulary-parallel operations of tensor
 * parallelism (exec/backend/backend.h: embed_shard_fwd, embed_shard_bwd, xent_shard).
 * Tensor parallelism runs on the CPU backend only so far (fp8plan run refuses
 * --tp with --backend cuda, exit 69); these say so if called. */
#include "exec/cuda/cuda_impl.h"

static Status not_yet(const char *op, Err *e)
{
    return err_set(e, ST_UNAVAILABLE,
                   "%s: the CUDA backend has no vocabulary-parallel kernels yet (tensor "
                   "parallelism runs on the cpu backend)",
                   op);
}

Status cuda_embed_shard_fwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                            uint64_t channels, const void *wte, Dtype weight_dtype, void *out, Dtype act_dtype, Err *e)
{
    (void)bk, (void)tokens, (void)n, (void)first, (void)rows, (void)channels, (void)wte, (void)weight_dtype;
    (void)out, (void)act_dtype;
    return not_yet("embed_shard_fwd", e);
}

Status cuda_embed_shard_bwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                            uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, Err *e)
{
    (void)bk, (void)tokens, (void)n, (void)first, (void)rows, (void)channels, (void)dout, (void)act_dtype;
    (void)dwte;
    return not_yet("embed_shard_bwd", e);
}

Status cuda_xent_shard(Backend *bk, float *logits, uint64_t rows, uint64_t cols, uint64_t first, uint64_t vocab,
                       const int32_t *targets, float *stats, int phase, float dloss, float *losses, Err *e)
{
    (void)bk, (void)logits, (void)rows, (void)cols, (void)first, (void)vocab, (void)targets, (void)stats;
    (void)phase, (void)dloss, (void)losses;
    return not_yet("xent_shard", e);
}
