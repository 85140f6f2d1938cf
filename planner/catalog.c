/* planner/catalog.c — models, GPUs and recipes from CSV text (see catalog.h). */
#include "planner/catalog.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "planner/csv_table.h"
#include "util/num.h"

const char *const catalog_model_columns =
    "name,layers,hidden,ffn_hidden,heads,kv_heads,head_dim,vocab,seq_len,norm,mlp,"
    "position,tied_embeddings,linear_bias,source";
const char *const catalog_gpu_columns =
    "name,compute_capability,sms,hbm_bytes,hbm_gbps,bf16_tflops,fp8_tflops,fp32_tflops,"
    "intra_node_gbps,inter_node_gbps,gpus_per_node,source";
const char *const catalog_recipe_columns =
    "name,weight,fp8_rowwise,fp8_colwise,master,grad,adam_m,adam_v,dist_opt_shards,scaled_states,other_params,"
    "gemm_fwd,gemm_bwd,scaling,act_granularity,weight_granularity,amax_history,amax_reduce,dp_grad_comm,"
    "param_gather_comm,tp_allgather_comm,tp_reducescatter_comm,saved_gemm_input,min_sm,source";

/* ---- cell helpers: every error names file, row and column ------------------------------------------- */

typedef struct {
    const CsvTable *t;
    int r;
    Err *e;
} Cur;

static Status bad(Cur *c, const char *col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static Status bad(Cur *c, const char *col, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return err_set(c->e, ST_DATA, "%s: row %d, column %s: %.420s", c->t->fname, csv_table_rowno(c->r), col, why);
}

static const char *cell(Cur *c, const char *col) { return csv_table_cell(c->t, c->r, col); }

static Status num_fail(Cur *c, const char *col, Status st, const Err *sub)
{
    return err_set(c->e, st == ST_OVERFLOW ? ST_OVERFLOW : ST_DATA, "%s: row %d, column %s: %s", c->t->fname,
                   csv_table_rowno(c->r), col, sub->msg);
}

/* A whole number in [lo, hi]. */
static Status get_u32(Cur *c, const char *col, uint32_t lo, uint32_t hi, uint32_t *out)
{
    const char *s = cell(c, col);
    uint64_t v;
    Err sub;
    Status st = num_parse_u64(s, &v, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (v < lo || v > hi) return bad(c, col, "'%s' is out of range [%u, %u]", s, lo, hi);
    *out = (uint32_t)v;
    return ST_OK;
}

static Status get_count(Cur *c, const char *col, uint64_t *out)
{
    Err sub;
    Status st = num_parse_count(cell(c, col), out, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (*out == 0) return bad(c, col, "'%s' must be positive", cell(c, col));
    return ST_OK;
}

/* A finite number >= 0 (> 0 unless allow_zero). */
static Status get_rate(Cur *c, const char *col, int allow_zero, double *out)
{
    Err sub;
    Status st = num_parse_double(cell(c, col), NUM_FINITE_ONLY, out, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (*out < 0 || (!allow_zero && *out == 0))
        return bad(c, col, allow_zero ? "'%s' must not be negative" : "'%s' must be positive", cell(c, col));
    return ST_OK;
}

static Status get_yesno(Cur *c, const char *col, int *out)
{
    const char *s = cell(c, col);
    if (!strcasecmp(s, "yes")) return *out = 1, ST_OK;
    if (!strcasecmp(s, "no")) return *out = 0, ST_OK;
    return bad(c, col, "'%s' is not yes or no", s);
}

/* "9.0" -> 90: one digit after the point. */
static Status get_sm(Cur *c, const char *col, uint32_t *out)
{
    const char *s = cell(c, col);
    unsigned maj, min;
    char tail;
    if (sscanf(s, "%u.%1u%c", &maj, &min, &tail) != 2 || maj > 99 || !strchr(s, '.') || s[0] < '0' || s[0] > '9')
        return bad(c, col, "'%s' is not a compute capability like 9.0", s);
    *out = maj * 10 + min;
    return ST_OK;
}

static Status get_text(Cur *c, const char *col, char *dst, size_t size, int name_like)
{
    const char *s = cell(c, col);
    size_t n = strlen(s);
    if (!n) return bad(c, col, "empty value");
    if (n >= size) return bad(c, col, "'%.40s...' is longer than %zu characters", s, size - 1);
    if (name_like)
        for (const char *p = s; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  strchr("._-", *p)))
                return bad(c, col, "'%.60s' may only hold letters, digits, '.', '_' and '-'", s);
    memcpy(dst, s, n + 1);
    return ST_OK;
}

/* ---- models ------------------------------------------------------------------------------------------- */

static Status parse_model(Cur *c, void *row)
{
    ModelSpec *m = row;
    memset(m, 0, sizeof *m);
    const uint32_t BIG = 1u << 30;
    Status st;
    if ((st = get_text(c, "name", m->name, sizeof m->name, 1)) ||
        (st = get_u32(c, "layers", 1, 1u << 16, &m->layers)) || (st = get_u32(c, "hidden", 1, BIG, &m->hidden)) ||
        (st = get_u32(c, "ffn_hidden", 1, BIG, &m->ffn_hidden)) || (st = get_u32(c, "heads", 1, 1u << 16, &m->heads)) ||
        (st = get_u32(c, "kv_heads", 1, 1u << 16, &m->kv_heads)) ||
        (st = get_u32(c, "head_dim", 1, 1u << 16, &m->head_dim)) || (st = get_u32(c, "vocab", 1, BIG, &m->vocab)) ||
        (st = get_u32(c, "seq_len", 1, BIG, &m->seq_len)) ||
        (st = get_yesno(c, "tied_embeddings", &m->tied_embeddings)) ||
        (st = get_yesno(c, "linear_bias", &m->linear_bias)) ||
        (st = get_text(c, "source", m->source, sizeof m->source, 0)))
        return st;
    if (norm_parse(cell(c, "norm"), &m->norm))
        return bad(c, "norm", "'%s' is not layernorm or rmsnorm", cell(c, "norm"));
    if (mlp_parse(cell(c, "mlp"), &m->mlp)) return bad(c, "mlp", "'%s' is not gelu or swiglu", cell(c, "mlp"));
    if (pos_parse(cell(c, "position"), &m->pos))
        return bad(c, "position", "'%s' is not learned, rope or none", cell(c, "position"));
    if (m->kv_heads > m->heads || m->heads % m->kv_heads)
        return bad(c, "kv_heads", "'%s' must divide heads (grouped-query attention)", cell(c, "kv_heads"));
    return ST_OK;
}

/* ---- GPUs --------------------------------------------------------------------------------------------- */

static Status parse_gpu(Cur *c, void *row)
{
    GpuSpec *g = row;
    memset(g, 0, sizeof *g);
    double hbm, bf16, fp8, fp32, intra, inter;
    Status st;
    if ((st = get_text(c, "name", g->name, sizeof g->name, 1)) || (st = get_sm(c, "compute_capability", &g->sm)) ||
        (st = get_u32(c, "sms", 1, 1u << 16, &g->sms)) || (st = get_count(c, "hbm_bytes", &g->hbm_bytes)) ||
        (st = get_rate(c, "hbm_gbps", 0, &hbm)) || (st = get_rate(c, "bf16_tflops", 0, &bf16)) ||
        (st = get_rate(c, "fp8_tflops", 1, &fp8)) || (st = get_rate(c, "fp32_tflops", 0, &fp32)) ||
        (st = get_rate(c, "intra_node_gbps", 0, &intra)) || (st = get_rate(c, "inter_node_gbps", 0, &inter)) ||
        (st = get_u32(c, "gpus_per_node", 1, 1u << 20, &g->gpus_per_node)) ||
        (st = get_text(c, "source", g->source, sizeof g->source, 0)))
        return st;
    g->hbm_bw = hbm * 1e9;
    g->flops_bf16 = bf16 * 1e12;
    g->flops_fp8 = fp8 * 1e12;
    g->flops_fp32 = fp32 * 1e12;
    g->intra_bw = intra * 1e9;
    g->inter_bw = inter * 1e9;
    if (fp8 > 0 && g->sm < 89)
        return bad(c, "fp8_tflops", "'%s' is given for a GPU below SM 8.9, which has no FP8 tensor cores",
                   cell(c, "fp8_tflops"));
    return ST_OK;
}

/* ---- recipes ------------------------------------------------------------------------------------------ */

enum { ALLOW_NONE = 1, ALLOW_FP8 = 2, ALLOW_WIDE = 4, ALLOW_E8M0 = 8 };

static Status get_dtype(Cur *c, const char *col, unsigned allow, Dtype *out)
{
    const char *s = cell(c, col);
    Dtype d;
    if (dtype_parse(s, &d)) return bad(c, col, "unknown dtype '%s' (known: fp32 fp16 bf16 e4m3 e5m2 e8m0 none)", s);
    int ok = (d == DT_NONE && (allow & ALLOW_NONE)) || (dtype_is_fp8(d) && (allow & ALLOW_FP8)) ||
             ((d == DT_FP32 || d == DT_FP16 || d == DT_BF16) && (allow & ALLOW_WIDE)) ||
             (d == DT_E8M0 && (allow & ALLOW_E8M0));
    if (!ok) {
        const char *what = (allow & ALLOW_WIDE) && !(allow & ALLOW_FP8) ? "fp32, fp16 or bf16"
                           : !(allow & ALLOW_WIDE)                      ? "e4m3, e5m2 or none"
                                                                        : "fp32, fp16, bf16, e4m3 or e5m2";
        return bad(c, col, "dtype '%s' is not allowed here (expected %s%s)", s, what,
                   (allow & ALLOW_NONE) && (allow & ALLOW_WIDE) ? " or none" : "");
    }
    *out = d;
    return ST_OK;
}

/* "master+m+v" or "none" -> bit mask of StateId. */
static Status get_states(Cur *c, const char *col, unsigned *out)
{
    const char *s = cell(c, col);
    *out = 0;
    if (!strcasecmp(s, "none")) return ST_OK;
    char buf[128];
    if (strlen(s) >= sizeof buf || !*s) return bad(c, col, "'%s' is not a '+'-separated list of states", s);
    strcpy(buf, s);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, '+');
        if (next) *next++ = '\0';
        StateId id;
        if (state_parse(tok, &id))
            return bad(c, col, "unknown state '%s' in '%s' (known: weight master grad m v, or none)", tok, s);
        *out |= 1u << id;
    }
    return ST_OK;
}

static Status get_gran(Cur *c, const char *col, Granularity *out)
{
    if (gran_parse(cell(c, col), out))
        return bad(c, col, "'%s' is not a granularity (tensor, channel, 1x32, 1x128, 128x128)", cell(c, col));
    return ST_OK;
}

static Status parse_recipe(Cur *c, void *row)
{
    Recipe *r = row;
    memset(r, 0, sizeof *r);
    Status st;
    StateSet *g = &r->gemm;
    const unsigned STATE = ALLOW_NONE | ALLOW_FP8 | ALLOW_WIDE, COMM = ALLOW_FP8 | ALLOW_WIDE;
    if ((st = get_text(c, "name", r->name, sizeof r->name, 1)) ||
        (st = get_dtype(c, "weight", STATE, &g->dt[STATE_WEIGHT])) ||
        (st = get_dtype(c, "fp8_rowwise", ALLOW_NONE | ALLOW_FP8, &r->fp8_row)) ||
        (st = get_dtype(c, "fp8_colwise", ALLOW_NONE | ALLOW_FP8, &r->fp8_col)) ||
        (st = get_dtype(c, "master", STATE, &g->dt[STATE_MASTER])) ||
        (st = get_dtype(c, "grad", COMM, &g->dt[STATE_GRAD])) ||
        (st = get_dtype(c, "adam_m", STATE, &g->dt[STATE_M])) ||
        (st = get_dtype(c, "adam_v", STATE, &g->dt[STATE_V])) ||
        (st = get_states(c, "dist_opt_shards", &g->shard_mask)) ||
        (st = get_states(c, "scaled_states", &g->scaled_mask)) ||
        (st = get_text(c, "other_params", r->other_name, sizeof r->other_name, 1)) ||
        (st = get_dtype(c, "gemm_fwd", COMM, &r->gemm_fwd)) || (st = get_dtype(c, "gemm_bwd", COMM, &r->gemm_bwd)) ||
        (st = get_gran(c, "act_granularity", &r->act_gran)) ||
        (st = get_gran(c, "weight_granularity", &r->weight_gran)) ||
        (st = get_u32(c, "amax_history", 0, 1u << 20, &r->amax_history)) ||
        (st = get_dtype(c, "dp_grad_comm", COMM, &r->comm_dp_grad)) ||
        (st = get_dtype(c, "param_gather_comm", COMM, &r->comm_param_gather)) ||
        (st = get_dtype(c, "tp_allgather_comm", COMM, &r->comm_tp_ag)) ||
        (st = get_dtype(c, "tp_reducescatter_comm", COMM, &r->comm_tp_rs)) ||
        (st = get_dtype(c, "saved_gemm_input", COMM, &r->saved_input)) || (st = get_sm(c, "min_sm", &r->min_sm)) ||
        (st = get_text(c, "source", r->source, sizeof r->source, 0)))
        return st;
    if (scaling_parse(cell(c, "scaling"), &r->scaling))
        return bad(c, "scaling", "'%s' is not none, delayed or current", cell(c, "scaling"));
    if (amax_reduce_parse(cell(c, "amax_reduce"), &r->amax_reduce))
        return bad(c, "amax_reduce", "'%s' is not none, tp or all", cell(c, "amax_reduce"));
    /* consistency */
    if (g->dt[STATE_WEIGHT] == DT_NONE && g->dt[STATE_MASTER] == DT_NONE && r->fp8_row == DT_NONE)
        return bad(c, "weight", "'%s': with no master and no FP8 row-wise copy nothing holds the weights",
                   cell(c, "weight"));
    int fp8 = recipe_fp8_gemm(r);
    if (fp8 && r->scaling == SCALING_NONE)
        return bad(c, "scaling", "'%s': FP8 GEMMs need delayed or current scaling", cell(c, "scaling"));
    if (!fp8 && r->scaling != SCALING_NONE)
        return bad(c, "scaling", "'%s': scaling is set but gemm_fwd and gemm_bwd are not FP8", cell(c, "scaling"));
    if (!fp8 && (r->fp8_row != DT_NONE || r->fp8_col != DT_NONE))
        return bad(c, "fp8_rowwise", "'%s': FP8 weight copies without FP8 GEMMs", cell(c, "fp8_rowwise"));
    if (r->scaling == SCALING_DELAYED && r->amax_history == 0)
        return bad(c, "amax_history", "'%s': delayed scaling needs a history of at least 1", cell(c, "amax_history"));
    for (int i = 0; i < STATE_COUNT_; i++)
        if ((g->scaled_mask & (1u << i)) && g->dt[i] == DT_NONE)
            return bad(c, "scaled_states", "'%s' names a state the recipe does not keep", cell(c, "scaled_states"));
    return ST_OK;
}

/* ---- the three parsers -------------------------------------------------------------------------------- */

static Status check_unique(const CsvTable *t, Err *e)
{
    int col = csv_table_col(t, "name");
    for (int i = 0; i < t->nrows; i++)
        for (int j = 0; j < i; j++)
            if (!strcasecmp(t->cells[(long)i * t->ncols + col], t->cells[(long)j * t->ncols + col]))
                return err_set(e, ST_DATA, "%s: row %d, column name: '%s' repeats row %d", t->fname, csv_table_rowno(i),
                               t->cells[(long)i * t->ncols + col], csv_table_rowno(j));
    if (t->nrows > CATALOG_MAX_ROWS)
        return err_set(e, ST_DATA, "%s: %d rows; at most %d are supported", t->fname, t->nrows, CATALOG_MAX_ROWS);
    return ST_OK;
}

/* Parse every row of a catalog file with fn into rows (`size` bytes apart); *n gets the row count, 0 on
 * failure. t stays open for the caller (recipes resolve references with it), who frees it. */
static Status parse_rows(const char *text, size_t len, const char *fname, const char *columns,
                         Status (*fn)(Cur *, void *), void *rows, size_t size, int *n, CsvTable *t, Err *e)
{
    Status st = csv_table_parse(text, len, fname, t, e);
    if (!st) st = csv_table_expect(t, columns, e);
    if (!st) st = check_unique(t, e);
    for (int r = 0; !st && r < t->nrows; r++) {
        Cur cur = {t, r, e};
        st = fn(&cur, (char *)rows + (size_t)r * size);
    }
    *n = st ? 0 : t->nrows;
    return st;
}

Status catalog_parse_models(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    CsvTable t;
    Status st = parse_rows(text, len, fname, catalog_model_columns, parse_model, c->models, sizeof *c->models,
                           &c->nmodels, &t, e);
    csv_table_free(&t);
    return st;
}

Status catalog_parse_gpus(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    CsvTable t;
    Status st =
        parse_rows(text, len, fname, catalog_gpu_columns, parse_gpu, c->gpus, sizeof *c->gpus, &c->ngpus, &t, e);
    csv_table_free(&t);
    return st;
}

Status catalog_parse_recipes(Catalog *c, const char *text, size_t len, const char *fname, Err *e)
{
    CsvTable t;
    Status st = parse_rows(text, len, fname, catalog_recipe_columns, parse_recipe, c->recipes, sizeof *c->recipes,
                           &c->nrecipes, &t, e);
    /* resolve other_params within the same file */
    for (int r = 0; !st && r < t.nrows; r++) {
        Recipe *rc = &c->recipes[r];
        int k = -1;
        for (int j = 0; j < t.nrows; j++)
            if (!strcasecmp(c->recipes[j].name, rc->other_name)) k = j;
        Cur cur = {&t, r, e};
        if (k < 0) {
            st = bad(&cur, "other_params", "'%s' is not a recipe in this file", rc->other_name);
            break;
        }
        const Recipe *o = &c->recipes[k];
        for (int i = 0; i < STATE_COUNT_; i++)
            if (dtype_is_fp8(o->gemm.dt[i]) || (o->gemm.scaled_mask & (1u << i))) {
                st = bad(&cur, "other_params",
                         "'%s' keeps scaled or FP8 states; embeddings, norms and biases stay on a high-precision path",
                         rc->other_name);
                break;
            }
        if (st) break;
        rc->other = o->gemm;
        rc->other_comm_dp_grad = o->comm_dp_grad;
        rc->other_comm_param_gather = o->comm_param_gather;
        if (recipe_master_is_compute(&rc->other, o) && (rc->other.shard_mask & (1u << STATE_MASTER))) {
            st = bad(&cur, "other_params", "'%s' shards a master the GEMMs read", rc->other_name);
            break;
        }
    }
    for (int r = 0; !st && r < t.nrows; r++) {
        Recipe *rc = &c->recipes[r];
        if (recipe_master_is_compute(&rc->gemm, rc) && (rc->gemm.shard_mask & (1u << STATE_MASTER))) {
            Cur cur = {&t, r, e};
            st = bad(&cur, "dist_opt_shards", "'%s' shards the master, but the GEMMs read it (no weight, no FP8 copy)",
                     csv_table_cell(&t, r, "dist_opt_shards"));
        }
    }
    c->nrecipes = st ? 0 : t.nrows;
    csv_table_free(&t);
    return st;
}

/* ---- lookups ------------------------------------------------------------------------------------------ */

/* Every kind of row starts with its name, so one lookup and one list serve all three. */
_Static_assert(offsetof(ModelSpec, name) == 0 && offsetof(GpuSpec, name) == 0 && offsetof(Recipe, name) == 0,
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
