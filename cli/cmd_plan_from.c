/* cli/cmd_plan_from.c — --from FILE [--from-format F] [--explain] for plan, compare, sweep, report and the
 * TUI: the file's settings become fp8plan flags placed before the user's own, so that every flag given on
 * the command line wins over the file; the model the file describes is matched to a catalog row with the
 * same dimensions or planned as it stands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "util/text.h"

static int is_opt(const char *a, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(a, "--", 2) || strncmp(a + 2, name, n)) return 0;
    if (a[2 + n] == '\0') return *val = NULL, 1;
    if (a[2 + n] == '=') return *val = a + 3 + n, 1;
    return 0;
}

static int user_gave(int argc, char **argv, const char *name)
{
    const char *v;
    for (int i = 1; i < argc; i++)
        if (is_opt(argv[i], name, &v)) return 1;
    return 0;
}

static void explain(const ImportResult *r, char *const *flags, int nflags)
{
    char k[2 * IMPORT_KEY_MAX], v[2 * IMPORT_VAL_MAX];
    fprintf(stderr, "%s: read as %s; %zu settings:\n", r->path, import_format_name(r->fmt), r->nnotes);
    for (size_t i = 0; i < r->nnotes; i++) {
        const ImportNote *n = &r->notes[i];
        text_escape(n->key, k, sizeof k, 1);
        text_escape(n->val, v, sizeof v, 1);
        fprintf(stderr, "  %5d  %s%s%s  ->  %s\n", n->line, k, v[0] ? " = " : "", v, n->mapped);
    }
    fprintf(stderr, "equivalent flags:");
    for (int i = 0; i < nflags; i++) fprintf(stderr, " %s", text_escape(flags[i], v, sizeof v, 1));
    if (r->have_model) fprintf(stderr, " (model: %s, or a catalog row of the same dimensions)", r->model.name);
    fprintf(stderr, "\n");
}

int plan_from_expand(const char *cmd, int argc, char **argv, unsigned mask, PlanArgs *a, char ***out, int *outc)
{
    const char *path = NULL, *fmt_s = NULL, *v;
    int want_explain = 0, n_from = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (is_opt(argv[i], "from-format", &v)) {
            fmt_s = v ? v : (i + 1 < argc ? argv[i + 1] : NULL);
            if (!fmt_s) return cli_usage(cmd, "--from-format needs megatron, bridge or torchtitan");
        } else if (is_opt(argv[i], "from", &v)) {
            path = v ? v : (i + 1 < argc ? argv[i + 1] : NULL);
            if (!path) return cli_usage(cmd, "--from needs a file");
            n_from++;
        } else if (is_opt(argv[i], "explain", &v)) {
            want_explain = 1;
        }
    }
    *out = NULL;
    if (!path) {
        if (fmt_s || want_explain) return cli_usage(cmd, "--%s needs --from FILE", fmt_s ? "from-format" : "explain");
        return 0;
    }
    if (n_from > 1) return cli_usage(cmd, "--from: give one configuration file");
    ImportFormat fmt = IMPORT_AUTO;
    if (fmt_s && (import_format_parse(fmt_s, &fmt) || fmt == IMPORT_AUTO))
        return cli_usage(cmd, "--from-format: '%s' is not megatron, bridge or torchtitan", fmt_s);
    Err e;
    ImportResult *r = &a->from;
    if (import_read(path, fmt, r, &e)) return cli_fail(cmd, &e);
    char **nv = malloc(((size_t)argc + IMPORT_MAX_FLAGS + 1) * sizeof *nv);
    if (!nv) {
        import_free(r);
        return cli_nomem(cmd, "the --from flags");
    }
    int n = 0;
    nv[n++] = argv[0];
    int keep_sharding = !user_gave(argc, argv, "zero") && !user_gave(argc, argv, "dist-opt");
    int dp_given = user_gave(argc, argv, "dp");
    int gpus_given = user_gave(argc, argv, "gpus");
    for (int i = 0; i < r->argc; i++) {
        const char *f = r->argv[i];
        int has_val = i + 1 < r->argc && strncmp(r->argv[i + 1], "--", 2);
        int keep = plan_option_applies(f + 2, mask);
        if (!keep_sharding && (!strcmp(f, "--zero") || !strcmp(f, "--dist-opt"))) keep = 0;
        /* the user's world size and DP replace the file's: one of them says the other */
        if ((dp_given && !strcmp(f, "--gpus")) || (gpus_given && !strcmp(f, "--dp"))) keep = 0;
        if (keep) {
            nv[n++] = (char *)f;
            if (has_val) nv[n++] = r->argv[i + 1];
        }
        i += has_val;
    }
    int first_user = n;
    for (int i = 1; i < argc; i++) {
        if (is_opt(argv[i], "from", &v) || is_opt(argv[i], "from-format", &v)) {
            if (!v) i++;
            continue;
        }
        if (is_opt(argv[i], "explain", &v)) continue;
        nv[n++] = argv[i];
    }
    nv[n] = NULL;
    if (want_explain) explain(r, nv + 1, first_user - 1);
    a->from_explain = want_explain;
    import_free(r); /* the notes; the flags' text and the model stay in a->from */
    a->from_given = 1;
    *out = nv, *outc = n;
    return 0;
}

/* Whether field f takes part in matching: the context only where it sizes the learned position table, the
 * dense FFN only where some layer has it (a model whose every layer is a MoE layer has no dense FFN). */
static int compared(const ModelSpec *a, const ModelSpec *b, ImportField f)
{
    if (f == IF_SEQ) return a->pos == POS_LEARNED || b->pos == POS_LEARNED;
    if (f == IF_FFN) return !(a->experts && b->experts && !a->dense_layers && !b->dense_layers);
    return 1;
}

/* How many of the model's fields (not its name or source) differ; the first in *first. */
static int n_diff(const ModelSpec *a, const ModelSpec *b, ImportField *first)
{
    int n = 0;
    for (int f = 0; f < IF_COUNT_; f++)
        if (compared(a, b, (ImportField)f) &&
            import_field_value(a, (ImportField)f) != import_field_value(b, (ImportField)f))
            if (!n++ && first) *first = (ImportField)f;
    return n;
}

static int moe_like(const ModelSpec *m) { return m->experts || m->kv_lora_rank || m->mtp_layers; }

/* The fields that decided a match, as "experts 128, experts_per_token 8, ..." (the MoE, MLA and MTP ones
 * where the model has them, after the dense shape). */
static void decided(const ModelSpec *m, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "layers %u, hidden %u, heads %u, kv_heads %u, head_dim %u, vocab %u", m->layers,
                                m->hidden, m->heads, m->kv_heads, m->head_dim, m->vocab);
    char t[24];
    for (int f = IF_EXPERTS; f < IF_COUNT_ && k < n; f++)
        if (import_field_value(m, (ImportField)f) || f == IF_DENSE)
            k += (size_t)snprintf(buf + k, n - k, ", %s %s", import_field_name((ImportField)f),
                                  import_field_text(m, (ImportField)f, t, sizeof t));
}

const ModelSpec *plan_from_model(const Catalog *c, const PlanArgs *a, Err *e)
{
    const ModelSpec *m = &a->from.model, *near = NULL;
    int best = IF_COUNT_ + 1;
    ImportField at = IF_LAYERS;
    for (int i = 0; i < c->nmodels; i++) {
        ImportField f = IF_LAYERS;
        int d = n_diff(&c->models[i], m, &f);
        if (!d) {
            if (a->from_explain && moe_like(m)) {
                char why[600];
                decided(m, why, sizeof why);
                fprintf(stderr,
                        "%s: the model is the catalog's %s: these agree (and norm, MLP, position, qk norm, "
                        "biases, tied embeddings): %s\n",
                        a->from.path, c->models[i].name, why);
            }
            return &c->models[i];
        }
        if (d < best) best = d, near = &c->models[i], at = f;
    }
    if (!moe_like(m)) return m; /* a dense model is planned as the file describes it */
    const ImportSrc *src = &a->from.src[at];
    char where[IMPORT_KEY_MAX + 40], t1[24], t2[24];
    if (src->line)
        snprintf(where, sizeof where, "%d: %s", src->line, src->key);
    else
        snprintf(where, sizeof where, " %s (the framework's default)", import_field_name(at));
    if (!near) {
        err_set(e, ST_DATA,
                "%s: the catalog has no models: a model with experts, latent attention or MTP is planned "
                "as a catalog row",
                a->from.path);
        return NULL;
    }
    err_set(e, ST_DATA,
            "%s:%s gives %s %s: no catalog model has this architecture (a model with experts, latent attention or "
            "MTP is planned as a catalog row); the nearest, %s, has %s %s (%d field%s differ%s). Give --model, or add "
            "the model's row to a models.csv of your own (--catalog DIR)",
            a->from.path, where, import_field_name(at), import_field_text(m, at, t1, sizeof t1), near->name,
            import_field_name(at), import_field_text(near, at, t2, sizeof t2), best, best > 1 ? "s" : "",
            best > 1 ? "" : "s");
    return NULL;
}

const char *plan_from_flag(const PlanArgs *a, const char *flag)
{
    const char *v = NULL;
    if (!a->from_given) return NULL;
    for (int i = 0; i + 1 < a->from.argc; i++)
        if (!strcmp(a->from.argv[i], flag) && strncmp(a->from.argv[i + 1], "--", 2)) v = a->from.argv[i + 1];
    return v;
}

void plan_from_blame(const char *cmd, const PlanArgs *a)
{
    const char *rec = plan_from_flag(a, "--recipe");
    if (!a->from_given || !rec || !a->recipe || strcmp(a->recipe, rec)) return;
    if (a->from.recipe_line)
        fprintf(stderr, "fp8plan %s: the recipe %s is what %s:%d (%s) says: --recipe plans another\n", cmd, rec,
                a->from.path, a->from.recipe_line, a->from.recipe_key);
    else
        fprintf(stderr, "fp8plan %s: the recipe %s is %s's default: --recipe plans another\n", cmd, rec, a->from.path);
}
