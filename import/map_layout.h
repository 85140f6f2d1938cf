/* import/map_layout.h — Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout; Megatron-Bridge's
 * model.pipeline_model_parallel_layout, a string or a list of lists of layer names) for the Megatron mapper
 * (import/map_megatron.c): the pipeline's virtual chunks, read as Megatron-Core reads them
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py at core_v0.15.0: "E", "t", "m", "L" are the
 * embedding, a decoder layer, an MTP layer and the loss; "|" ends a chunk; "(...)*n" and "x*n" repeat; commas
 * are cosmetic; chunk c runs on pipeline rank c mod pp as its virtual stage c / pp), and mapped to what the planner
 * can say: --vpp (chunks / pp), the first and last ranks' decoder layers (--first-stage-layers,
 * --last-stage-layers) with the middle ranks sharing the rest evenly, and --custom-pp-layout (layers placed chunk
 * by chunk). A layout the planner cannot say (unequal middle ranks, an end rank without decoder layers) is
 * refused naming the line and the counts. */
#ifndef FP8PLAN_IMPORT_MAP_LAYOUT_H
#define FP8PLAN_IMPORT_MAP_LAYOUT_H

#include "import/import.h"

enum { IMPORT_LAYOUT_LIST_MAX = 8192 }; /* letters of a list-form layout, with its '|' */

typedef struct {
    const ImportKv *kv;      /* the string form, or the first chunk of the list form */
    const ImportKv *list_kv; /* the list form's own key (its chunks come before it) */
    char list[IMPORT_LAYOUT_LIST_MAX];
    size_t nlist;    /* letters in list */
    unsigned nvs;    /* --num-virtual-stages-per-pipeline-rank */
    unsigned nchunk; /* list-form chunks seen */
    /* settings Megatron-Core refuses beside a layout (TransformerConfig.__post_init__, arguments.py) */
    const ImportKv *first_kv, *last_kv, *vstage_kv, *nvs_kv, *vpp_kv;
    /* --account-for-embedding/loss-in-pipeline-split (switched on): the embedding / loss count as a layer each in
     * an even split (TransformerConfig at core_v0.15.0), so the end ranks hold one layer fewer */
    const ImportKv *emb_kv, *loss_kv;
} ImportLayout;

/* 1 when `a` (a Megatron-LM argument name) is read here: *st says whether it was read. Also remembers, without
 * taking them (returns 0), the stage-count and virtual-stage settings a layout excludes or must agree with. */
int import_layout_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportLayout *l, Status *st, Err *e);

/* After every setting: check the layout against pp (the file's, 1 when not given), its layers and MTP layers
 * (have_dims: the file gives the model's dimensions) and write the flags. */
Status import_layout_finish(ImportResult *r, const ImportLayout *l, unsigned pp, int have_dims, unsigned layers,
                            unsigned mtp, Err *e);

#endif
