/* planner/plan_bytes.h — step-time terms counted from the bytes the work moves
 * (pure; not a public API). Kept apart from plan_time.c's model, which calls
 * them, so a rewrite of that model can keep them as they are: each is what the
 * executor's kernels do (exec/cuda/), checked by hand in
 * tests/unit/test_plan_bytes.c.
 *
 * Materialized attention (ATTN_MATERIALIZED): the (B, H, T, T) scores of a
 * layer make the attention core memory-bound — its GEMMs have K = D (QKᵀ,
 * dO·Vᵀ) or stream a T × T operand (P·V, Pᵀ·dO, dS·K, dSᵀ·Q) at
 * D flops per byte or less, under a Hopper's ridge (about 200 BF16 flops per
 * byte). Per score element, with a = bytes of an activation:
 *   forward   QKᵀ writes FP32 scores (4), the softmax reads them (4) and
 *             writes P (a), P·V reads P (a):                    8 + 2a bytes
 *   backward  dO·Vᵀ writes FP32 dP (4), the softmax backward reads P (a) and
 *             dP (4) and writes dS (a), Pᵀ·dO reads P (a), dS·K and dSᵀ·Q
 *             read dS (2a):                                     8 + 5a bytes
 * and each pass takes max(FLOPs at the GEMM rate, bytes at the HBM rate).
 *
 * FP8-LM's gradients (an FP8 main gradient with a per-tensor scale): the
 * weight-gradient GEMMs accumulate into an FP32 staging buffer, which is then
 * committed once per step — zeroed before the backward (4), read for its amax
 * (4), read again by the cast (4) and written as the FP8 gradient (1): 12 + b
 * bytes per element for a b-byte gradient; nothing for a gradient kept in
 * FP32 or BF16 (the GEMM accumulates into it in place).
 *
 * FP8-LM's optimizer (scaled master, m or v: MS-AMP's two-kernel scheme): the
 * new states' scales need their amax before anything is stored, so a first
 * pass reads gradient, master, m and v and computes the update only for the
 * amax; the second pass reads them again and stores — one more read of all
 * four than a one-pass AdamW. */
#ifndef FP8PLAN_PLANNER_PLAN_BYTES_H
#define FP8PLAN_PLANNER_PLAN_BYTES_H

#include "planner/recipe.h"

/* Bytes of the materialized attention core, one layer, `score_elems` = B·H·T·T
 * (per rank: tokens · keys · heads on it), activations of act_bytes. */
double pb_attn_mat_bytes_fwd(double score_elems, double act_bytes);
double pb_attn_mat_bytes_bwd(double score_elems, double act_bytes);

/* A pass bound by compute or memory, whichever takes longer. */
double pb_roofline_s(double flops, double flop_rate, double bytes, double bytes_rate);

/* Bytes of committing `elems` weight-gradient elements per step into a main
 * gradient of dtype grad: (12 + b)·elems for FP8, else 0. */
double pb_grad_commit_bytes(double elems, Dtype grad);

/* 1 when a state set's optimizer updates its working weight in place (no master: MS-AMP O1), reading and writing
 * it as it would a master. */
int pb_optim_inplace_weight(const StateSet *s);

/* 1 when a state set's optimizer needs two passes (a scaled master, m or v; or a scaled weight it updates in
 * place: the new scale comes from the new weight's amax before any element is stored). */
int pb_optim_two_pass(const StateSet *s);

/* The extra bytes of the second pass: one more read of gradient, master, m and
 * v (their bytes on this GPU) when two passes are needed, else 0. */
double pb_optim_second_pass_bytes(const StateSet *s, double grad, double master, double m, double v);

#endif
