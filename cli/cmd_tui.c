/* cli/cmd_tui.c — `fp8plan tui`: the interactive what-if session. Takes the
 * plan options of `fp8plan plan` (parsed by the same code) plus its own, loads
 * the catalog and FP8-LM Table 5, and hands a TuiState to the curses shell. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_plan.h"
#include "tui/script.h"
#include "tui/state.h"
#include "tui/tui.h"
#include "util/fileio.h"
#include "util/num.h"

int cmd_tui(int argc, char **argv);

static const char tui_help_head[] =
    "usage: fp8plan tui [plan options] [--no-color] [--ascii]\n"
    "       fp8plan tui --headless [--size WxH] [--keys SCRIPT] [--dump FILE] [--term T] [plan options]\n"
    "\n"
    "An interactive what-if session: change one input and see at once what moves in per-GPU memory,\n"
    "communication and step time, and why. Five screens (Tab, Shift-Tab or 1-5):\n"
    "  1 Plan     the inputs as a form; memory bar against the GPU with FITS/OOM; bytes per parameter;\n"
    "             every memory term, collective, step-time item and advice line\n"
    "  2 Compare  recipes side by side for the same layout, deltas against a baseline; t loads the\n"
    "             FP8-LM Table 5 setups with their published figures\n"
    "  3 Scales   Table 1b live: payload and scale bytes per scale granularity for any shape\n"
    "  4 Scaling  delayed scaling over an amax trace (a spike to 640 by default): scale, flush and\n"
    "             saturation bounds per step, as a chart and a table\n"
    "  5 Formats  E4M3/E5M2 properties and a value -> code explorer\n"
    "Keys: arrows (and j/k) move, Left/Right or -/+ change a value, Enter types one, / finds a model,\n"
    "GPU or recipe by name, e exports the screen as CSV (Plan: the same bytes as plan --format csv),\n"
    "? or F1 help, q or F10 quit, Ctrl-L redraw. The footer always shows the keys of the screen.\n"
    "\n"
    "With no --model it opens on the seed's headline run: gpt-175b on h100-sxm, megatron-bf16,\n"
    "TP 8 x PP 4 x DP 4 with the distributed optimizer (layout flags given still apply). A plan the\n"
    "planner rejects (e.g. --tp 128 for 96 heads) opens with its message instead of a plan.\n"
    "\n"
    "  --no-color     monochrome (also when NO_COLOR is set or the terminal has no colours); bar\n"
    "                 segments then differ by glyph\n"
    "  --ascii        ASCII glyphs only (Unicode blocks are used only under a UTF-8 locale anyway)\n"
    "headless mode (tests, scripts; no terminal needed):\n"
    "  --headless     curses on /dev/null; nothing is shown\n"
    "  --size WxH     terminal size (80x24)\n"
    "  --keys SCRIPT  keys to press: characters, or <Up> <Down> <Left> <Right> <Enter> <Tab> <S-Tab>\n"
    "                 <Esc> <BS> <PgUp> <PgDn> <Home> <End> <F1>..<F12> <C-l> <lt> <resize=WxH>\n"
    "  --dump FILE    write the final screen (text, then an attribute map) to FILE (- = stdout)\n"
    "  --term T       terminal type ($TERM, else dumb)\n"
    "exit status: 0 quit, 64 bad option, 65 bad catalog, 69 no terminal, 128+N ended by signal N.\n";

static char *help_text(void)
{
    static char buf[12288];
    char opts[6144];
    snprintf(buf, sizeof buf, "%s\nplan options (as fp8plan plan):\n%s", tui_help_head,
             plan_options_help(PO_RECIPE | PO_LAYOUT, opts, sizeof opts));
    return buf;
}

/* --name VALUE or --name=VALUE at argv[*i]; NULL when argv[*i] is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n)) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n]) return NULL;
    if (*i + 1 >= argc) return *missing = 1, NULL;
    return argv[++*i];
}

/* Split our own options off argv; the rest goes to the plan parser. Returns 0 or an exit code. */
static int own_options(int argc, char **argv, TuiOptions *o, char **rest, int *nrest)
{
    const char *cmd = "tui";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        if (!strcmp(a, "--headless")) {
            o->headless = 1;
        } else if (!strcmp(a, "--no-color") || !strcmp(a, "--no-colour")) {
            o->no_color = 1;
        } else if (!strcmp(a, "--ascii")) {
            o->ascii = 1;
        } else if ((v = opt_value(argc, argv, &i, "--size", &missing))) {
            uint64_t w, h;
            Err e;
            if (num_parse_shape(v, &w, &h, &e)) return cli_usage(cmd, "--size: %s", e.msg);
            if (w > 1000 || h > 1000) return cli_usage(cmd, "--size: '%s' is larger than 1000x1000", v);
            o->cols = (int)w, o->rows = (int)h;
        } else if ((v = opt_value(argc, argv, &i, "--keys", &missing))) {
            o->keys = v;
        } else if ((v = opt_value(argc, argv, &i, "--dump", &missing))) {
            o->dump = v;
        } else if ((v = opt_value(argc, argv, &i, "--term", &missing))) {
            o->term = v;
        } else if (missing) {
            return cli_usage(cmd, "%s needs a value", a);
        } else {
            rest[(*nrest)++] = argv[i];
        }
        if (missing) return cli_usage(cmd, "%s needs a value", a);
    }
    if (!o->headless && (o->keys || o->dump || o->rows || o->term))
        return cli_usage(cmd, "--size, --keys, --dump and --term need --headless");
    return 0;
}

/* FP8-LM Table 5 from the catalog directory, when the file is there. */
static int load_t5(const char *cmd, const char *dir, TuiState *s)
{
    char found[4096], path[4200];
    if (plan_catalog_find(cmd, dir, found, sizeof found)) return 0; /* the catalog itself loaded: not fatal */
    snprintf(path, sizeof path, "%s/fp8lm_table5.csv", found);
    if (access(path, F_OK)) return 0; /* not there: no table (a FIFO is not opened twice) */
    char *text;
    size_t len;
    Err e;
    Status st = file_read_all(path, &text, &len, &e);
    if (!st) {
        st = tui_state_load_t5(s, text, len, path, &e);
        free(text);
    }
    return st ? cli_fail(cmd, &e) : 0;
}

int cmd_tui(int argc, char **argv)
{
    const char *cmd = "tui";
    const char *dmodel = plan_headline_model, *dgpu = plan_headline_gpu;
    static const char drecipe[] = "megatron-bf16";
    TuiOptions o = {0};
    char **pargv = calloc((size_t)argc + 8, sizeof *pargv);
    if (!pargv) return cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    int pargc = 0, rc;
    pargv[pargc++] = argv[0];
    /* defaults first, so the user's own --model/--gpu/--recipe (later) win */
    pargv[pargc++] = "--model", pargv[pargc++] = (char *)dmodel;
    pargv[pargc++] = "--gpu", pargv[pargc++] = (char *)dgpu;
    pargv[pargc++] = "--recipe", pargv[pargc++] = (char *)drecipe;
    if ((rc = own_options(argc, argv, &o, pargv, &pargc))) {
        free(pargv);
        return rc;
    }
    PlanArgs a;
    rc = plan_args_parse(cmd, pargc, pargv, PO_RECIPE | PO_LAYOUT, help_text(), &a);
    free(pargv);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.out.path || a.out.fmt != TABLE_TEXT)
        return cli_usage(cmd, "--format and -o do not apply (press e to export)");
    if (a.recipe == drecipe && plan_from_flag(&a, "--recipe")) a.recipe = plan_from_flag(&a, "--recipe");
    plan_args_headline(&a); /* the seed's headline layout, unless a layout flag says otherwise */
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    /* a catalog without the defaults: fall back to its first rows */
    if (a.model == dmodel && !catalog_model(cat, a.model) && cat->nmodels) a.model = cat->models[0].name;
    if (a.gpu == dgpu && !catalog_gpu(cat, a.gpu) && cat->ngpus) a.gpu = cat->gpus[0].name;
    if (a.recipe == drecipe && !catalog_recipe(cat, a.recipe) && cat->nrecipes) a.recipe = cat->recipes[0].name;
    TuiState *s = NULL;
    if (!(rc = plan_args_resolve(cmd, cat, &a, a.recipe))) {
        s = tui_state_new(cat, &a.in);
        if (!s) {
            rc = cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
        } else { /* until the first key: how to start */
            s->etp_given = a.layout_given[9];
            tui_status(s, 0, "Welcome: Up/Down pick an input, Left/Right change it, ? all keys + walkthroughs");
        }
    }
    if (!rc) rc = load_t5(cmd, a.catalog, s);
    if (!rc) { /* the published runs, planned once: each plan drawn is banded against them */
        FidelityRow *rows;
        int n;
        char note[400];
        Err te;
        if (plan_trust_rows(a.catalog, cat, &rows, &n, note, sizeof note, &te))
            rc = cli_fail(cmd, &te);
        else
            tui_state_set_trust(s, rows, n, note);
    }
    if (!rc) {
        setlocale(LC_CTYPE, ""); /* for UTF-8 glyphs; numbers stay in the C locale */
        if (!o.rows) o.rows = 24, o.cols = 80;
        Err e;
        int signo = 0;
        Status st = tui_run(s, &o, &signo, &e);
        if (st)
            rc = st == ST_USAGE ? cli_usage(cmd, "%s", e.msg) : cli_fail(cmd, &e);
        else if (signo)
            rc = 128 + signo;
    }
    tui_state_free(s);
    free(cat);
    return rc;
}
