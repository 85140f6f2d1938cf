/* tests/bench/bench_tui.c — keystroke to re-plan and redraw at 200x60.
 *
 * A headless session (curses on /dev/null, TERM=xterm-256color, colour and
 * the full repaint path, as the interactive loop runs it) gets keys that change
 * an input: TP up/down on the Plan screen (one plan_build each), the recipe on
 * the Plan screen, and a column's recipe on the Compare screen (three plans
 * per key). Each key's time covers dispatch, re-plan, the whole repaint and
 * ncurses' refresh. Prints the median, p99 and max per key against the 10 ms
 * target of issue 4, the planner's share, and the machine. */
#define _GNU_SOURCE 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "catalog/catalog.h"
#include "tui/fields.h"
#include "tui/state.h"
#include "tui/tui.h"
#include "util/fileio.h"

enum { KEYS = 2000 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void load(Catalog *c, const char *file, Status (*parse)(Catalog *, const char *, size_t, const char *, Err *))
{
    char path[256], *text;
    size_t len;
    Err e;
    snprintf(path, sizeof path, "models/%s", file);
    if (file_read_all(path, &text, &len, &e) || parse(c, text, len, path, &e)) {
        fprintf(stderr, "bench_tui: %s\n", e.msg);
        exit(1);
    }
    free(text);
}

static void machine(void)
{
    struct utsname u;
    char model[256] = "unknown CPU", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
    uname(&u);
    printf("machine: %s, %s %s, %s\n", model, u.sysname, u.machine, curses_version());
}

/* Press `keys` (cycled) n times; returns per-key seconds in t[]. */
static void run(TuiSession *ses, const int *keys, int nk, int n, double *t)
{
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        tui_session_key(ses, keys[i % nk], 0, 0);
        t[i] = now_s() - t0;
    }
}

static void report(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i];
    double p50 = t[n / 2] * 1e3, p99 = t[n * 99 / 100] * 1e3, max = t[n - 1] * 1e3;
    printf("%-44s median %6.3f ms  mean %6.3f ms  p99 %6.3f ms  max %6.3f ms  %s\n", what, p50, sum / n * 1e3, p99, max,
           p99 < 10.0 ? "(target < 10 ms: ok)" : "(target < 10 ms: MISSED)");
}

int main(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    double *t = malloc(sizeof *t * KEYS);
    if (!cat || !t) return 1;
    load(cat, "models.csv", catalog_parse_models);
    load(cat, "gpus.csv", catalog_parse_gpus);
    load(cat, "recipes.csv", catalog_parse_recipes);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(cat, "gpt-175b");
    in.gpu = catalog_gpu(cat, "h100-sxm");
    in.recipe = catalog_recipe(cat, "megatron-bf16");
    in.tp = 8, in.pp = 4, in.dp = 4, in.sharding = SHARD_DIST_OPT;
    TuiState *s = tui_state_new(cat, &in);
    TuiOptions o = {.headless = 1, .rows = 60, .cols = 200, .term = "xterm-256color"};
    Err e;
    TuiSession *ses = s ? tui_session_open(s, &o, &e) : NULL;
    if (!ses) {
        fprintf(stderr, "bench_tui: %s\n", s ? e.msg : "out of memory");
        return 1;
    }
    machine();
    printf("keystroke -> re-plan -> full repaint -> refresh, 200x60, TERM=xterm-256color, %d keys each\n", KEYS);

    s->field[SCR_PLAN] = PF_TP; /* TP 8 <-> 16: each key rebuilds the plan and the three Compare columns */
    const int tp[] = {'+', '-'};
    run(ses, tp, 2, KEYS, t);
    report("Plan, TP +/- (plan + 3 compare plans)", t, KEYS);

    s->field[SCR_PLAN] = PF_RECIPE; /* every recipe in turn (some OOM, some rejected on this GPU) */
    const int rc[] = {KEY_RIGHT};
    run(ses, rc, 1, KEYS, t);
    report("Plan, recipe -> next", t, KEYS);

    tui_session_key(ses, '2', 0, 0);
    const int col[] = {'+'};
    run(ses, col, 1, KEYS, t);
    report("Compare, column recipe -> next", t, KEYS);

    tui_session_key(ses, '4', 0, 0);
    s->field[SCR_SCALING] = DF_HISTORY;
    const int hist[] = {'+', '-'};
    run(ses, hist, 2, KEYS, t);
    report("Scaling, history x2 / /2 (16-step simulation)", t, KEYS);

    tui_session_key(ses, '1', 0, 0); /* the planner alone, for scale */
    Plan *p = malloc(sizeof *p);
    for (int i = 0; i < KEYS; i++) {
        double t0 = now_s();
        in.tp = i % 2 ? 8 : 16;
        plan_build(&in, p, NULL);
        t[i] = now_s() - t0;
    }
    report("plan_build alone (for comparison)", t, KEYS);
    free(p);
    tui_session_close(ses);
    tui_state_free(s);
    free(t);
    free(cat);
    return 0;
}
