/* exec/backend/backend_desc_moe.h — what the mixture-of-experts operations take (exec/backend/backend.h:
 * router_topk ... grouped_gemm_wgrad): routing, the permutation and its inverse, the grouped GEMMs, with their
 * semantics. The GEMM operands they carry are exec/backend/backend_desc.h's, which includes this file at its end. */
#ifndef FP8PLAN_EXEC_BACKEND_DESC_MOE_H
#define FP8PLAN_EXEC_BACKEND_DESC_MOE_H

#include <stdint.h>

#include "exec/backend/backend_desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- mixture of experts ---------------------------------------------------------
 * A routed MoE layer's pieces, as DeepSeek-V3 and Megatron-Core define them, for T
 * tokens, E experts and k experts per token:
 *   router_topk → moe_permute → grouped_gemm (FC1) → act_fwd (SwiGLU) →
 *   grouped_gemm (FC2) → moe_unpermute (weighted combine),
 * and back: moe_unpermute_bwd → grouped GEMMs' backward (grouped_gemm for the
 * input gradient, grouped_gemm_wgrad for the weights') → moe_unpermute without
 * weights (the permute's backward); router_bwd (with router_aux_loss's gradient).
 * Every reduction runs in a fixed order (the CPU backend's determinism). */

/* Routing. scores s (T, E) by `score` (FP32: softmax with the row max subtracted,
 * as Mixtral, Qwen3 and DeepSeek-V2; sigmoid, as DeepSeek-V3);
 * per token, the k experts with the largest selection key s + bias (bias NULL = 0:
 * DeepSeek-V3's aux-loss-free balancing bias steers the choice only), in
 * descending key order, a tie going to the lower expert id (so every rank routes
 * alike; a NaN key ranks below every number); the combine weights come from the
 * un-biased scores:
 *   w_j = (norm_topk ? s[id_j] / Σ_l s[id_l] : s[id_j]) · weight_scale   (sum in l order)
 * (norm_topk: DeepSeek-V3, Qwen3's norm_topk_prob; weight_scale: DeepSeek-V3's
 * routed_scaling_factor, 1 for none). counts[e] = the (token, slot) pairs routed to
 * e (overwritten; Σ counts = T·k).
 * Group-limited routing (groups > 1; DeepSeek-V3: 8 groups, top 4, the catalog's
 * router_groups and router_group_topk): the E experts form `groups` equal groups
 * of consecutive ids; a group's score is the sum of its two largest keys (the
 * largest alone without a bias, as DeepSeek-V3's reference code does for a gate
 * without one); only the group_topk best groups (ties to the lower group id)
 * are open to the top-k. groups 0 or 1: no grouping. */
typedef struct {
    uint64_t tokens;     /* T */
    uint32_t experts, k; /* E, and 1 ≤ k ≤ E */
    RouterType score;    /* ROUTER_SOFTMAX or ROUTER_SIGMOID (planner/spec.h) */
    int norm_topk;
    float weight_scale;
    uint32_t groups, group_topk; /* groups divides E; k ≤ group_topk · E / groups */
    const float *logits;         // (T, E)
    const float *bias;           // (E), or NULL
    float *scores;               // (T, E) written: saved for router_bwd and router_aux_loss
    int32_t *ids;                // (T, k) written
    float *weights;              // (T, k) written
    int32_t *counts;             // (E) written
} RouterDesc;

/* The router's backward: dlogits (T, E) (overwritten) from dweights (T, k), plus
 * dscores (T, E) when set (the auxiliary loss's gradient), through the
 * normalisation (ds[id_j] = c·(dw_j/S − Σ_l dw_l·s[id_l]/S²) with S = Σ_l s[id_l],
 * c = weight_scale; without norm_topk ds[id_j] = c·dw_j) and the score function
 * (softmax: dz = s·(ds − Σ_e ds_e·s_e); sigmoid: dz = ds·s·(1 − s)). The bias and
 * the selection get no gradient. */
typedef struct {
    uint64_t tokens;
    uint32_t experts, k;
    RouterType score; /* ROUTER_SOFTMAX or ROUTER_SIGMOID (planner/spec.h) */
    int norm_topk;
    float weight_scale;
    const float *scores;   // (T, E) the forward's
    const int32_t *ids;    // (T, k) the forward's
    const float *dweights; // (T, k)
    const float *dscores;  // (T, E), or NULL
    float *dlogits;        // (T, E) written
} RouterBwdDesc;

/* The auxiliary load-balancing loss over the T tokens given (call it per sequence
 * for DeepSeek-V3's sequence-wise form), Switch/GShard's as Megatron-Core writes it:
 *   loss = coeff · E · Σ_e f_e · P_e,  f_e = n_e / (T·k),  P_e = (1/T) Σ_t p[t][e]
 * where n_e counts the (token, slot) pairs of ids routed to e, and p = s for
 * softmax scores, p[t][e] = s[t][e] / Σ_f s[t][f] for sigmoid scores (DeepSeek-V3
 * normalises them in its sequence-wise balance loss). *loss (1 float) is
 * written; with dscores set, dscores (T, E) is written with dloss · d(loss)/d(s)
 * (f held constant). The CPU backend sums in double, tokens in order.
 * Sequence parallelism (Megatron-Core's router over a tp x cp group): with
 * counts set, the T tokens are one of `shards` equal shards of T·shards, f_e
 * counts every shard's copies, n_e = Σ_s counts[s][e], and T·shards replaces T
 * in f, P and the gradient: the loss is this shard's part (the shards' parts
 * sum to the whole sequence's), its gradient the whole's. */
typedef struct {
    uint64_t tokens;
    uint32_t experts, k;
    RouterType score; /* ROUTER_SOFTMAX or ROUTER_SIGMOID (planner/spec.h) */
    float coeff;
    const float *scores; // (T, E)
    const int32_t *ids;  // (T, k)
    float *loss;         // (1) written
    float dloss;
    float *dscores;        // (T, E) written, or NULL
    const int32_t *counts; // (shards, E) every shard's copies per expert, or NULL (counted from ids)
    uint32_t shards;       // with counts: at least 1
} RouterAuxDesc;

/* Permute: the k copies of every token's row, grouped by expert (stable: expert
 * by expert, tokens in increasing index within one; an expert's rows start at
 * the sum of the counts of the experts before it):
 *   out[row_of[t][j]] = in[t],   row_of[t][j] = the row of (token t, slot j).
 * Rows are copied as bytes, so FP8 activations permute as they are. The map
 * row_of (T, k) is written for moe_unpermute and moe_unpermute_bwd. Ids must be in
 * [0, E) and distinct within a token (the backend reads them: ST_USAGE). */
typedef struct {
    uint64_t tokens; /* T */
    uint32_t experts, k;
    uint64_t cols; /* C */
    Dtype dtype;   /* any element dtype */
    const int32_t *ids;
    const void *in;  // (T, C)
    void *out;       // (T·k, C)
    int32_t *row_of; // (T, k) written
} MoePermuteDesc;

/* Unpermute and combine: out[t] = Σ_j w[t][j] · in[row_of[t][j]], summed in FP32
 * in slot order and rounded once to dtype; weights NULL = 1 (then it is the
 * permute's backward: a token's gradient is the sum of its copies'). */
typedef struct {
    uint64_t tokens;
    uint32_t k;
    uint64_t cols;
    Dtype dtype; /* DT_FP32, DT_FP16, DT_BF16 */
    const int32_t *row_of;
    const float *weights; // (T, k), or NULL
    const void *in;       // (T·k, C)
    void *out;            // (T, C) written
} MoeUnpermuteDesc;

/* The combine's backward: din[row_of[t][j]] = w[t][j] · dout[t] (rounded to dtype)
 * and dweights[t][j] = Σ_c dout[t][c] · in[row_of[t][j]][c] (FP32, c in order),
 * `in` being the forward's input (the experts' outputs). */
typedef struct {
    uint64_t tokens;
    uint32_t k;
    uint64_t cols;
    Dtype dtype;
    const int32_t *row_of;
    const float *weights; // (T, k)
    const void *dout;     // (T, C)
    const void *in;       // (T·k, C) the forward's
    void *din;            // (T·k, C) written
    float *dweights;      // (T, k) written, or NULL
} MoeUnpermuteBwdDesc;

/* Grouped GEMM: one call for G experts, group g being the GEMM of GemmDesc
 *   D_g (m_g, N) = A_g (m_g, K) · B_g (N, K)ᵀ  [+ D_g if accumulate]
 * with m_g = counts[g] (≥ 0, in backend memory: the router's counts; Σ m_g = rows,
 * ST_USAGE otherwise) and every convention of gemm: A_g is rows [r_g, r_g + m_g)
 * of A, r_g = Σ_{h<g} m_h (K_INNER: stored (rows, K); K_OUTER: columns of (K, rows));
 * B holds the G weights one after the other, group g's at g·N·K elements (K_INNER:
 * (N, K), K_OUTER: (K, N), packed: b.ld is 0); D_g is rows [r_g, r_g + m_g) of D.
 * FP8 operands carry one per-tensor scale_inv per group: a.scale_inv and
 * b.scale_inv are (G); or block scales (DeepSeek-V3's experts): A in 1x128
 * tiles, (rows, ceil(K/128)) as gemm's, so group g's are rows [r_g, r_g + m_g)
 * of them; B in 1x128 or 128x128 blocks of each group's (N, K) on its own,
 * the groups' scales one after the other. D is FP32, FP16 or BF16, no
 * bias; d.amax, when set, is max-combined over all groups. Each group's D is
 * bit-identical to gemm() called with that group's GemmDesc. */
typedef struct {
    uint32_t groups;       /* G */
    uint64_t rows, n, k;   /* rows = Σ m_g */
    const int32_t *counts; // (G)
    GemmOperand a;         // (rows, K)
    GemmOperand b;         // (G, N, K)
    GemmOutput d;          // (rows, N)
    GemmAccum accum;
    GemmAccPrecision acc_precision;
} GroupedGemmDesc;

/* The grouped GEMM's weight gradient: the groups ragged along K. For group g,
 *   D_g (M, N) = A_g (M, k_g) · B_g (N, k_g)ᵀ  [+ D_g if accumulate]
 * with k_g = counts[g] (≥ 0, Σ k_g = rows, as grouped_gemm's counts), A_g and
 * B_g the permuted rows [r_g, r_g + k_g): for an expert's dW = dYᵀ·X, A = dY
 * stored (rows, M) and B = X stored (rows, N), both K_OUTER (gemm's wgrad in
 * BF16), or their transposed copies (M, rows) and (N, rows) K_INNER (the form
 * FP8 takes, one per-tensor scale per group as in grouped_gemm, or 1x128 tiles
 * along K that start at each group's first row: group g's scales are
 * (M, ceil(k_g/128)) for A and (N, ceil(k_g/128)) for B, after the groups
 * before it, at M·t_g and N·t_g with t_g = Σ_{h<g} ceil(k_h/128)). D (G, M, N) is
 * packed (d.ld 0), group g's at g·M·N; a group with k_g = 0 gets D_g = 0
 * (overwrite) or keeps it (accumulate), as the sum over none of its rows. Each
 * other group's D_g is bit-identical to gemm() with that group's GemmDesc (on
 * the CUDA backend, an FP8 group whose slices start unaligned runs on an aligned,
 * zero-padded copy: the same sum in another order, exec/cuda/gemm_group.cu);
 * d.amax, when set, is max-combined over those groups. */
typedef struct {
    uint32_t groups;       /* G */
    uint64_t rows, m, n;   /* rows = Σ k_g */
    const int32_t *counts; // (G)
    GemmOperand a;         // (rows, M) K_OUTER, or (M, rows) K_INNER
    GemmOperand b;         // (rows, N) K_OUTER, or (N, rows) K_INNER
    GemmOutput d;          // (G, M, N)
    GemmAccum accum;
    GemmAccPrecision acc_precision;
} GroupedWgradDesc;

#ifdef __cplusplus
}
#endif
#endif
