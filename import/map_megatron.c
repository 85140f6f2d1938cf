/* import/map_megatron.c — Megatron-LM's arguments (megatron/training/arguments.py names) to fp8plan's
 * plan flags and, from --num-layers, --hidden-size and the rest, the model's dimensions.
 *
 * Megatron-LM's own defaults are the megatron-lm stack (models/stacks.csv: no sequence parallelism, no
 * overlap, FP32 main gradients with --bf16); each flag that switches one of them on maps to fp8plan's
 * option for it. The GPT defaults of arguments.py fill what the file leaves out: LayerNorm, GeLU, learned
 * absolute positions up to --max-position-embeddings, tied embeddings, linear biases, FFN 4h (SwiGLU:
 * int(4h x 2/3 / 64) x 64), KV channels h / heads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"
#include "import/map_features.h"
#include "import/map_layout.h"
#include "import/map_moe.h"

typedef struct {
    unsigned layers, hidden, ffn, heads, groups, kv_channels, vocab, maxpos, seq;
    int gqa, swiglu, untie, no_bias, qk_norm, rms, rope, nopos;
    int model_line;
    const char *tokenizer;
    unsigned tp, pp, cp, vpp, layers_per_vstage, mbs;
    const ImportKv *tp_kv, *pp_kv, *cp_kv, *vstage_kv;
    int bf16, fp8_param;
    const char *fp8_format, *fp8_recipe;
    const ImportKv *fp8_kv, *fp16_kv, *bf16_kv, *fp8_param_kv;
    const char *rc_gran, *rc_method;
    unsigned rc_layers;
    const ImportKv *rc_kv;
    unsigned nproc, nnodes;
    int nproc_line;
    int gbs_given;
    ImportMoe moe;
    ImportLayout layout;
    ImportFeatures feat;
} Mg;

#define TRY(x)               \
    do {                     \
        Status st_ = (x);    \
        if (st_) return st_; \
    } while (0)

/* A switch: given alone (or followed by a word that is not a value, in a script) is on; YAML's false is off. */
static int switch_on(const ImportKv *kv) { return import_true(kv->val) != 0; }

static Status flag_u32(ImportResult *r, const ImportKv *kv, const char *flag, unsigned lo, unsigned hi, unsigned *out,
                       Err *e)
{
    TRY(import_u32(r, kv, lo, hi, out, e));
    char v[16];
    snprintf(v, sizeof v, "%u", *out);
    TRY(import_flag(r, flag, v, e));
    return import_note(r, kv, 0, e, "%s %u", flag, *out);
}

static Status dim(ImportResult *r, const ImportKv *kv, Mg *m, const char *what, unsigned hi, unsigned *out, Err *e)
{
    TRY(import_u32(r, kv, 1, hi, out, e));
    if (!m->model_line || kv->line < m->model_line) m->model_line = kv->line;
    return import_note(r, kv, 0, e, "model %s %u", what, *out);
}

static Status needs_value(const ImportResult *r, const ImportKv *kv, Err *e)
{
    if (kv->val[0]) return ST_OK;
    return err_set(e, ST_DATA, "%s:%d: %s: no value (the file ends or another flag follows)", r->path, kv->line,
                   kv->key);
}

/* Settings that change the plan and that the planner does not model: refused, never dropped. */
static const char *const refused[][2] = {
    {"--fp4-format", "FP4 training is not modelled"},
    {"--fp4", "FP4 training is not modelled"},
    {"--cpu-offloading", "activation/weight offloading to the host is not modelled"},
    {"--cpu-offloading-num-layers", "activation/weight offloading to the host is not modelled"},
    {"--optimizer-cpu-offload", "optimizer offloading to the host is not modelled"},
};

static Status one(ImportResult *r, const ImportKv *kv, const char *a, Mg *m, Err *e)
{
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (!strcmp(a, refused[i][0]) && switch_on(kv) && strcmp(kv->val, "0"))
            return err_set(e, ST_DATA, "%s:%d: %s: %s", r->path, kv->line, kv->key, refused[i][1]);
    Status st;
    if (import_moe_arg(r, kv, a, &m->moe, &st, e)) return st;
    if (import_layout_arg(r, kv, a, &m->layout, &st, e)) return st;
    if (import_features_arg(r, kv, a, &m->feat, &st, e)) return st;
    import_src_arg(r, a, kv);
    /* model dimensions */
    if (!strcmp(a, "--num-layers")) return dim(r, kv, m, "layers", 100000, &m->layers, e);
    if (!strcmp(a, "--hidden-size")) return dim(r, kv, m, "hidden", 1u << 20, &m->hidden, e);
    if (!strcmp(a, "--ffn-hidden-size")) return dim(r, kv, m, "ffn_hidden", 1u << 22, &m->ffn, e);
    if (!strcmp(a, "--num-attention-heads")) return dim(r, kv, m, "heads", 65536, &m->heads, e);
    if (!strcmp(a, "--num-query-groups")) return dim(r, kv, m, "kv_heads", 65536, &m->groups, e);
    if (!strcmp(a, "--kv-channels")) return dim(r, kv, m, "head_dim", 65536, &m->kv_channels, e);
    if (!strcmp(a, "--vocab-size")) return dim(r, kv, m, "vocab", 1u << 26, &m->vocab, e);
    if (!strcmp(a, "--max-position-embeddings")) return dim(r, kv, m, "seq_len", 1u << 24, &m->maxpos, e);
    if (!strcmp(a, "--group-query-attention"))
        return m->gqa = switch_on(kv),
               import_note(r, kv, 0, e, "model kv_heads %s", m->gqa ? "from the query groups" : "= heads");
    if (!strcmp(a, "--swiglu"))
        return m->swiglu = switch_on(kv), import_note(r, kv, 0, e, "model mlp %s", m->swiglu ? "swiglu" : "gelu");
    if (!strcmp(a, "--untie-embeddings-and-output-weights"))
        return m->untie = switch_on(kv), import_note(r, kv, 0, e, "model tied_embeddings %s", m->untie ? "no" : "yes");
    if (!strcmp(a, "--disable-bias-linear"))
        return m->no_bias = switch_on(kv), import_note(r, kv, 0, e, "model linear_bias %s", m->no_bias ? "no" : "yes");
    if (!strcmp(a, "--qk-layernorm"))
        return m->qk_norm = switch_on(kv), import_note(r, kv, 0, e, "model qk_norm %s", m->qk_norm ? "yes" : "no");
    if (!strcmp(a, "--normalization")) {
        if (strcmp(kv->val, "LayerNorm") && strcmp(kv->val, "RMSNorm"))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not LayerNorm or RMSNorm", r->path, kv->line, kv->key,
                           kv->val);
        m->rms = !strcmp(kv->val, "RMSNorm");
        return import_note(r, kv, 0, e, "model norm %s", m->rms ? "rmsnorm" : "layernorm");
    }
    if (!strcmp(a, "--position-embedding-type")) {
        if (strcmp(kv->val, "learned_absolute") && strcmp(kv->val, "rope") && strcmp(kv->val, "none"))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not learned_absolute, rope or none", r->path, kv->line,
                           kv->key, kv->val);
        m->rope = !strcmp(kv->val, "rope"), m->nopos = !strcmp(kv->val, "none");
        return import_note(r, kv, 0, e, "model position %s", m->rope ? "rope" : m->nopos ? "none" : "learned");
    }
    if (!strcmp(a, "--use-rotary-position-embeddings"))
        return m->rope = switch_on(kv), import_note(r, kv, 0, e, "model position rope");
    if (!strcmp(a, "--tokenizer-type")) {
        m->tokenizer = kv->val;
        return import_note(r, kv, 0, e, "model vocab %s",
                           !strcmp(kv->val, "GPT2BPETokenizer") ? "50257 (GPT-2 BPE)" : "from --vocab-size");
    }
    /* layout */
    if (!strcmp(a, "--tensor-model-parallel-size"))
        return m->tp_kv = kv, flag_u32(r, kv, "--tp", 1, 1u << 20, &m->tp, e);
    if (!strcmp(a, "--pipeline-model-parallel-size"))
        return m->pp_kv = kv, flag_u32(r, kv, "--pp", 1, 1u << 20, &m->pp, e);
    if (!strcmp(a, "--context-parallel-size")) return m->cp_kv = kv, flag_u32(r, kv, "--cp", 1, 1u << 20, &m->cp, e);
    if (!strcmp(a, "--virtual-pipeline-model-parallel-size")) return flag_u32(r, kv, "--vpp", 1, 100000, &m->vpp, e);
    if (!strcmp(a, "--num-layers-per-virtual-pipeline-stage")) {
        m->vstage_kv = kv;
        TRY(import_u32(r, kv, 1, 100000, &m->layers_per_vstage, e));
        return import_note(r, kv, 0, e, "--vpp = layers / (pp x %u)", m->layers_per_vstage);
    }
    if (!strcmp(a, "--micro-batch-size")) return flag_u32(r, kv, "--mbs", 1, 1u << 20, &m->mbs, e);
    if (!strcmp(a, "--global-batch-size")) {
        unsigned g;
        m->gbs_given = 1;
        return flag_u32(r, kv, "--gbs", 1, 1u << 30, &g, e);
    }
    if (!strcmp(a, "--seq-length")) {
        TRY(dim(r, kv, m, "seq_len (without --max-position-embeddings)", 1u << 24, &m->seq, e));
        r->nnotes--; /* one note: the flag */
        return flag_u32(r, kv, "--seq", 1, 1u << 24, &m->seq, e);
    }
    if (!strcmp(a, "--first-pipeline-num-layers") || !strcmp(a, "--decoder-first-pipeline-num-layers")) {
        unsigned v;
        return flag_u32(r, kv, "--first-stage-layers", 1, 100000, &v, e);
    }
    if (!strcmp(a, "--last-pipeline-num-layers") || !strcmp(a, "--decoder-last-pipeline-num-layers")) {
        unsigned v;
        return flag_u32(r, kv, "--last-stage-layers", 1, 100000, &v, e);
    }
    if (!strcmp(a, "--make-vocab-size-divisible-by")) {
        unsigned v;
        return flag_u32(r, kv, "--vocab-pad", 1, 1u << 20, &v, e);
    }
    if (!strcmp(a, "--nproc_per_node") || !strcmp(a, "--nproc-per-node")) {
        TRY(import_u32(r, kv, 1, 1u << 20, &m->nproc, e));
        m->nproc_line = kv->line;
        return import_note(r, kv, 0, e, "GPUs per node (--gpus = nodes x %u)", m->nproc);
    }
    if (!strcmp(a, "--nnodes")) {
        TRY(import_u32(r, kv, 1, 1u << 20, &m->nnodes, e));
        return import_note(r, kv, 0, e, "nodes (--gpus = %u x GPUs per node)", m->nnodes);
    }
    /* switches that map to a plan option */
    if (!strcmp(a, "--sequence-parallel")) {
        if (!switch_on(kv)) return import_note(r, kv, 1, e, "ignored: false");
        TRY(import_flag(r, "--sp", NULL, e));
        return import_note(r, kv, 0, e, "--sp");
    }
    if (!strcmp(a, "--use-distributed-optimizer")) {
        if (!switch_on(kv)) return import_note(r, kv, 1, e, "ignored: false");
        TRY(import_flag(r, "--dist-opt", NULL, e));
        return import_note(r, kv, 0, e, "--dist-opt");
    }
    static const char *const onoff[][3] = {
        {"--overlap-grad-reduce", "--overlap-dp", "on"},
        {"--tp-comm-overlap", "--overlap-tp", "on"},
        {"--overlap-p2p-communication", "--overlap-pp", "1"},
        {"--no-gradient-accumulation-fusion", "--grad-acc-fusion", "off"},
        {"--accumulate-allreduce-grads-in-fp32", "--main-grad", "fp32"},
        {"--grad-reduce-in-bf16", "--main-grad", "bf16"},
        {"--use-flash-attn", "--attn", "flash2"},
    };
    for (size_t i = 0; i < sizeof onoff / sizeof *onoff; i++)
        if (!strcmp(a, onoff[i][0])) {
            if (!switch_on(kv)) return import_note(r, kv, 1, e, "ignored: false");
            TRY(import_flag(r, onoff[i][1], onoff[i][2], e));
            return import_note(r, kv, 0, e, "%s %s", onoff[i][1], onoff[i][2]);
        }
    if (!strcmp(a, "--overlap-param-gather"))
        return import_note(r, kv, 0, e, "part of --overlap-dp (the parameter all-gathers it hides)");
    if (!strcmp(a, "--attention-backend")) {
        static const char *const ab[][2] = {{"flash", "flash2"},
                                            {"fused", "cudnn"},
                                            {"unfused", "materialized"},
                                            {"local", "materialized"},
                                            {"auto", "te"}};
        for (size_t i = 0; i < sizeof ab / sizeof *ab; i++)
            if (!strcmp(kv->val, ab[i][0])) {
                TRY(import_flag(r, "--attn", ab[i][1], e));
                return import_note(r, kv, 0, e, "--attn %s", ab[i][1]);
            }
        return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not flash, fused, unfused, local or auto", r->path, kv->line,
                       kv->key, kv->val);
    }
    if (!strcmp(a, "--transformer-impl")) {
        if (strcmp(kv->val, "transformer_engine"))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s': only transformer_engine's kernels are modelled", r->path,
                           kv->line, kv->key, kv->val);
        return import_note(r, kv, 0, e, "the stack's kernels (te)");
    }
    /* precision and recipe */
    if (!strcmp(a, "--bf16"))
        return m->bf16 = switch_on(kv), m->bf16_kv = kv,
               import_note(r, kv, !m->bf16, e, m->bf16 ? "BF16 (recipe below)" : "ignored: false");
    if (!strcmp(a, "--fp16")) {
        if (switch_on(kv)) m->fp16_kv = kv;
        return import_note(r, kv, !switch_on(kv), e, switch_on(kv) ? "refused below" : "ignored: false");
    }
    if (!strcmp(a, "--fp8-format")) {
        TRY(needs_value(r, kv, e));
        if (strcmp(kv->val, "hybrid") && strcmp(kv->val, "e4m3"))
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not hybrid or e4m3", r->path, kv->line, kv->key, kv->val);
        m->fp8_format = kv->val, m->fp8_kv = kv;
        return import_note(r, kv, 0, e, "FP8 (recipe below)%s",
                           strcmp(kv->val, "e4m3") ? "" : "; E4M3 gradients: the same bytes as hybrid's E5M2");
    }
    if (!strcmp(a, "--bridge-mixed-precision")) { /* Megatron-Bridge's recipe names: bf16_mixed, fp16_mixed,
                                                     * bf16_with_fp8_{delayed,current}_scaling_mixed,
                                                     * bf16_with_mxfp8_mixed, bf16_with_fp8_subchannel_scaling_mixed */
        const char *v = kv->val;
        if (strstr(v, "fp16") && !strstr(v, "bf16")) {
            m->fp16_kv = kv;
            return import_note(r, kv, 0, e, "refused below");
        }
        m->bf16 = 1, m->bf16_kv = kv;
        if (strstr(v, "fp8")) {
            /* every FP8 recipe function but the subchannel (blockwise) one sets fp8_param_gather = True
             * (mixed_precision.py, v0.1.0rc4 to v0.4.2); a field given in the file overrides it */
            if (!m->fp8_param_kv) m->fp8_param = !strstr(v, "subchannel") && !strstr(v, "blockwise");
            m->fp8_format = "hybrid", m->fp8_kv = kv;
            m->fp8_recipe = strstr(v, "mxfp8")                                  ? "mxfp8"
                            : strstr(v, "current")                              ? "tensorwise"
                            : strstr(v, "subchannel") || strstr(v, "blockwise") ? "blockwise"
                            : strstr(v, "delayed")                              ? "delayed"
                                                                                : NULL;
            if (!m->fp8_recipe)
                return err_set(e, ST_DATA,
                               "%s:%d: %s: '%s' names no FP8 scaling fp8plan knows (delayed, current, "
                               "mxfp8, subchannel/blockwise)",
                               r->path, kv->line, kv->key, v);
        }
        return import_note(r, kv, 0, e, "recipe below%s",
                           m->fp8_param ? " (FP8 parameters: fp8_param_gather True)" : "");
    }
    if (!strcmp(a, "--fp8-recipe")) {
        TRY(needs_value(r, kv, e));
        m->fp8_recipe = kv->val;
        return import_note(r, kv, 0, e, "recipe below");
    }
    if (!strcmp(a, "--fp8-param-gather"))
        return m->fp8_param = switch_on(kv), m->fp8_param_kv = kv,
               import_note(r, kv, !m->fp8_param, e,
                           m->fp8_param ? "FP8 weights (a -param recipe below)" : "ignored: false");
    if (!strcmp(a, "--recompute-granularity")) {
        TRY(needs_value(r, kv, e));
        m->rc_gran = kv->val, m->rc_kv = kv;
        return import_note(r, kv, 0, e, "--recompute (below)");
    }
    if (!strcmp(a, "--recompute-method"))
        return m->rc_method = kv->val, import_note(r, kv, 0, e, "--recompute (below)");
    if (!strcmp(a, "--recompute-num-layers")) {
        TRY(import_u32(r, kv, 1, 100000, &m->rc_layers, e));
        return import_note(r, kv, 0, e, "--recompute (below)");
    }
    if (!strcmp(a, "--fp8-amax-history-len") || !strcmp(a, "--fp8-amax-compute-algo") || !strcmp(a, "--fp8-margin"))
        return import_note(r, kv, 1, e, "ignored: the recipe's amax history (a few bytes per FP8 tensor)");
    return import_note(r, kv, 1, e, "ignored: not modelled (schedule, data, logging, checkpoints, numerics)");
}

/* The note of --fp8-param-gather where no recipe keeps FP8 weights, rewritten once the recipe is known. */
static Status unmodelled_fp8_param(ImportResult *r, const ImportKv *kv, const char *why, Err *e)
{
    for (size_t i = 0; i < r->nnotes; i++) {
        ImportNote *n = &r->notes[i];
        if (n->line != kv->line || strcmp(n->key, kv->key)) continue;
        n->ignored = 1;
        snprintf(n->mapped, sizeof n->mapped, "ignored: %s", why);
        return ST_OK;
    }
    return err_set(e, ST_SOFTWARE, "%s:%d: %s: its note is missing", r->path, kv->line, kv->key);
}

static Status finish_recipe(ImportResult *r, const Mg *m, Err *e)
{
    if (m->fp16_kv)
        return err_set(e, ST_DATA, "%s:%d: %s: FP16 mixed precision is not a recipe of models/recipes.csv", r->path,
                       m->fp16_kv->line, m->fp16_kv->key);
    const char *recipe;
    if (m->fp8_format) {
        const char *rc = m->fp8_recipe ? m->fp8_recipe : "delayed";
        /* --fp8-param-gather keeps the FP8 tensor as the working weight and gathers it in FP8: the -param row of
         * each scaling; blockwise has none, so the weight stays BF16 and the setting is marked ignored */
        if (!strcmp(rc, "delayed"))
            recipe = m->fp8_param ? "te-fp8-param" : "te-fp8";
        else if (!strcmp(rc, "tensorwise"))
            recipe = m->fp8_param ? "te-fp8-current-param" : "te-fp8-current";
        else if (!strcmp(rc, "mxfp8"))
            recipe = m->fp8_param ? "mxfp8-param" : "mxfp8";
        else if (!strcmp(rc, "blockwise")) {
            recipe = "deepseek-v3";
            if (m->fp8_param && m->fp8_param_kv)
                TRY(unmodelled_fp8_param(r, m->fp8_param_kv, "blockwise scaling has no FP8-parameter recipe", e));
        } else
            return err_set(e, ST_DATA, "%s: --fp8-recipe: '%s' is not delayed, tensorwise, mxfp8 or blockwise", r->path,
                           rc);
    } else if (m->bf16) {
        recipe = "megatron-bf16";
        if (m->fp8_param && m->fp8_param_kv) TRY(unmodelled_fp8_param(r, m->fp8_param_kv, "no FP8 format given", e));
    } else {
        return ST_OK; /* no precision flag: FP32 training, not a recipe here; --recipe from the command line */
    }
    const ImportKv *src = m->fp8_format ? m->fp8_kv : m->bf16_kv;
    if (src) r->recipe_line = src->line, snprintf(r->recipe_key, sizeof r->recipe_key, "%s", src->key);
    return import_flag(r, "--recipe", recipe, e);
}

static Status finish_model(ImportResult *r, const Mg *m, Err *e)
{
    if (!m->layers && !m->hidden && !m->heads) return ST_OK; /* the model comes from --model */
    if (!m->layers || !m->hidden || !m->heads)
        return err_set(e, ST_DATA,
                       "%s:%d: the model needs --num-layers, --hidden-size and --num-attention-heads (%s%s%s "
                       "missing)",
                       r->path, m->model_line, m->layers ? "" : "--num-layers ", m->hidden ? "" : "--hidden-size ",
                       m->heads ? "" : "--num-attention-heads");
    ModelSpec *s = &r->model;
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom-%ul-%uh", m->layers, m->hidden);
    s->layers = m->layers, s->hidden = m->hidden, s->heads = m->heads;
    s->kv_heads = m->gqa && m->groups ? m->groups : m->heads;
    if (!m->kv_channels && m->hidden % m->heads)
        return err_set(e, ST_DATA,
                       "%s:%d: --hidden-size %u is not a multiple of --num-attention-heads %u (give "
                       "--kv-channels)",
                       r->path, m->model_line, m->hidden, m->heads);
    if (m->heads % s->kv_heads)
        return err_set(e, ST_DATA, "%s:%d: --num-attention-heads %u is not a multiple of --num-query-groups %u",
                       r->path, m->model_line, m->heads, s->kv_heads);
    s->head_dim = m->kv_channels ? m->kv_channels : m->hidden / m->heads;
    s->ffn_hidden = m->ffn ? m->ffn : m->swiglu ? (unsigned)((uint64_t)4 * m->hidden * 2 / 3 / 64 * 64) : 4 * m->hidden;
    if (m->vocab)
        s->vocab = m->vocab;
    else if (m->tokenizer && !strcmp(m->tokenizer, "GPT2BPETokenizer"))
        s->vocab = 50257;
    else
        return err_set(e, ST_DATA,
                       "%s:%d: the vocabulary size is not in the file (tokenizer %s): give --vocab-size "
                       "there, or --model",
                       r->path, m->model_line, m->tokenizer ? m->tokenizer : "not given");
    s->seq_len = m->maxpos ? m->maxpos : m->seq;
    if (!s->seq_len)
        return err_set(e, ST_DATA, "%s:%d: neither --max-position-embeddings nor --seq-length is given", r->path,
                       m->model_line);
    s->norm = m->rms ? NORM_RMSNORM : NORM_LAYERNORM;
    s->mlp = m->swiglu ? MLP_SWIGLU : MLP_GELU;
    s->pos = m->rope ? POS_ROPE : m->nopos ? POS_NONE : POS_LEARNED;
    s->tied_embeddings = !m->untie;
    s->linear_bias = !m->no_bias;
    s->qk_norm = m->qk_norm;
    snprintf(s->source, sizeof s->source, "read from %s (Megatron-LM arguments and arguments.py's defaults)", r->path);
    r->have_model = 1;
    r->model_line = m->model_line;
    return ST_OK;
}

static Status finish(ImportResult *r, Mg *m, int any, Err *e);

Status import_map_megatron_with(const ImportKvList *kv, const char *stack, ImportArgOf arg_of, const void *ctx,
                                ImportResult *r, Err *e)
{
    Mg m;
    memset(&m, 0, sizeof m);
    m.gqa = strcmp(stack, "megatron-lm") != 0; /* TransformerConfig: num_query_groups alone means GQA */
    TRY(import_flag(r, "--stack", stack, e));
    /* a copy the mapper may rewrite (Bridge's inverted switches), alive until the end: Mg points into it */
    ImportKv *ks = kv->n ? malloc(kv->n * sizeof *ks) : NULL;
    if (kv->n && !ks) return err_set(e, ST_NOMEM, "out of memory reading %s", r->path);
    int any = 0;
    Status st = ST_OK;
    for (size_t i = 0; i < kv->n && !st; i++) {
        ks[i] = kv->kv[i];
        const char *a = arg_of(ctx, &ks[i]);
        if (!a) {
            st = import_note(r, &kv->kv[i], 1, e, "ignored: not modelled");
        } else if (strncmp(a, "--", 2)) {
            st = err_set(e, ST_DATA, "%s:%d: %s: not a Megatron-LM argument (--name)", r->path, ks[i].line, ks[i].key);
        } else {
            any = 1;
            st = one(r, &ks[i], a, &m, e);
        }
    }
    if (!st) st = finish(r, &m, any, e);
    free(ks);
    return st;
}

static Status finish(ImportResult *r, Mg *m_, int any, Err *e)
{
    Mg m = *m_;
    if (!any) return err_set(e, ST_DATA, "%s: not one setting fp8plan reads (--from-format?)", r->path);
    TRY(import_layout_finish(r, &m.layout, m.pp ? m.pp : 1, m.layers != 0, m.layers, m.moe.mtp, e));
    if (m.layers_per_vstage) {
        unsigned pp = m.pp ? m.pp : 1;
        if (!m.layers || m.layers % ((uint64_t)pp * m.layers_per_vstage))
            return err_set(e, ST_DATA, "%s:%d: %s %u: --num-layers %u is not a multiple of pp %u x %u", r->path,
                           m.vstage_kv->line, m.vstage_kv->key, m.layers_per_vstage, m.layers, pp, m.layers_per_vstage);
        char v[16];
        snprintf(v, sizeof v, "%u", m.layers / pp / m.layers_per_vstage);
        TRY(import_flag(r, "--vpp", v, e));
    }
    int selective_done;
    TRY(import_moe_modules(r, &m.moe, m.rc_kv ? m.rc_gran : NULL, &selective_done, e));
    if (m.rc_kv) {
        const char *g = m.rc_gran;
        if (!strcmp(g, "selective")) {
            if (!selective_done) TRY(import_flag(r, "--recompute", "selective", e));
        } else if (!strcmp(g, "full") && (!m.rc_method || !strcmp(m.rc_method, "uniform")) && m.rc_layers <= 1) {
            TRY(import_flag(r, "--recompute", "full", e));
        } else if (!strcmp(g, "full")) {
            return err_set(e, ST_DATA,
                           "%s:%d: %s full with --recompute-method %s --recompute-num-layers %u: only every "
                           "layer's full recomputation is modelled",
                           r->path, m.rc_kv->line, m.rc_kv->key, m.rc_method ? m.rc_method : "uniform", m.rc_layers);
        } else {
            return err_set(e, ST_DATA, "%s:%d: %s: '%s' is not full or selective", r->path, m.rc_kv->line, m.rc_kv->key,
                           g);
        }
    }
    if (m.nproc) {
        uint64_t world = (uint64_t)m.nproc * (m.nnodes ? m.nnodes : 1);
        uint64_t tpc = (uint64_t)(m.tp ? m.tp : 1) * (m.pp ? m.pp : 1) * (m.cp ? m.cp : 1);
        if (world > (1u << 20))
            return err_set(e, ST_DATA, "%s:%d: %llu GPUs: a plan is for at most %u", r->path, m.nproc_line,
                           (unsigned long long)world, 1u << 20);
        if (world % tpc)
            return err_set(e, ST_DATA, "%s:%d: %llu GPUs is not a multiple of TP x PP x CP = %llu (lines %d, %d, %d)",
                           r->path, m.nproc_line, (unsigned long long)world, (unsigned long long)tpc,
                           m.tp_kv ? m.tp_kv->line : 0, m.pp_kv ? m.pp_kv->line : 0, m.cp_kv ? m.cp_kv->line : 0);
        r->world = (unsigned)world, r->world_line = m.nproc_line;
        char v[16];
        snprintf(v, sizeof v, "%u", r->world);
        TRY(import_flag(r, "--gpus", v, e));
    }
    TRY(finish_recipe(r, &m, e));
    TRY(finish_model(r, &m, e));
    TRY(import_moe_finish(r, &m.moe, r->have_model ? &r->model : NULL, m.layers, r->model.ffn_hidden, e));
    TRY(import_features_finish(r, &m.feat, m.moe.experts ? 1 : m.layers ? 0 : -1, e));
    if (!m.gbs_given) r->gbs_per_dp = 1;
    return ST_OK;
}

static const char *strip_prefix(const void *ctx, ImportKv *kv)
{
    const char *prefix = ctx;
    size_t n = strlen(prefix);
    return strncmp(kv->key, prefix, n) ? NULL : kv->key + n;
}

Status import_map_megatron(const ImportKvList *kv, const char *prefix, ImportResult *r, Err *e)
{
    return import_map_megatron_with(kv, "megatron-lm", strip_prefix, prefix, r, e);
}
