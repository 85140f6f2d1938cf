/* exec/ckpt/ckpt_layout.h — checkpoints of tensor-, pipeline- and expert-parallel
 * runs and their rank grids (format version 8; the one-model format, version 7,
 * is exec/ckpt/ckpt.h's).
 *
 * A TP rank holds slices of the linears, embedding and head, a PP rank one
 * stage's layers (and its own copy of a tied head), an EP rank its E/ep routed
 * experts (their states, FP8 copies, block scales and scaling records) beside
 * the rest of the model: no rank holds the model whole, and the parts are not
 * gathered into the one-rank layout. The data-parallel ranks beside them (a
 * grid of tp x dp x pp ranks, the DP ranks regrouped as ep x edp for the
 * experts) hold what their place's first rank holds, except the shards of a
 * sharded optimizer state. So the file keeps one part per place: a distinct
 * (stage, tp_rank, ep_rank). The expert side folds over a stage's tp x dp
 * ranks ep fastest (exec/model/model_groups.c), so a stage's rank `within` =
 * tp_rank + tp·dp_rank holds tp_rank = within mod tp and ep_rank = within mod
 * ep, and its places are its first L = lcm(tp, ep) ranks (tp 1: dp_rank =
 * ep_rank < ep; ep 1: the TP group; tp 2 x ep 2: ranks 0 and 1, TP ranks that
 * are EP ranks 0 and 1 too). Each place's rank writes the one-model checkpoint
 * of what it holds (its own shape, tensors, scaling banks and records, step,
 * data position; a sharded state's record the whole state of its group — the
 * DP group, the routed experts' EDP group — gathered there, as exec/ckpt/ckpt.h
 * writes it for data parallelism alone; with --ep every EP rank's place
 * gathers the dense states too, so each part is whole):
 *   "FP8PCKPT", u32 version 8, u32 tp, u32 pp, u32 dp, u32 ep,
 *   u32 parts = pp·lcm(tp, ep), then for part i = stage·lcm(tp, ep) + within
 *   (world rank order), i = 0 .. parts − 1: u64 bytes and that part's
 *   version-7 image (its own magic .. checksum), and a final u64 FNV-1a of
 *   everything before it. With tp or ep 1 that is parts = tp·pp·ep and part
 *   i = (stage·ep + ep_rank)·tp + tp_rank (versions 5 and 6, whose images
 *   held a sigmoid router's bias as a parameter, are refused).
 * Rank 0 gathers the parts and writes the file atomically. Every rank reads
 * the file (checksum over all of it) and restores the part of its place
 * (stage, within mod lcm(tp, ep)) through the version-7 loader, which checks it against the
 * rank's model (the experts it holds included) and takes the rank's own shard
 * of a sharded record. A checkpoint resumes only with the layout that wrote
 * it: a version-8 file in a run of another --tp/--pp/dp/--ep, or a version-7
 * file in a TP/PP/EP run, is refused naming both layouts; another version
 * (3: every rank's part, before grids; 2 and 4: before the experts' fields;
 * 5 and 6: before a sigmoid router's bias became a buffer) is refused naming
 * the versions this fp8plan reads.
 *
 * Version 9: expert tensor parallelism (--etp > 1, exec/model/model_moe_etp.c). The expert side folds a stage's
 * ranks etp x ep x edp, etp fastest, so rank `within` holds ETP rank within mod etp and EP rank ⌊within / etp⌋
 * mod ep: the expert place repeats with period ep·etp, and a stage's places are its first L = lcm(tp, ep·etp)
 * ranks, each part that rank's one-model image (its experts' ETP shards: FC1's gate and up rows, FC2's columns of
 * its Fe/etp; their master, Adam states, FP8 copies and scaling records; a sharded state's record gathered over
 * its EDP group, the ranks ep·etp apart holding the same shard). The header gains u32 etp after ep:
 *   "FP8PCKPT", u32 version 9, u32 tp, u32 pp, u32 dp, u32 ep, u32 etp, u32 parts = pp·L, then the parts and
 *   the checksum as version 8's.
 * A run at etp 1 writes version 8 (its file is version 8's in every byte); both are read, version 8 as etp 1. */
#ifndef FP8PLAN_EXEC_CKPT_LAYOUT_H
#define FP8PLAN_EXEC_CKPT_LAYOUT_H

#include <stddef.h>

#include "exec/backend/data.h"
#include "exec/model/model.h"

enum {
    CKPT_LAYOUT_VERSION = 8,
    CKPT_ETP_VERSION = 9
}; /* 4: one part per TP x PP place, dp in the header; 6: x EP, ep in the header;
                                     8: parts of one-model version 7; 9: x ETP, etp in the header */

/* 1 when m is a TP, PP, EP or ETP rank (its checkpoint is a layout checkpoint). */
int ckpt_layout(const Model *m);

/* 1 when rank j of c (m's DP or EDP group: a sharded state's group, model_shard_group) writes a part of m's
 * checkpoint (a layout one, or at tp = pp = ep = 1 the one-model image rank 0 writes): that rank gathers the
 * group's shards of each sharded state into its part. */
int ckpt_layout_root(const Model *m, const Comm *c, int j);

/* Every rank calls it (rank 0 with the path, the others with NULL): the parts
 * gathered on rank 0, which writes the file atomically. */
Status ckpt_layout_save(const char *path, Model *m, const DataState *data, Err *e);

/* The version of the file at path (0 when it cannot be opened or is not a
 * checkpoint: the loader then says why); ST_DATA naming both layouts when the
 * file's layout is not this run's. */
Status ckpt_layout_peek(const char *path, const Model *m, uint32_t *version, Err *e);

/* Restore this rank's part of a layout file (after ckpt_layout_peek). */
Status ckpt_layout_load(const char *path, Model *m, DataState *data, Err *e);

/* From exec/ckpt/ckpt.c: m's one-model image in memory (malloc'd, *len bytes; a
 * sharded state's shards gathered from m's DP group, whose other ranks call
 * ckpt_hand_shards meanwhile), and the restore of such an image (path names
 * the file in messages). */
Status ckpt_image(Model *m, const DataState *data, char **img, size_t *len, Err *e);
Status ckpt_hand_shards(Model *m, Err *e);
Status ckpt_load_image(const char *path, const void *img, size_t len, Model *m, DataState *data, Err *e);

#endif
