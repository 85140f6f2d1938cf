/* exec/ckpt/ckpt.h — checkpoints: save and resume a training run exactly.
 *
 * A checkpoint holds every persistent tensor of the model — working weights,
 * FP8 weight copies, master weights, main gradients, Adam m and v, and the
 * scaling state (scales, scale_inv, amax histories, the scales of FP8-LM's
 * states) — byte for byte, plus the step count, the hyper-parameters and the
 * data stream's position. Restoring it into a model of the same recipe and
 * shape continues the run bit-identically.
 *
 * Format (little-endian): "FP8PCKPT", u32 version, the recipe (name and every
 * field), the model's columns and run sizes (with experts, latent attention and
 * MTP: their columns, the expert-parallel ranks and the first expert this rank
 * holds), the hyper-parameters, f32 MTP weight, u32 step, the DataState, u32
 * tensor count, then per tensor {u32 term, u32 dtype, i32 layer, u64 bytes,
 * name (32 bytes), data}, and a final u64 FNV-1a checksum of everything
 * before it. Written through OutFile (temp file + rename): a failed or
 * interrupted save never leaves a partial checkpoint.
 *
 * Several ranks: every rank holds the same state except the sharded ones
 * (ZeRO-1 / the distributed optimizer: exec/model/model_shard.c), so rank 0
 * writes the file alone; a sharded state's record is the whole state of its
 * class (E elements: every rank's shard gathered on rank 0 in rank order, the
 * last shard's padding left out), written under the shard's name. On resume
 * every rank reads the file and takes its own elements [r·S, min((r+1)·S, E))
 * (r: the rank in the DP group).
 *
 * Tensor-, pipeline- and expert-parallel ranks, with or without data-parallel
 * ranks beside them: one file with a part per place, a distinct (stage, TP
 * rank, EP rank) (format version 8, exec/ckpt/ckpt_layout.h), resumed with the
 * same layout only; a sharded state's record there is its group's (the DP
 * group's; the routed experts' EDP group's) whole state.
 *
 * Loading refuses, with a message naming the file and the difference, a
 * checkpoint of another recipe, shape or hyper-parameters, a truncated or
 * corrupted file (checksum), and an unknown format or version. */
#ifndef FP8PLAN_EXEC_CKPT_H
#define FP8PLAN_EXEC_CKPT_H

#include "exec/backend/data.h"
#include "exec/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CKPT_MAGIC "FP8PCKPT"
enum {
    CKPT_VERSION = 7
}; /* 2: the planner's ids and model columns (norm, mlp, positions, KV heads); 5: the MoE,
                              latent-attention, q/k-norm and MTP columns, the expert-parallel place, the MTP weight;
                              7: a sigmoid router's bias one FP32 buffer (router_bias), no parameter with states */

/* 1 when every rank takes part in a save: sharded states (m->shard_ways > 1) or TP/PP/EP ranks (with or
 * without DP ranks beside them). */
int ckpt_every_rank(const Model *m);

/* ST_USAGE when m's state cannot be kept in a checkpoint: delayed scaling whose amaxes are not
 * reduced over the data-parallel ranks (amax_reduce "tp" or "none" at dp > 1) leaves each DP rank its
 * own amax histories, scales and FP8 copies, and a checkpoint holds one copy per DP group.
 * ckpt_save and ckpt_load call it; a run checks it before its steps. */
Status ckpt_check(const Model *m, Err *e);

/* When ckpt_every_rank(m) every rank calls it: rank 0 with the path, the others with NULL (they
 * only hand their shards or parts over). Otherwise rank 0 alone. */
Status ckpt_save(const char *path, Model *m, const DataState *data, Err *e);

/* Restore into m (built with the same recipe, shape and hyper-parameters);
 * *data receives the stream position to continue from. ST_NOINPUT when the
 * file cannot be opened, ST_DATA for every mismatch or corruption. m is
 * unchanged unless the whole file verified. */
Status ckpt_load(const char *path, Model *m, DataState *data, Err *e);

#ifdef __cplusplus
}
#endif
#endif
