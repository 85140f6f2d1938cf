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
    import_free(r); /* the notes; the flags' text and the model stay in a->from */
    a->from_given = 1;
    *out = nv, *outc = n;
    return 0;
}

/* The fields of a model's dimensions (not its name or source). */
static int same_dims(const ModelSpec *a, const ModelSpec *b)
{
    return a->layers == b->layers && a->hidden == b->hidden && a->ffn_hidden == b->ffn_hidden && a->heads == b->heads &&
           a->kv_heads == b->kv_heads && a->head_dim == b->head_dim && a->vocab == b->vocab && a->norm == b->norm &&
           a->mlp == b->mlp && a->pos == b->pos && a->tied_embeddings == b->tied_embeddings &&
           a->linear_bias == b->linear_bias && a->qk_norm == b->qk_norm && a->experts == b->experts &&
           a->kv_lora_rank == b->kv_lora_rank && a->mtp_layers == b->mtp_layers &&
           (a->pos != POS_LEARNED || a->seq_len == b->seq_len); /* rotary or none: the context is no parameter */
}

const ModelSpec *plan_from_model(const Catalog *c, const PlanArgs *a)
{
    for (int i = 0; i < c->nmodels; i++)
        if (same_dims(&c->models[i], &a->from.model)) return &c->models[i];
    return &a->from.model;
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
