/* import/map_torchtitan.c — a torchtitan job TOML ([model], [parallelism], [training], [float8] /
 * [quantize.linear.float8], [activation_checkpoint], [compile]) to fp8plan's plan flags.
 *
 * torchtitan names its model by name and flavor (the dimensions live in its Python model registry): the
 * catalog row is name-flavor in lower case (llama3 + 8B = llama3-8b). The stack is the torchtitan row of
 * models/stacks.csv (FSDP2, torch.compile, torchao float8); FSDP shards weights, gradients and optimizer
 * state over the data-parallel shard group (--zero 3), and without [compile] enable the kernels are eager. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "import/import.h"

#define TRY(x)               \
    do {                     \
        Status st_ = (x);    \
        if (st_) return st_; \
    } while (0)

typedef struct {
    const ImportKv *name, *flavor, *shard, *replicate, *gbs, *ac_mode, *ac_opt, *compile, *components, *converters,
        *recipe, *fsdp_ag;
} Tt;

static int list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, item, n)) return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

static Status u32_flag(ImportResult *r, const ImportKv *kv, const char *flag, Err *e)
{
    unsigned v;
    TRY(import_u32(r, kv, 1, 1u << 20, &v, e));
    char s[16];
    snprintf(s, sizeof s, "%u", v);
    TRY(import_flag(r, flag, s, e));
    return import_note(r, kv, 0, e, "%s %u", flag, v);
}

/* torchtitan's MoE flavors whose catalog row has another name: {name-flavor, row, why} (torchtitan
 * models/deepseek_v3 and models/llama4 at 238fa995: DeepSeek-V3 671B without the MTP module torchtitan does not
 * build; Llama 4 17Bx16E is Scout). Qwen3's 30B-A3B and 235B-A22B are their rows' names already. */
static const char *const aliases[][3] = {
    {"deepseek_v3-671b", "deepseek-v3-nomtp", "DeepSeek-V3 without MTP: torchtitan builds none"},
    {"llama4-17bx16e", "llama4-scout", "Llama 4 Scout, 17B active x 16 experts"},
};

Status import_map_torchtitan(const ImportKvList *kv, ImportResult *r, Err *e)
{
    Tt t;
    memset(&t, 0, sizeof t);
    TRY(import_flag(r, "--stack", "torchtitan", e));
    static const char *const direct[][2] = {
        {"parallelism.tensor_parallel_degree", "--tp"},
        {"parallelism.pipeline_parallel_degree", "--pp"},
        {"parallelism.context_parallel_degree", "--cp"},
        {"parallelism.expert_parallel_degree", "--ep"},
        {"parallelism.expert_tensor_parallel_degree", "--etp"},
        {"training.local_batch_size", "--mbs"},
        {"training.batch_size", "--mbs"},
        {"training.seq_len", "--seq"},
    };
    for (size_t i = 0; i < kv->n; i++) {
        const ImportKv *k = &kv->kv[i];
        int done = 0;
        for (size_t j = 0; j < sizeof direct / sizeof *direct && !done; j++)
            if (!strcmp(k->key, direct[j][0])) {
                TRY(u32_flag(r, k, direct[j][1], e));
                done = 1;
            }
        if (done) continue;
        const ImportKv **slot =
            !strcmp(k->key, "model.name")                                   ? &t.name
            : !strcmp(k->key, "model.flavor")                               ? &t.flavor
            : !strcmp(k->key, "parallelism.data_parallel_shard_degree")     ? &t.shard
            : !strcmp(k->key, "parallelism.data_parallel_replicate_degree") ? &t.replicate
            : !strcmp(k->key, "training.global_batch_size")                 ? &t.gbs
            : !strcmp(k->key, "activation_checkpoint.mode")                 ? &t.ac_mode
            : !strcmp(k->key, "activation_checkpoint.selective_ac_option")  ? &t.ac_opt
            : !strcmp(k->key, "compile.enable")                             ? &t.compile
            : !strcmp(k->key, "compile.components")                         ? &t.components
            : !strcmp(k->key, "model.converters")                           ? &t.converters
            : !strcmp(k->key, "float8.recipe_name") || !strcmp(k->key, "quantize.linear.float8.recipe_name") ? &t.recipe
            : !strcmp(k->key, "float8.enable_fsdp_float8_all_gather") ||
                    !strcmp(k->key, "quantize.linear.float8.enable_fsdp_float8_all_gather")
                ? &t.fsdp_ag
                : NULL;
        if (slot) {
            *slot = k;
            continue;
        }
        if (!strcmp(k->key, "parallelism.enable_async_tensor_parallel")) {
            if (import_true(k->val) == 1) {
                TRY(import_flag(r, "--overlap-tp", "on", e));
                TRY(import_note(r, k, 0, e, "--overlap-tp on"));
            } else {
                TRY(import_note(r, k, 1, e, "ignored: false (the stack's default)"));
            }
            continue;
        }
        if (!strcmp(k->key, "training.mixed_precision_param") && strcmp(k->val, "bfloat16"))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s': only bfloat16 parameters are modelled", r->path, k->line,
                           k->key, k->val);
        if (!strcmp(k->key, "training.mixed_precision_reduce") && strcmp(k->val, "float32")) {
            if (strcmp(k->val, "bfloat16"))
                return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not float32 or bfloat16", r->path, k->line, k->key,
                               k->val);
            TRY(import_flag(r, "--main-grad", "bf16", e));
            TRY(import_note(r, k, 0, e, "--main-grad bf16"));
            continue;
        }
        TRY(import_note(r, k, 1, e, "ignored: not modelled"));
    }
    /* the model: a catalog row by name and flavor */
    if (t.name && t.flavor) {
        int n = snprintf(r->model_name, sizeof r->model_name, "%s-%s", t.name->val, t.flavor->val);
        if (n < 0 || (size_t)n >= sizeof r->model_name)
            return err_set(e, ST_DATA, "%s:%d: model.flavor: '%s-%s' is too long a model name", r->path, t.flavor->line,
                           t.name->val, t.flavor->val);
        for (char *p = r->model_name; *p; p++) *p = (char)tolower((unsigned char)*p);
        r->model_line = t.flavor->line;
        const char *how = "name-flavor";
        for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
            if (!strcmp(r->model_name, aliases[i][0])) {
                snprintf(r->model_name, sizeof r->model_name, "%s", aliases[i][1]);
                how = aliases[i][2];
            }
        TRY(import_note(r, t.name, 0, e, "--model %s (%s)", r->model_name, how));
        TRY(import_note(r, t.flavor, 0, e, "--model %s (%s)", r->model_name, how));
    } else if (t.name || t.flavor) {
        const ImportKv *k = t.name ? t.name : t.flavor;
        return err_set(e, ST_DATA, "%s:%d: %s without model.%s: the catalog model is name-flavor", r->path, k->line,
                       k->key, t.name ? "flavor" : "name");
    }
    /* data parallel: FSDP over the shard group */
    unsigned replicate = 1, shard = 0;
    if (t.replicate) {
        TRY(import_u32(r, t.replicate, 1, 1u << 20, &replicate, e));
        if (replicate != 1)
            return err_set(e, ST_DATA, "%s:%d: %s = %u: HSDP (replicated FSDP groups) is not modelled", r->path,
                           t.replicate->line, t.replicate->key, replicate);
        TRY(import_note(r, t.replicate, 0, e, "no replication (DP is the shard group)"));
    }
    if (t.shard && strcmp(t.shard->val, "-1")) {
        TRY(import_u32(r, t.shard, 1, 1u << 20, &shard, e));
        char s[16];
        snprintf(s, sizeof s, "%u", shard);
        TRY(import_flag(r, "--dp", s, e));
    }
    if (shard != 1) TRY(import_flag(r, "--zero", "3", e));
    if (t.shard && shard == 1)
        TRY(import_note(r, t.shard, 0, e, "--dp 1 (no FSDP)"));
    else if (t.shard && shard)
        TRY(import_note(r, t.shard, 0, e, "--dp %u --zero 3 (FSDP)", shard));
    else if (t.shard)
        TRY(import_note(r, t.shard, 0, e, "--zero 3 (FSDP over the GPUs TP x PP x CP leave: --gpus N)"));
    if (t.gbs && strcmp(t.gbs->val, "-1")) {
        TRY(u32_flag(r, t.gbs, "--gbs", e));
    } else {
        r->gbs_per_dp = 1;
        if (t.gbs) TRY(import_note(r, t.gbs, 0, e, "--gbs = mbs x DP (no accumulation)"));
    }
    /* activation checkpointing */
    if (t.ac_mode) {
        const char *rc = NULL;
        if (!strcmp(t.ac_mode->val, "none") || !strcmp(t.ac_mode->val, "full")) {
            rc = t.ac_mode->val;
        } else if (!strcmp(t.ac_mode->val, "selective")) {
            const char *opt = t.ac_opt ? t.ac_opt->val : "2";
            if (!strcmp(opt, "op"))
                rc = "op";
            else if (!strcmp(opt, "1"))
                rc = "full";
            else
                return err_set(e, ST_DATA,
                               "%s:%d: activation_checkpoint.selective_ac_option = %s: checkpointing every "
                               "%s-th block is not modelled (op or 1)",
                               r->path, t.ac_opt ? t.ac_opt->line : t.ac_mode->line, opt, opt);
        } else {
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not none, selective or full", r->path, t.ac_mode->line,
                           t.ac_mode->key, t.ac_mode->val);
        }
        TRY(import_flag(r, "--recompute", rc, e));
        TRY(import_note(r, t.ac_mode, 0, e, "--recompute %s", rc));
        if (t.ac_opt) TRY(import_note(r, t.ac_opt, 0, e, "--recompute %s", rc));
    }
    /* compile: the stack row assumes it; without it the kernels are eager and SwiGLU saves 8F */
    /* compile.components lists what is compiled (torchtitan's default: model and loss); without "model" the
     * layers' kernels are eager */
    int model_compiled = !t.components || list_has(t.components->val, "model");
    if (t.components)
        TRY(import_note(r, t.components, 0, e, model_compiled ? "the model compiled" : "the model eager (not listed)"));
    if (!t.compile || import_true(t.compile->val) != 1 || !model_compiled) {
        TRY(import_flag(r, "--kernels", "eager", e));
        TRY(import_flag(r, "--swiglu", "unfused", e));
        if (t.compile) TRY(import_note(r, t.compile, 0, e, "--kernels eager --swiglu unfused"));
    } else {
        TRY(import_note(r, t.compile, 0, e, "the stack's compiled kernels"));
    }
    /* recipe: float8 when a converter names it; another converter (MX, FP8 grouped GEMMs for the experts alone)
     * is a recipe recipes.csv does not have */
    for (const char *p = t.converters ? t.converters->val : ""; *p;) {
        size_t k = strcspn(p, ",");
        if (!(k == 6 && !strncmp(p, "float8", 6)) && !(k == 22 && !strncmp(p, "quantize.linear.float8", 22)))
            return err_set(e, ST_DATA,
                           "%s:%d: %s: '%.*s': only float8 (quantize.linear.float8) converters are a recipe of "
                           "recipes.csv",
                           r->path, t.converters->line, t.converters->key, (int)k, p);
        p += k + (p[k] == ',');
    }
    /* recipe: float8 when a converter names it */
    int fp8 = t.converters &&
              (list_has(t.converters->val, "float8") || list_has(t.converters->val, "quantize.linear.float8"));
    const char *recipe = "bf16";
    if (fp8) {
        const char *rn = t.recipe ? t.recipe->val : "tensorwise";
        int ag = t.fsdp_ag && import_true(t.fsdp_ag->val) == 1;
        if (!strcmp(rn, "tensorwise"))
            recipe = ag ? "torchao-fp8-tensorwise-ag" : "torchao-fp8-tensorwise";
        else if (!strcmp(rn, "rowwise"))
            recipe = "torchao-fp8-rowwise";
        else
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not tensorwise or rowwise", r->path, t.recipe->line,
                           t.recipe->key, rn);
        if (t.recipe) TRY(import_note(r, t.recipe, 0, e, "--recipe %s", recipe));
    } else if (t.recipe) {
        TRY(import_note(r, t.recipe, 1, e, "ignored: no float8 converter in model.converters"));
    }
    if (t.fsdp_ag)
        TRY(import_note(r, t.fsdp_ag, !fp8, e, fp8 ? "--recipe %s" : "ignored: no float8 converter", recipe));
    if (t.converters) {
        TRY(import_note(r, t.converters, 0, e, "--recipe %s", recipe));
        r->recipe_line = t.converters->line;
        snprintf(r->recipe_key, sizeof r->recipe_key, "%s", t.converters->key);
    }
    return import_flag(r, "--recipe", recipe, e);
}
