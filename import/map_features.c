/* import/map_features.c — the precision-aware optimizer, CUDA graphs and fine-grained activation offloading
 * (see map_features.h). */
#include "import/map_features.h"

#include <stdio.h>
#include <string.h>

#include "planner/layout.h"

#define TRY(x)               \
    do {                     \
        Status st_ = (x);    \
        if (st_) return st_; \
    } while (0)

enum { DT_FP32 = 0, DT_BF16, DT_FP16, DT_FP8, DT_COUNT_ };
static const char *const dt_names[DT_COUNT_] = {"fp32", "bf16", "fp16", "fp8"};

static const char *const dt_args[FEAT_DTYPES_] = {"--main-grads-dtype", "--main-params-dtype", "--exp-avg-dtype",
                                                  "--exp-avg-sq-dtype"};

/* Megatron-LM's choices (fp32, bf16, fp16, fp8), PyTorch's names, and Megatron-Bridge's YAML dump of a torch.dtype
 * (its _target_: torch.bfloat16; _torch_dtype_representer in src/megatron/bridge/utils/yaml_utils.py at v0.2.0); fp8
 * is torch.uint8 in arguments.py's dtype_map. -1: none of them. */
static int dtype_of(const char *v)
{
    static const struct {
        const char *name;
        int dt;
    } names[] = {{"fp32", DT_FP32}, {"float32", DT_FP32},  {"torch.float32", DT_FP32},
                 {"bf16", DT_BF16}, {"bfloat16", DT_BF16}, {"torch.bfloat16", DT_BF16},
                 {"fp16", DT_FP16}, {"float16", DT_FP16},  {"torch.float16", DT_FP16},
                 {"fp8", DT_FP8},   {"uint8", DT_FP8},     {"torch.uint8", DT_FP8}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(v, names[i].name)) return names[i].dt;
    return -1;
}

static int switch_on(const ImportKv *kv) { return import_true(kv->val) != 0; }

/* One enum of Megatron-Bridge's dumped scope list (_enum_representer, yaml_utils.py at v0.2.0): its value (CudaGraphScope in megatron/core/transformer/enums.py at
 * core_v0.16.0: full_iteration 1, attn 2, mlp 3, moe 4, moe_router 5, moe_preprocess 6, mamba 7) as its name. */
static Status scope_item(ImportResult *r, const ImportKv *kv, ImportFeatures *f, Err *e)
{
    static const char *const names[] = {"",    "full_iteration", "attn",           "mlp",
                                        "moe", "moe_router",     "moe_preprocess", "mamba"};
    size_t k = strlen(kv->key);
    if (k > 7 && !strcmp(kv->key + k - 7, "._args_")) {
        int v = kv->val[0] >= '1' && kv->val[0] <= '7' && !kv->val[1] ? kv->val[0] - '0' : 0;
        if (!v)
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not a CudaGraphScope value (1-7)", r->path, kv->line,
                           kv->key, kv->val);
        size_t n = strlen(f->scope_items);
        snprintf(f->scope_items + n, sizeof f->scope_items - n, "%s%s", n ? "," : "", names[v]);
        return import_note(r, kv, 0, e, "CUDA graph scope %s (below)", names[v]);
    }
    if (k > 9 && !strcmp(kv->key + k - 9, "._target_") && !strstr(kv->val, "CudaGraphScope"))
        return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not a CudaGraphScope", r->path, kv->line, kv->key, kv->val);
    return import_note(r, kv, 1, e, "ignored: the enum's class and call (its value below)");
}

int import_features_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportFeatures *f, Status *st, Err *e)
{
    *st = ST_OK;
    for (int i = 0; i < FEAT_DTYPES_; i++)
        if (!strcmp(a, dt_args[i])) {
            int dt = dtype_of(kv->val);
            if (dt < 0)
                return *st = err_set(e, ST_DATA, "%s:%d: %s: '%s' is not fp32, bf16, fp16 or fp8", r->path, kv->line,
                                     kv->key, kv->val),
                       1;
            f->dt[i] = dt, f->dt_kv[i] = kv;
            return 1; /* noted after every setting */
        }
    if (!strcmp(a, "--use-precision-aware-optimizer")) return f->pao = switch_on(kv), f->pao_kv = kv, 1;
    if (!strcmp(a, "--enable-cuda-graph") || !strcmp(a, "--external-cuda-graph")) {
        if (!switch_on(kv)) return *st = import_note(r, kv, 1, e, "ignored: false"), 1;
        if (strstr(a, "enable"))
            f->enable_kv = kv;
        else
            f->external_kv = kv;
        return 1;
    }
    if (!strcmp(a, "--cuda-graph-impl")) {
        static const char *const impls[] = {"none", "local", "transformer_engine"};
        for (int i = 0; i < 3; i++)
            if (!strcmp(kv->val, impls[i])) return f->impl = i, f->impl_kv = kv, 1;
        return *st = err_set(e, ST_DATA, "%s:%d: %s: '%s' is not none, local or transformer_engine", r->path, kv->line,
                             kv->key, kv->val),
               1;
    }
    if (!strcmp(a, "--cuda-graph-scope")) return f->scope_kv = kv, 1;
    if (!strcmp(a, "--bridge-graph-scope-item")) return *st = scope_item(r, kv, f, e), 1;
    if (!strcmp(a, "--fine-grained-activation-offloading")) return f->offload = switch_on(kv), f->offload_kv = kv, 1;
    if (!strcmp(a, "--offload-modules")) return f->modules_kv = kv, 1;
    return 0;
}

/* The value of flag `flag` among the flags written so far (the last), or NULL. */
static const char *flag_val(const ImportResult *r, const char *flag)
{
    const char *v = NULL;
    for (int i = 0; i < r->argc; i++)
        if (!strcmp(r->argv[i], flag)) v = i + 1 < r->argc && strncmp(r->argv[i + 1], "--", 2) ? r->argv[i + 1] : "";
    return v;
}

static Status refuse(const ImportResult *r, const ImportKv *kv, Err *e, const char *why)
{
    return err_set(e, ST_DATA, "%s:%d: %s%s%s: %s", r->path, kv->line, kv->key, kv->val[0] ? " " : "", kv->val, why);
}

/* ---- the precision-aware optimizer --------------------------------------------------------------------------- */

/* The master and the gradients are the recipe's (models/recipes.csv): the file's dtypes are checked against it. The
 * Adam moments are Megatron's: fp32 unless the precision-aware optimizer says otherwise; where they differ from the
 * recipe's they become --moment-dtype (every parameter's, as TE's FusedAdam keeps them). Megatron-Core
 * (optimizer_config.py, core_v0.15.0): without the precision-aware optimizer every dtype must be fp32; with it, the
 * distributed optimizer and TE's FusedAdam are required, and when no FP8 recipe or delayed scaling is used TE keeps
 * the FP32 master weights as 16-bit remainders beside the BF16 weights (store_param_remainders, default True): 2
 * bytes a parameter, a master no recipe row has. The recipes' own moments: deepseek-v3 (blockwise) keeps its linear
 * weights' in bf16 (and the other parameters' in fp32, its other_params row megatron-bf16), every recipe the import
 * names besides in fp32. */
static Status optimizer(ImportResult *r, const ImportFeatures *f, Err *e)
{
    const char *recipe = flag_val(r, "--recipe"), *mg = flag_val(r, "--main-grad");
    int blockwise = recipe && !strcmp(recipe, "deepseek-v3");
    int m = f->dt[FEAT_EXP_AVG], v = f->dt[FEAT_EXP_AVG_SQ];
    for (int i = 0; i < FEAT_DTYPES_; i++) {
        const ImportKv *kv = f->dt_kv[i];
        if (!kv) continue;
        if (f->dt[i] && !f->pao)
            return refuse(r, kv, e, "not fp32 without --use-precision-aware-optimizer (Megatron-Core asserts it)");
        if (i == FEAT_PARAMS && f->dt[i]) {
            char why[96];
            snprintf(why, sizeof why, "%s master weights are in no recipe of models/recipes.csv", dt_names[f->dt[i]]);
            return refuse(r, kv, e, why);
        }
        if (i >= FEAT_EXP_AVG && (f->dt[i] == DT_FP16 || f->dt[i] == DT_FP8))
            return refuse(r, kv, e,
                          "TE's FusedAdam keeps fp16 and uint8 moments with a per-tensor scale each (its scaled "
                          "states): --moment-dtype sets unscaled fp32 or bf16 ones");
        if (i >= FEAT_EXP_AVG && m != v && m < DT_FP16 && v < DT_FP16) /* a scaled one: refused on its line */
            return refuse(r, kv, e, "m and v in two dtypes: --moment-dtype keeps both in one (fp32 or bf16)");
        if (i == FEAT_GRADS && f->dt[i] == DT_BF16 && mg && !strcmp(mg, "fp32"))
            return refuse(r, kv, e, "with FP32 gradient accumulation and reduction (Megatron-LM asserts fp32 there)");
    }
    if (f->pao && !flag_val(r, "--dist-opt"))
        return refuse(r, f->pao_kv, e, "needs the distributed optimizer (Megatron-Core asserts it)");
    if (f->pao && recipe && (!strcmp(recipe, "megatron-bf16") || !strncmp(recipe, "te-fp8", 6)) &&
        strncmp(recipe, "te-fp8-current", 14))
        return refuse(r, f->pao_kv, e,
                      "with BF16 or delayed-scaling FP8 TE keeps the FP32 master weights as 16-bit remainders "
                      "(store_param_remainders): a master no recipe of models/recipes.csv has");
    /* the moments as Megatron keeps them, written where the recipe's differ (blockwise: always, its other
     * parameters' fp32 beside the linears' bf16); no recipe: --recipe from the command line, the flag as given */
    const char *md = m == DT_BF16 ? "bf16" : "fp32";
    int write = blockwise || m == DT_BF16;
    if (write) TRY(import_flag(r, "--moment-dtype", md, e));
    if (f->pao_kv)
        TRY(import_note(r, f->pao_kv, !f->pao, e,
                        f->pao ? "the recipe's master, the moments below" : "ignored: false"));
    for (int i = 0; i < FEAT_DTYPES_; i++) {
        const ImportKv *kv = f->dt_kv[i];
        if (!kv) continue;
        if (i == FEAT_GRADS && f->dt[i] == DT_BF16) {
            TRY(import_flag(r, "--main-grad", "bf16", e));
            TRY(import_note(r, kv, 0, e, "--main-grad bf16"));
        } else if (i >= FEAT_EXP_AVG) {
            if (write)
                TRY(import_note(r, kv, 0, e, "--moment-dtype %s", md));
            else
                TRY(import_note(r, kv, 0, e, "%s, as the recipe %s keeps them", md, recipe ? recipe : "given"));
        } else {
            TRY(import_note(r, kv, 0, e, "%s, as the recipe %s keeps it", dt_names[f->dt[i]],
                            recipe ? recipe : "given"));
        }
    }
    return ST_OK;
}

/* ---- CUDA graphs ------------------------------------------------------------------------------------------------ */

/* The scopes the planner replays (planner/layout.h GRAPH_*); Megatron's others capture what its host-issue term does
 * not count. "full" or an empty list is the whole layer (TransformerConfig.__post_init__). */
static Status graph_scope(ImportResult *r, const ImportFeatures *f, unsigned *bits, Err *e)
{
    const ImportKv *kv = f->scope_kv;
    const char *val = f->scope_items[0] ? f->scope_items : kv ? kv->val : "";
    *bits = GRAPH_FULL; /* not given: Megatron's default "full", the whole layer */
    if (!kv || !val[0] || !strcmp(val, "full")) return ST_OK;
    char list[IMPORT_VAL_MAX];
    snprintf(list, sizeof list, "%s", val);
    for (char *p = list; *p; p++)
        if (*p == ' ') *p = ',';
    static const char *const unmodelled[][2] = {
        {"full_iteration", "a whole iteration captured (--cuda-graph-impl local) is not modelled"},
        {"mlp", "the dense layers' FFN: the planner counts the host issue of MoE layers only"},
        {"moe", "the MoE layer captured whole with drop-and-pad is not a scope the planner has (full, attn, "
                "moe_router, moe_preprocess)"},
        {"mamba", "Mamba layers are not modelled"},
        {"full", "full (the whole layer) with other scopes (Megatron-Core asserts it alone)"}};
    for (size_t i = 0; i < sizeof unmodelled / sizeof *unmodelled; i++) {
        size_t n = strlen(unmodelled[i][0]);
        for (const char *p = list; (p = strstr(p, unmodelled[i][0])); p += n)
            if ((p == list || p[-1] == ',') && (!p[n] || p[n] == ','))
                return err_set(e, ST_DATA, "%s:%d: %s: '%s': %s", r->path, kv->line, kv->key, unmodelled[i][0],
                               unmodelled[i][1]);
    }
    size_t at, len;
    if (graph_scope_parse(list, bits, &at, &len))
        return err_set(e, ST_DATA,
                       "%s:%d: %s: '%.*s' is not a CUDA graph scope (attn, moe_router, moe_preprocess, full)", r->path,
                       kv->line, kv->key, (int)len, list + at);
    /* local captures the router and the preprocessing together; TE needs the router for the preprocessing */
    if (f->impl == 1 && (*bits & (GRAPH_MOE_ROUTER | GRAPH_MOE_PREPROCESS)))
        *bits |= GRAPH_MOE_ROUTER | GRAPH_MOE_PREPROCESS;
    if ((*bits & GRAPH_MOE_PREPROCESS) && !(*bits & GRAPH_MOE_ROUTER))
        return err_set(e, ST_DATA, "%s:%d: %s: moe_preprocess without moe_router (Megatron-Core asserts it)", r->path,
                       kv->line, kv->key);
    return ST_OK;
}

static Status graphs(ImportResult *r, const ImportFeatures *f, int experts, Err *e)
{
    ImportFeatures g = *f;
    if (f->enable_kv && f->external_kv)
        return refuse(r, f->external_kv, e, "with --enable-cuda-graph (Megatron-LM asserts one of them)");
    if ((f->enable_kv || f->external_kv) && f->impl)
        return refuse(r, f->enable_kv ? f->enable_kv : f->external_kv, e,
                      "with --cuda-graph-impl (Megatron-LM asserts one of them)");
    if (f->enable_kv) g.impl = 1, g.impl_kv = f->enable_kv; /* arguments.py: deprecated, = --cuda-graph-impl local */
    if (f->external_kv) g.impl = 2, g.impl_kv = f->external_kv; /* = transformer_engine */
    if (!g.impl) {
        if (f->impl_kv) TRY(import_note(r, f->impl_kv, 1, e, "ignored: no CUDA graphs"));
        if (f->scope_kv) TRY(import_note(r, f->scope_kv, 1, e, "ignored: no CUDA graph implementation"));
        return ST_OK;
    }
    unsigned bits;
    TRY(graph_scope(r, &g, &bits, e));
    const ImportKv *kv = g.scope_kv ? g.scope_kv : g.impl_kv;
    if (!experts)
        return refuse(r, g.impl_kv, e,
                      "CUDA graphs on a model without experts: the planner models them as a MoE layer's host-issue "
                      "saving only");
    if ((bits & GRAPH_FULL) && !flag_val(r, "--moe-capacity"))
        return err_set(e, ST_DATA,
                       "%s:%d: %s: whole layers captured (%s) with dropless routing: Megatron-Core captures a MoE "
                       "layer whole only with a capacity factor and padding, and the planner plans it so only",
                       r->path, kv->line, kv->key, g.scope_kv ? "scope full" : "the default scope");
    char list[IMPORT_VAL_MAX];
    graph_scope_format(bits, list, sizeof list);
    TRY(import_flag(r, "--cuda-graph-scope", list, e));
    if (f->impl_kv) TRY(import_note(r, f->impl_kv, 0, e, "CUDA graphs: --cuda-graph-scope %s", list));
    if (f->enable_kv) TRY(import_note(r, f->enable_kv, 0, e, "CUDA graphs (local): --cuda-graph-scope %s", list));
    if (f->external_kv)
        TRY(import_note(r, f->external_kv, 0, e, "CUDA graphs (transformer_engine): --cuda-graph-scope %s", list));
    if (f->scope_kv) TRY(import_note(r, f->scope_kv, 0, e, "--cuda-graph-scope %s", list));
    return ST_OK;
}

/* ---- fine-grained activation offloading ---------------------------------------------------------------------- */

static Status offload(ImportResult *r, const ImportFeatures *f, int experts, Err *e)
{
    if (!f->offload) {
        if (f->offload_kv) TRY(import_note(r, f->offload_kv, 1, e, "ignored: false"));
        if (f->modules_kv)
            TRY(import_note(r, f->modules_kv, 1, e, "ignored: read under --fine-grained-activation-offloading"));
        return ST_OK;
    }
    const ImportKv *kv = f->modules_kv ? f->modules_kv : f->offload_kv;
    if (!f->modules_kv || !f->modules_kv->val[0])
        return refuse(r, kv, e, "no --offload-modules (Megatron-Core asserts a module)");
    if (!experts) return refuse(r, kv, e, "the planner offloads the routed experts' inputs; the model has no experts");
    char list[IMPORT_VAL_MAX];
    snprintf(list, sizeof list, "%s", f->modules_kv->val);
    for (char *p = list; *p; p++)
        if (*p == ' ') *p = ',';
    unsigned bits;
    size_t at, len;
    if (offload_mods_parse(list, &bits, &at, &len))
        return err_set(e, ST_DATA,
                       "%s:%d: %s: '%.*s' is not a module the planner offloads (expert_fc1, moe_act; the attention's "
                       "and the norms' inputs are not modelled)",
                       r->path, kv->line, kv->key, (int)len, list + at);
    if (flag_val(r, "--moe-fused-mlp")) /* core_v0.18.0 experts.py _is_fused_impl_supported: asserted */
        return refuse(r, f->offload_kv, e,
                      "with --use-transformer-engine-op-fuser: Megatron-Core's fused expert ops take no "
                      "fine-grained offloading of expert_fc1 or moe_act (core_v0.18.0 experts.py asserts it)");
    offload_mods_format(bits, list, sizeof list);
    TRY(import_flag(r, "--offload-modules", list, e));
    TRY(import_note(r, f->offload_kv, 0, e, "--offload-modules (below)"));
    return import_note(r, f->modules_kv, 0, e, "--offload-modules %s", list);
}

Status import_features_finish(ImportResult *r, const ImportFeatures *f, int experts, Err *e)
{
    TRY(optimizer(r, f, e));
    TRY(graphs(r, f, experts, e));
    return offload(r, f, experts, e);
}
