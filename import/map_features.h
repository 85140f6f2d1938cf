/* import/map_features.h — Megatron-Core features that change a run's memory or time beyond its layout and recipe,
 * for the Megatron mapper (import/map_megatron.c), each read as Megatron-Core reads it and mapped to the planner's
 * option or refused (exit 65) where the planner has none:
 *   - the precision-aware optimizer (--use-precision-aware-optimizer, --main-grads-dtype, --main-params-dtype,
 *     --exp-avg-dtype, --exp-avg-sq-dtype; Megatron-Bridge's optimizer.<field>): megatron/core/optimizer/
 *     optimizer_config.py and __init__.py at core_v0.15.0;
 *   - CUDA graphs (--cuda-graph-impl, the deprecated --enable-cuda-graph / --external-cuda-graph, --cuda-graph-scope;
 *     Megatron-Bridge's model.<field>): TransformerConfig (megatron/core/transformer/transformer_config.py) and
 *     arguments.py at core_v0.16.0;
 *   - fine-grained activation offloading (--fine-grained-activation-offloading --offload-modules): TransformerConfig
 *     at core_v0.16.0. */
#ifndef FP8PLAN_IMPORT_MAP_FEATURES_H
#define FP8PLAN_IMPORT_MAP_FEATURES_H

#include "import/import.h"

enum { FEAT_GRADS = 0, FEAT_PARAMS, FEAT_EXP_AVG, FEAT_EXP_AVG_SQ, FEAT_DTYPES_ };

typedef struct {
    int pao;                          /* --use-precision-aware-optimizer */
    int dt[FEAT_DTYPES_];             /* FEAT_* dtypes as DT_* (map_features.c); 0: fp32, the default */
    int impl;                         /* CUDA graphs: 0 none, 1 local, 2 transformer_engine */
    int offload;                      /* --fine-grained-activation-offloading */
    char scope_items[IMPORT_VAL_MAX]; /* Megatron-Bridge's list of CudaGraphScope enums, as names */
    const ImportKv *pao_kv, *dt_kv[FEAT_DTYPES_], *impl_kv, *enable_kv, *external_kv, *scope_kv, *offload_kv,
        *modules_kv;
} ImportFeatures;

/* 1 when `a` (a Megatron-LM argument name) is one of these: *st says whether it was read. */
int import_features_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportFeatures *f, Status *st, Err *e);

/* After the recipe and the model (r->argv holds --recipe, --dist-opt, --main-grad, --moe-capacity when the file
 * gave them): check the features against them and write the flags. experts: the file's model has experts (1), has
 * none (0), or gives no dimensions (-1: the planner checks the flags against --model's). */
Status import_features_finish(ImportResult *r, const ImportFeatures *f, int experts, Err *e);

#endif
