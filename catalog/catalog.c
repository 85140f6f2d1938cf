/* catalog/catalog.c — models and recipes from CSV text, and the lookups by name (see catalog.h); GPUs are
 * catalog_gpu.c's, stacks catalog_stack.c's. */
#include "catalog/catalog.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/catalog_cells.h"

const char *const catalog_recipe_columns =
    "name,weight,fp8_rowwise,fp8_colwise,master,grad,adam_m,adam_v,dist_opt_shards,scaled_states,other_params,"
    "gemm_fwd,gemm_bwd,scaling,act_granularity,weight_granularity,amax_history,amax_reduce,dp_grad_comm,"
    "param_gather_comm,tp_allgather_comm,tp_reducescatter_comm,ep_dispatch_comm,ep_combine_comm,saved_gemm_input,"
    "fp8_linear,min_sm,source";

/* ---- models ------------------------------------------------------------------------------------------- */

CELL_COL_ENUM(NORM, norm_parse, "layernorm or rmsnorm")
CELL_COL_ENUM(MLP, mlp_parse, "gelu or swiglu")
CELL_COL_ENUM(POS, pos_parse, "learned, rope or none")
CELL_COL_ENUM(ROUTER, router_parse, "none, softmax or sigmoid")

/* models.csv's columns, in the file's order (catalog_cells.h: X(column, reader, field, lo, hi, opt)); the
 * mixture-of-experts, latent-attention and multi-token-prediction ones may be empty (not used). The rules
 * between columns follow the list (parse_model). */
#define BIG   (1u << 30)
#define SMALL (1u << 16)
#define MODEL_COLUMNS(X)                                           \
    X(name, NAME, name, 0, 0, "")                                  \
    X(layers, U32, layers, 1, SMALL, "")                           \
    X(hidden, U32, hidden, 1, BIG, "")                             \
    X(ffn_hidden, U32, ffn_hidden, 1, BIG, "")                     \
    X(heads, U32, heads, 1, SMALL, "")                             \
    X(kv_heads, U32, kv_heads, 1, SMALL, "")                       \
    X(head_dim, U32, head_dim, 1, SMALL, "")                       \
    X(vocab, U32, vocab, 1, BIG, "")                               \
    X(seq_len, U32, seq_len, 1, BIG, "")                           \
    X(norm, NORM, norm, 0, 0, "")                                  \
    X(mlp, MLP, mlp, 0, 0, "")                                     \
    X(position, POS, pos, 0, 0, "")                                \
    X(tied_embeddings, YESNO, tied_embeddings, 0, 0, "")           \
    X(linear_bias, YESNO, linear_bias, 0, 0, "")                   \
    X(qk_norm, YESNO_OR_NO, qk_norm, 0, 0, "")                     \
    X(experts, U32_OR0, experts, 0, SMALL, "")                     \
    X(experts_per_token, U32_OR0, experts_per_token, 0, SMALL, "") \
    X(shared_experts, U32_OR0, shared_experts, 0, SMALL, "")       \
    X(expert_ffn_hidden, U32_OR0, expert_ffn, 0, BIG, "")          \
    X(dense_layers, U32_OR0, dense_layers, 0, SMALL, "")           \
    X(router, ROUTER, router, 0, 0, "")                            \
    X(router_groups, U32_OR0, router_groups, 0, SMALL, "")         \
    X(router_group_topk, U32_OR0, router_group_topk, 0, SMALL, "") \
    X(q_lora_rank, U32_OR0, q_lora_rank, 0, BIG, "")               \
    X(kv_lora_rank, U32_OR0, kv_lora_rank, 0, BIG, "")             \
    X(qk_nope_head_dim, U32_OR0, qk_nope_head_dim, 0, SMALL, "")   \
    X(qk_rope_head_dim, U32_OR0, qk_rope_head_dim, 0, SMALL, "")   \
    X(v_head_dim, U32_OR0, v_head_dim, 0, SMALL, "")               \
    X(mtp_layers, U32_OR0, mtp_layers, 0, 16, "")                  \
    X(source, TEXT, source, 0, 0, "")                              \
    X(expert_bias, YESNO_OR_NO, expert_bias, 0, 0, "?")            \
    X(glu_clamp, OPT_RANGE, glu_clamp, 0, 1e6, "?")

const char *const catalog_model_columns = &(MODEL_COLUMNS(CELL_COL_HEAD))[1]; /* past the first comma */

/* A column that must be empty or 0 for this kind of model. */
static Status must_be_unset(Cur *c, const char *col, uint32_t v, const char *why)
{
    return v ? cell_bad(c, col, "'%s' is given, but %s", cell_text(c, col), why) : ST_OK;
}

/* The mixture-of-experts, latent-attention and multi-token-prediction columns (empty = not used): the
 * rules between them. */
static Status check_model_ext(Cur *c, const ModelSpec *m)
{
    Status st;
    if (!m->experts) {
        const char *dense = "experts is 0 (a dense model)";
        if ((st = must_be_unset(c, "experts_per_token", m->experts_per_token, dense)) ||
            (st = must_be_unset(c, "shared_experts", m->shared_experts, dense)) ||
            (st = must_be_unset(c, "expert_ffn_hidden", m->expert_ffn, dense)) ||
            (st = must_be_unset(c, "dense_layers", m->dense_layers, dense)) ||
            (st = must_be_unset(c, "router", m->router, dense)) ||
            (st = must_be_unset(c, "router_groups", m->router_groups, dense)) ||
            (st = must_be_unset(c, "expert_bias", (uint32_t)m->expert_bias, dense)) ||
            (st = must_be_unset(c, "glu_clamp", m->glu_clamp > 0, dense)))
            return st;
    } else {
        if (!m->experts_per_token || m->experts_per_token > m->experts)
            return cell_bad(c, "experts_per_token", "'%s' must be in [1, experts = %u]",
                            cell_text(c, "experts_per_token"), m->experts);
        if (!m->expert_ffn) return cell_bad(c, "expert_ffn_hidden", "empty or 0: a MoE model needs the expert width");
        if (m->glu_clamp > 0 && m->mlp != MLP_SWIGLU)
            return cell_bad(c, "glu_clamp", "'%s': a clamp limit needs a gated MLP (mlp swiglu)",
                            cell_text(c, "glu_clamp"));
        if (m->router == ROUTER_NONE)
            return cell_bad(c, "router", "empty or none: a MoE model needs softmax or sigmoid");
        if (m->dense_layers >= m->layers)
            return cell_bad(c, "dense_layers", "'%s' leaves no MoE layer of %u", cell_text(c, "dense_layers"),
                            m->layers);
        uint32_t g = m->router_groups, gk = m->router_group_topk;
        if (g && (m->experts % g || !gk || gk > g || m->experts_per_token > (uint64_t)gk * (m->experts / g)))
            return cell_bad(c, "router_group_topk",
                            "'%s': with %u groups of %u experts it must be in [1, groups] and hold experts_per_token",
                            cell_text(c, "router_group_topk"), g, g && !(m->experts % g) ? m->experts / g : 0);
    }
    if ((st = must_be_unset(c, "router_group_topk", m->router_groups ? 0 : m->router_group_topk,
                            "router_groups is 0 (no group-limited routing)")))
        return st;
    if ((m->experts || m->kv_lora_rank) && m->linear_bias)
        return cell_bad(c, "linear_bias", "'%s': biases are modelled for dense models with standard attention only",
                        cell_text(c, "linear_bias"));
    if (!m->kv_lora_rank) {
        const char *std = "kv_lora_rank is 0 (standard attention)";
        if ((st = must_be_unset(c, "q_lora_rank", m->q_lora_rank, std)) ||
            (st = must_be_unset(c, "qk_nope_head_dim", m->qk_nope_head_dim, std)) ||
            (st = must_be_unset(c, "qk_rope_head_dim", m->qk_rope_head_dim, std)) ||
            (st = must_be_unset(c, "v_head_dim", m->v_head_dim, std)))
            return st;
    } else {
        if (!m->qk_nope_head_dim || !m->qk_rope_head_dim || !m->v_head_dim ||
            m->qk_nope_head_dim + m->qk_rope_head_dim != m->head_dim)
            return cell_bad(c, "qk_rope_head_dim",
                            "'%s': latent attention needs positive qk_nope, qk_rope and v head dims with "
                            "qk_nope + qk_rope = head_dim (%u)",
                            cell_text(c, "qk_rope_head_dim"), m->head_dim);
        if (m->kv_heads != m->heads)
            return cell_bad(c, "kv_heads", "'%s': latent attention has one key/value head per query head (%u)",
                            cell_text(c, "kv_heads"), m->heads);
    }
    return ST_OK;
}

static Status parse_model(Cur *c, void *row)
{
    ModelSpec *rowp = row, *m = rowp;
    memset(m, 0, sizeof *m);
    Status st;
    MODEL_COLUMNS(CELL_COL_READ)
    if (m->kv_heads > m->heads || m->heads % m->kv_heads)
        return cell_bad(c, "kv_heads", "'%s' must divide heads (grouped-query attention)", cell_text(c, "kv_heads"));
    if ((st = check_model_ext(c, m))) return st;
    ModelParams mp; /* every count a plan or listing makes from the row starts here: refuse it once, at load */
    if (model_params(m, &mp))
        return cell_bad(c, "hidden",
                        "'%s': the parameter count passes 2^64 (layers %u, hidden %u, ffn_hidden %u, vocab %u, "
                        "seq_len %u)",
                        cell_text(c, "hidden"), m->layers, m->hidden, m->ffn_hidden, m->vocab, m->seq_len);
    return ST_OK;
}

/* ---- recipes ------------------------------------------------------------------------------------------ */

enum { ALLOW_NONE = 1, ALLOW_FP8 = 2, ALLOW_WIDE = 4, ALLOW_E8M0 = 8 };

static Status get_dtype(Cur *c, const char *col, unsigned allow, Dtype *out)
{
    const char *s = cell_text(c, col);
    Dtype d;
    if (dtype_parse(s, &d))
        return cell_bad(c, col, "unknown dtype '%s' (known: fp32 fp16 bf16 e4m3 e5m2 e8m0 none)", s);
    int ok = (d == DT_NONE && (allow & ALLOW_NONE)) || (dtype_is_fp8(d) && (allow & ALLOW_FP8)) ||
             ((d == DT_FP32 || d == DT_FP16 || d == DT_BF16) && (allow & ALLOW_WIDE)) ||
             (d == DT_E8M0 && (allow & ALLOW_E8M0));
    if (!ok) {
        const char *what = (allow & ALLOW_WIDE) && !(allow & ALLOW_FP8) ? "fp32, fp16 or bf16"
                           : !(allow & ALLOW_WIDE)                      ? "e4m3, e5m2 or none"
                                                                        : "fp32, fp16, bf16, e4m3 or e5m2";
        return cell_bad(c, col, "dtype '%s' is not allowed here (expected %s%s)", s, what,
                        (allow & ALLOW_NONE) && (allow & ALLOW_WIDE) ? " or none" : "");
    }
    *out = d;
    return ST_OK;
}

/* "master+m+v" or "none" -> bit mask of StateId. */
static Status get_states(Cur *c, const char *col, unsigned *out)
{
    const char *s = cell_text(c, col);
    *out = 0;
    if (!strcasecmp(s, "none")) return ST_OK;
    char buf[128];
    if (strlen(s) >= sizeof buf || !*s) return cell_bad(c, col, "'%s' is not a '+'-separated list of states", s);
    strcpy(buf, s);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, '+');
        if (next) *next++ = '\0';
        StateId id;
        if (state_parse(tok, &id))
            return cell_bad(c, col, "unknown state '%s' in '%s' (known: weight master grad m v, or none)", tok, s);
        *out |= 1u << id;
    }
    return ST_OK;
}

static Status get_gran(Cur *c, const char *col, Granularity *out)
{
    if (gran_parse(cell_text(c, col), out))
        return cell_bad(c, col, "'%s' is not a granularity (tensor, channel, 1x32, 1x128, 128x128)", cell_text(c, col));
    return ST_OK;
}

static Status parse_recipe(Cur *c, void *row)
{
    Recipe *r = row;
    memset(r, 0, sizeof *r);
    Status st;
    StateSet *g = &r->gemm;
    const unsigned STATE = ALLOW_NONE | ALLOW_FP8 | ALLOW_WIDE, COMM = ALLOW_FP8 | ALLOW_WIDE;
    if ((st = cell_textcopy(c, "name", r->name, sizeof r->name, 1)) ||
        (st = get_dtype(c, "weight", STATE, &g->dt[STATE_WEIGHT])) ||
        (st = get_dtype(c, "fp8_rowwise", ALLOW_NONE | ALLOW_FP8, &r->fp8_row)) ||
        (st = get_dtype(c, "fp8_colwise", ALLOW_NONE | ALLOW_FP8, &r->fp8_col)) ||
        (st = get_dtype(c, "master", STATE, &g->dt[STATE_MASTER])) ||
        (st = get_dtype(c, "grad", COMM, &g->dt[STATE_GRAD])) ||
        (st = get_dtype(c, "adam_m", STATE, &g->dt[STATE_M])) ||
        (st = get_dtype(c, "adam_v", STATE, &g->dt[STATE_V])) ||
        (st = get_states(c, "dist_opt_shards", &g->shard_mask)) ||
        (st = get_states(c, "scaled_states", &g->scaled_mask)) ||
        (st = cell_textcopy(c, "other_params", r->other_name, sizeof r->other_name, 1)) ||
        (st = get_dtype(c, "gemm_fwd", COMM, &r->gemm_fwd)) || (st = get_dtype(c, "gemm_bwd", COMM, &r->gemm_bwd)) ||
        (st = get_gran(c, "act_granularity", &r->act_gran)) ||
        (st = get_gran(c, "weight_granularity", &r->weight_gran)) ||
        (st = cell_u32(c, "amax_history", 0, 1u << 20, &r->amax_history)) ||
        (st = get_dtype(c, "dp_grad_comm", COMM, &r->comm_dp_grad)) ||
        (st = get_dtype(c, "param_gather_comm", COMM, &r->comm_param_gather)) ||
        (st = get_dtype(c, "tp_allgather_comm", COMM, &r->comm_tp_ag)) ||
        (st = get_dtype(c, "tp_reducescatter_comm", COMM, &r->comm_tp_rs)) ||
        (st = get_dtype(c, "ep_dispatch_comm", COMM, &r->comm_ep_dispatch)) ||
        (st = get_dtype(c, "ep_combine_comm", COMM, &r->comm_ep_combine)) ||
        (st = get_dtype(c, "saved_gemm_input", COMM, &r->saved_input)) || (st = cell_sm(c, "min_sm", &r->min_sm)) ||
        (st = cell_textcopy(c, "source", r->source, sizeof r->source, 0)))
        return st;
    if (scaling_parse(cell_text(c, "scaling"), &r->scaling))
        return cell_bad(c, "scaling", "'%s' is not none, delayed or current", cell_text(c, "scaling"));
    if (amax_reduce_parse(cell_text(c, "amax_reduce"), &r->amax_reduce))
        return cell_bad(c, "amax_reduce", "'%s' is not none, tp or all", cell_text(c, "amax_reduce"));
    if (fp8_linear_parse(cell_text(c, "fp8_linear"), &r->linear))
        return cell_bad(c, "fp8_linear", "'%s' is not none, te, torchao, torchao-rowwise or msamp",
                        cell_text(c, "fp8_linear"));
    /* consistency */
    if (g->dt[STATE_WEIGHT] == DT_NONE && g->dt[STATE_MASTER] == DT_NONE && r->fp8_row == DT_NONE)
        return cell_bad(c, "weight", "'%s': with no master and no FP8 row-wise copy nothing holds the weights",
                        cell_text(c, "weight"));
    int fp8 = recipe_fp8_gemm(r);
    if (fp8 && r->scaling == SCALING_NONE)
        return cell_bad(c, "scaling", "'%s': FP8 GEMMs need delayed or current scaling", cell_text(c, "scaling"));
    if (!fp8 && r->scaling != SCALING_NONE)
        return cell_bad(c, "scaling", "'%s': scaling is set but gemm_fwd and gemm_bwd are not FP8",
                        cell_text(c, "scaling"));
    if (fp8 != (r->linear != LIN_NONE))
        return cell_bad(c, "fp8_linear", "'%s': none exactly when gemm_fwd and gemm_bwd are not FP8",
                        cell_text(c, "fp8_linear"));
    if (!fp8 && (r->fp8_row != DT_NONE || r->fp8_col != DT_NONE))
        return cell_bad(c, "fp8_rowwise", "'%s': FP8 weight copies without FP8 GEMMs", cell_text(c, "fp8_rowwise"));
    if (r->scaling == SCALING_DELAYED && r->amax_history == 0)
        return cell_bad(c, "amax_history", "'%s': delayed scaling needs a history of at least 1",
                        cell_text(c, "amax_history"));
    for (int i = 0; i < STATE_COUNT_; i++)
        if ((g->scaled_mask & (1u << i)) && g->dt[i] == DT_NONE)
            return cell_bad(c, "scaled_states", "'%s' names a state the recipe does not keep",
                            cell_text(c, "scaled_states"));
    return ST_OK;
}

Status catalog_parse_models(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    return cell_parse_all(text, len, fname, catalog_model_columns, "name", parse_model, NULL, c->models,
                          sizeof *c->models, CATALOG_MAX_ROWS, &c->nmodels, e);
}

Status catalog_parse_recipes(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    CsvTable t;
    Status st = cell_parse_rows(text, len, fname, catalog_recipe_columns, "name", parse_recipe, NULL, c->recipes,
                                sizeof *c->recipes, CATALOG_MAX_ROWS, &c->nrecipes, &t, e);
    /* resolve other_params within the same file */
    for (int r = 0; !st && r < t.nrows; r++) {
        Recipe *rc = &c->recipes[r];
        int k = -1;
        for (int j = 0; j < t.nrows; j++)
            if (!strcasecmp(c->recipes[j].name, rc->other_name)) k = j;
        Cur cur = {&t, r, e, NULL};
        if (k < 0) {
            st = cell_bad(&cur, "other_params", "'%s' is not a recipe in this file", rc->other_name);
            break;
        }
        const Recipe *o = &c->recipes[k];
        for (int i = 0; i < STATE_COUNT_; i++)
            if (dtype_is_fp8(o->gemm.dt[i]) || (o->gemm.scaled_mask & (1u << i))) {
                st = cell_bad(
                    &cur, "other_params",
                    "'%s' keeps scaled or FP8 states; embeddings, norms and biases stay on a high-precision path",
                    rc->other_name);
                break;
            }
        if (st) break;
        rc->other = o->gemm;
        rc->other_comm_dp_grad = o->comm_dp_grad;
        rc->other_comm_param_gather = o->comm_param_gather;
        if (recipe_master_is_compute(&rc->other, o) && (rc->other.shard_mask & (1u << STATE_MASTER))) {
            st = cell_bad(&cur, "other_params", "'%s' shards a master the GEMMs read", rc->other_name);
            break;
        }
    }
    for (int r = 0; !st && r < t.nrows; r++) {
        Recipe *rc = &c->recipes[r];
        if (recipe_master_is_compute(&rc->gemm, rc) && (rc->gemm.shard_mask & (1u << STATE_MASTER))) {
            Cur cur = {&t, r, e, NULL};
            st = cell_bad(&cur, "dist_opt_shards",
                          "'%s' shards the master, but the GEMMs read it (no weight, no FP8 copy)",
                          csv_table_cell(&t, r, "dist_opt_shards"));
        }
    }
    c->nrecipes = st ? 0 : t.nrows;
    csv_table_free(&t);
    return st;
}

/* ---- lookups ------------------------------------------------------------------------------------------ */

/* Every kind of row starts with its name, so one lookup and one list serve all three. */
_Static_assert(offsetof(ModelSpec, name) == 0 && offsetof(GpuSpec, name) == 0 && offsetof(Recipe, name) == 0 &&
                   offsetof(StackSpec, name) == 0,
               "catalog rows start with their name");

static const void *find(const void *rows, size_t size, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        const char *row = (const char *)rows + (size_t)i * size;
        if (!strcasecmp(row, name)) return row;
    }
    return NULL;
}

const ModelSpec *catalog_model(const Catalog *c, const char *name)
{
    return find(c->models, sizeof *c->models, c->nmodels, name);
}

const GpuSpec *catalog_gpu(const Catalog *c, const char *name)
{
    return find(c->gpus, sizeof *c->gpus, c->ngpus, name);
}

const Recipe *catalog_recipe(const Catalog *c, const char *name)
{
    return find(c->recipes, sizeof *c->recipes, c->nrecipes, name);
}

/* "name1, name2, ..." into buf (bufsize bytes; a list that does not fit is cut short). */
static void names(const void *rows, size_t size, int n, char *buf, size_t bufsize)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = (const char *)rows + (size_t)i * size;
        int k = snprintf(buf + used, bufsize - used, "%s%s", used ? ", " : "", name);
        if (k > 0 && used + (size_t)k < bufsize) used += (size_t)k;
    }
}

const StackSpec *catalog_stack(const Catalog *c, const char *name)
{
    const StackSpec *s = find(c->stacks, sizeof *c->stacks, c->nstacks, name);
    for (int i = 0; !s && name && i < c->nstacks; i++)
        if (*c->stacks[i].alias && !strcasecmp(c->stacks[i].alias, name)) s = &c->stacks[i];
    return s;
}

void catalog_model_names(const Catalog *c, char *buf, size_t size)
{
    names(c->models, sizeof *c->models, c->nmodels, buf, size);
}

void catalog_gpu_names(const Catalog *c, char *buf, size_t size)
{
    names(c->gpus, sizeof *c->gpus, c->ngpus, buf, size);
}

void catalog_recipe_names(const Catalog *c, char *buf, size_t size)
{
    names(c->recipes, sizeof *c->recipes, c->nrecipes, buf, size);
}

void catalog_stack_names(const Catalog *c, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->nstacks; i++) { /* "megatron-core = nvidia-recipes": either name is taken */
        const StackSpec *s = &c->stacks[i];
        int k =
            snprintf(buf + used, size - used, "%s%s%s%s", used ? ", " : "", s->name, *s->alias ? " = " : "", s->alias);
        if (k > 0 && used + (size_t)k < size) used += (size_t)k;
    }
}
