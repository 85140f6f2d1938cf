/* exec/model/model_mtp.h — multi-token prediction's tensors and constants (exec/model/model_mtp.c; DeepSeek-V3
 * section 2.2, Megatron-Core's MultiTokenPredictionBlock): D sequential depths after the main model, depth k
 * (1-based) reading the embedding of token i+k and depth k−1's block output (the main model's for k = 1), its
 * cross-entropy against token i+k+1 with each sequence's last k positions masked. */
#ifndef FP8PLAN_EXEC_MODEL_MODEL_MTP_H
#define FP8PLAN_EXEC_MODEL_MODEL_MTP_H

#include <stdint.h>

/* Multi-token prediction: the weight lambda of the MTP loss in the objective. models.csv has no column for it;
 * DeepSeek-V3 trains with 0.3 for its first 10T tokens, then 0.1 (DeepSeek-V3 technical report, section 4.2,
 * "MTP loss weight"): a short run is the start of training, 0.3. Each of D depths' mean loss is weighted
 * lambda / D (the report's equation 25; Megatron-Core's mtp_loss_scaling_factor / mtp_num_layers). */
#define MODEL_MTP_WEIGHT 0.3f
/* The most depths the executor runs: --mtp-layers' bound (cli/cmd_run.c). */
#define MODEL_MTP_MAX 16

/* One depth's tensors (the last stage's): its tokens (token i+k at position i, the last k positions token 0)
 * and targets (token i+k+1), its per-token losses (the masked positions 0), enorm's input (the tokens'
 * embedding) and both norms' statistics; its block output, final norm and logits as the main model's. */
typedef struct {
    int32_t *tok, *tgt; /* (B·T) */
    float *losses;      /* (B·T), the masked positions 0 */
    void *emb;          /* (B·T, C) */
    float *e_mean, *e_rstd, *h_mean, *h_rstd;
    void *x; /* (B·T, C) the depth's block output: its final norm's input and the next depth's hnorm's */
    float *nf_mean, *nf_rstd;
    void *nf_out;  /* (B·T, C) */
    float *logits; /* (B·T, Vp) FP32, overwritten by d(logits) */
} MtpActs;

#endif
