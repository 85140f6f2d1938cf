/* tests/unit/test_tui.c — the TUI without a terminal: layout, the memory bar,
 * the key table (dispatch, footer, help), fields and prompts, and sessions that
 * assert behaviour against the planner and fp8/ (recipe switch on GPT-175B,
 * TP past the head count, delayed scaling after the 640 spike, Table 1b). */
#include <curses.h>
#include <float.h>
#include <stdlib.h>

#include "fp8/scale.h"
#include "planner/catalog.h"
#include "test.h"
#include "tui/export.h"
#include "tui/fields.h"
#include "tui/keys.h"
#include "tui/layout.h"
#include "tui/model.h"
#include "tui/prompt.h"
#include "tui/script.h"
#include "tui/state.h"
#include "util/fileio.h"

static Catalog *cat;

static void load(const char *file, Status (*parse)(Catalog *, const char *, size_t, const char *, Err *))
{
    char path[256], *text;
    size_t len;
    Err e;
    snprintf(path, sizeof path, "models/%s", file);
    if (file_read_all(path, &text, &len, &e) || parse(cat, text, len, path, &e)) {
        fprintf(stderr, "cannot load %s: %s\n", path, e.msg);
        exit(1);
    }
    free(text);
}

/* The seed's headline: GPT-175B on H100, megatron-bf16, TP8 PP4 DP4, distributed optimizer. */
static TuiState *headline(void)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = catalog_model(cat, "gpt-175b");
    in.gpu = catalog_gpu(cat, "h100-sxm");
    in.recipe = catalog_recipe(cat, "megatron-bf16");
    in.tp = 8, in.pp = 4, in.dp = 4, in.sharding = SHARD_DIST_OPT;
    TuiState *s = tui_state_new(cat, &in);
    s->rows = 24, s->cols = 80;
    tui_recompute(s, ACT_ALL);
    return s;
}

/* Press keys as the shell does: dispatch, then recompute what the action says. */
static unsigned press(TuiState *s, int key)
{
    unsigned act = tui_key(s, key);
    tui_recompute(s, act);
    return act;
}

static void press_str(TuiState *s, const char *keys)
{
    const char *p = keys;
    TuiScriptKey k;
    Err e;
    while (tui_script_next(&p, &k, &e) > 0) press(s, k.key);
}

/* ---- layout ------------------------------------------------------------------------------------------------ */

static void check_disjoint(const TuiRect *r, int n, int rows, int cols)
{
    for (int i = 0; i < n; i++) {
        CHECKF(tui_rect_inside(r[i], rows, cols), "%dx%d: rect %d (%d,%d %dx%d) outside", cols, rows, i, r[i].y, r[i].x,
               r[i].w, r[i].h);
        for (int j = i + 1; j < n; j++)
            CHECKF(!tui_rect_overlap(r[i], r[j]), "%dx%d: rects %d and %d overlap", cols, rows, i, j);
    }
}

static void test_layout_pure(void)
{
    for (int rows = 24; rows <= 100; rows += 7)
        for (int cols = 80; cols <= 300; cols += 11) {
            TuiLayout l;
            tui_layout(rows, cols, &l);
            CHECK(!l.too_small);
            TuiRect frame[] = {l.title, l.body, l.status, l.footer};
            check_disjoint(frame, 4, rows, cols);
            TuiRect plan[] = {l.title, l.form, l.summary, l.details[0], l.details[1], l.status, l.footer};
            check_disjoint(plan, l.ndetails == 2 ? 7 : 4, rows, cols);
            TuiRect scales[] = {l.sc_form, l.sc_note, l.sc_table, l.status};
            check_disjoint(scales, 4, rows, cols);
            TuiRect scaling[] = {l.dl_form, l.dl_detail, l.dl_chart, l.dl_table, l.status};
            check_disjoint(scaling, 5, rows, cols);
            TuiRect fx[] = {l.fx_form, l.fx_result, l.fx_table, l.status};
            check_disjoint(fx, 4, rows, cols);
            CHECK(l.form.h == PF_COUNT && l.dl_form.h >= DF_COUNT && l.fx_form.h > XF_COUNT);
            CHECK(l.ndetails == (cols >= 160 ? 2 : 1));
        }
}

static void test_layout_too_small(void)
{
    TuiLayout l;
    tui_layout(15, 60, &l);
    CHECK(l.too_small);
    CHECK_EQ_INT(l.need_cols, 80);
    CHECK_EQ_INT(l.need_rows, 24);
    tui_layout(24, 79, &l);
    CHECK(l.too_small);
    tui_layout(23, 200, &l);
    CHECK(l.too_small);
    tui_layout(24, 80, &l);
    CHECK(!l.too_small);
    tui_layout(1, 1, &l);
    CHECK(l.too_small);
}

/* ---- the memory bar ------------------------------------------------------------------------------------------ */

static void test_bar_split(void)
{
    int cells[5], cap;
    uint64_t v[5] = {50, 0, 1, 10, 5};
    int used = tui_bar_split(v, 5, 100, 40, cells, &cap);
    CHECK_EQ_INT(used, 26); /* round(66 * 40 / 100) */
    CHECK_EQ_INT(cells[0] + cells[1] + cells[2] + cells[3] + cells[4], used);
    CHECK_EQ_INT(cells[0], 20);
    CHECK_EQ_INT(cells[1], 0);
    CHECK_EQ_INT(cap, 40);
    /* over capacity: the bar is full and the capacity mark sits at capacity / sum */
    uint64_t o[2] = {150, 50};
    used = tui_bar_split(o, 2, 100, 40, cells, &cap);
    CHECK_EQ_INT(used, 40);
    CHECK_EQ_INT(cells[0], 30);
    CHECK_EQ_INT(cap, 20);
    /* three equal thirds of 10 cells: 4, 3, 3 (the earlier term wins the tie) */
    uint64_t t[3] = {1, 1, 1};
    tui_bar_split(t, 3, 3, 10, cells, &cap);
    CHECK(cells[0] == 4 && cells[1] == 3 && cells[2] == 3);
    /* nothing at all */
    uint64_t z[2] = {0, 0};
    CHECK_EQ_INT(tui_bar_split(z, 2, 0, 10, cells, &cap), 0);
}

/* ---- keys, footer, help -------------------------------------------------------------------------------------- */

static void test_screens_and_quit(void)
{
    TuiState *s = headline();
    CHECK_EQ_INT(s->screen, SCR_PLAN);
    for (int i = 1; i <= SCR_COUNT_; i++) {
        press(s, '\t');
        CHECK_EQ_INT(s->screen, i % SCR_COUNT_);
    }
    press(s, KEY_BTAB);
    CHECK_EQ_INT(s->screen, SCR_FORMATS);
    press(s, '3');
    CHECK_EQ_INT(s->screen, SCR_SCALES);
    press(s, '?');
    CHECK_EQ_INT(s->mode, MODE_HELP);
    CHECK(!(press(s, 'q') & ACT_QUIT)); /* q closes the help first */
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK(press(s, 12) & ACT_CLEAR); /* Ctrl-L */
    CHECK(press(s, 'q') & ACT_QUIT);
    CHECK(tui_key(s, KEY_F(10)) & ACT_QUIT);
    s->too_small = 1; /* only quit and redraw act on the too-small screen */
    CHECK_EQ_INT(tui_key(s, '2'), ACT_NONE);
    CHECK_EQ_INT(s->screen, SCR_SCALES);
    CHECK(tui_key(s, 'q') & ACT_QUIT);
    tui_state_free(s);
}

static int footer_has(const TuiState *s, const char *label)
{
    TuiHint h[48];
    int n = tui_footer(s, 400, h, 48);
    for (int i = 0; i < n; i++)
        if (!strcmp(h[i].label, label)) return 1;
    return 0;
}

static void test_footer_from_key_table(void)
{
    TuiState *s = headline();
    /* screen-specific keys appear only where they act */
    CHECK(footer_has(s, "Find") && footer_has(s, "Change") && !footer_has(s, "Baseline"));
    press(s, '2');
    CHECK(footer_has(s, "Baseline") && footer_has(s, "Table 5") && !footer_has(s, "Field"));
    press(s, '4');
    CHECK(footer_has(s, "Step") && !footer_has(s, "Find"));
    press(s, '?');
    CHECK(footer_has(s, "Close") && !footer_has(s, "Export"));
    press(s, 27);
    press(s, '1');
    press(s, '/');
    CHECK(footer_has(s, "OK") && footer_has(s, "Cancel") && !footer_has(s, "Quit"));
    press(s, 27);
    /* at 80 columns every context's footer fits and keeps Help (or its prompt keys) and Quit */
    for (int scr = 0; scr < SCR_COUNT_; scr++) {
        s->screen = (TuiScreen)scr;
        TuiHint h[48];
        int n = tui_footer(s, 80, h, 48), w = 0, quit = 0, help = 0;
        for (int i = 0; i < n; i++) {
            w += (int)strlen(h[i].key) + (int)strlen(h[i].label) + 2;
            quit |= !strcmp(h[i].label, "Quit");
            help |= !strcmp(h[i].label, "Help");
        }
        CHECKF(w <= 80, "screen %d footer is %d columns", scr, w);
        CHECK(quit && help && n >= 5);
    }
    tui_state_free(s);
}

static void test_help_and_hints_fit(void)
{
    TuiState *s = headline();
    char lines[160][160];
    for (int scr = 0; scr < SCR_COUNT_; scr++) {
        s->screen = (TuiScreen)scr;
        int n = tui_help_lines(s, lines, 160);
        CHECK(n > 30 && n < 160);
        int walk = 0;
        for (int i = 0; i < n; i++) {
            CHECKF(strlen(lines[i]) <= 79, "help line too wide for 80 columns: %s", lines[i]);
            walk |= strstr(lines[i], "640") != NULL && strstr(lines[i], "spike") != NULL;
        }
        CHECK(walk); /* the walkthroughs are on every screen's help */
        const TuiField *f;
        int nf = tui_fields((TuiScreen)scr, &f);
        for (int i = 0; i < nf; i++)
            CHECKF(strlen(f[i].label) + 2 + strlen(f[i].hint) <= 80, "hint too wide: %s", f[i].hint);
    }
    tui_state_free(s);
}

/* ---- sessions that assert behaviour -------------------------------------------------------------------------- */

static uint64_t optim_bytes(const Plan *p)
{
    return p->mem[MT_MASTER_GEMM].bytes + p->mem[MT_OPTIM_M_GEMM].bytes + p->mem[MT_OPTIM_V_GEMM].bytes +
           p->mem[MT_GRAD_GEMM].bytes;
}

static void test_recipe_switch_changes_optimizer_terms(void)
{
    TuiState *s = headline();
    CHECK(s->plan_ok);
    Plan before = s->plan;
    CHECK_STR(s->in.recipe->name, "megatron-bf16");
    /* to the recipe field, then Right until fp8lm */
    press(s, KEY_DOWN), press(s, KEY_DOWN);
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_RECIPE);
    for (int i = 0; i < 32 && strcmp(s->in.recipe->name, "fp8lm"); i++) press(s, KEY_RIGHT);
    CHECK_STR(s->in.recipe->name, "fp8lm");
    CHECK(s->plan_ok);
    /* exactly what the planner says for the same inputs */
    PlanInput in = before.in;
    in.recipe = catalog_recipe(cat, "fp8lm");
    Plan want;
    CHECK(plan_build(&in, &want, NULL) == ST_OK);
    for (int t = 0; t < MT_COUNT_; t++) CHECK_EQ_U64(s->plan.mem[t].bytes, want.mem[t].bytes);
    CHECK_EQ_U64(s->plan.total_bytes, want.total_bytes);
    /* and the optimizer terms moved: FP32 m, v (4 B) -> FP8 m (1 B), FP16 v (2 B); FP32 master -> FP16 */
    uint64_t shard = before.mem[MT_OPTIM_M_GEMM].elements;
    CHECK_EQ_U64(before.mem[MT_OPTIM_M_GEMM].bytes, 4 * shard);
    CHECK_EQ_U64(s->plan.mem[MT_OPTIM_M_GEMM].bytes, shard);
    CHECK_EQ_U64(s->plan.mem[MT_OPTIM_V_GEMM].bytes, 2 * shard);
    CHECK_EQ_U64(s->plan.mem[MT_MASTER_GEMM].bytes, 2 * shard);
    CHECK(optim_bytes(&s->plan) < optim_bytes(&before));
    /* the bytes per parameter line of Table 1a: 18 -> 6 */
    CHECK_NEAR(tui_state_bytes_per_param(s, 0, NULL), 6.0, 0);
    /* the Compare columns follow the same layout */
    CHECK(s->cmp_ok[2] && !strcmp(s->slot[2]->name, "fp8lm"));
    CHECK_EQ_U64(s->cmp[2].total_bytes, want.total_bytes);
    tui_state_free(s);
}

static void test_tp_past_heads_shows_validation(void)
{
    TuiState *s = headline();
    press_str(s, "<Down><Down><Down>");
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_TP);
    press(s, '+'), press(s, '+'); /* 16, 32: 96 heads divide */
    CHECK_EQ_INT(s->in.tp, 32);
    CHECK(s->plan_ok);
    press(s, '+'), press(s, '+'); /* 64, 128 */
    CHECK_EQ_INT(s->in.tp, 128);
    CHECK(!s->plan_ok);
    Err e;
    CHECK(plan_validate(&s->in, &e) == REJECT_HEADS_TP);
    CHECK_STR(s->plan_err.msg, e.msg);
    CHECK_CONTAINS(s->plan_err.msg, "96 heads");
    /* nothing to export instead of a stale plan */
    Table *t = tui_export_table(s, &e);
    CHECK(!t && e.st == ST_USAGE);
    CHECK_CONTAINS(e.msg, "nothing to export");
    press(s, '-'), press(s, '-');
    CHECK(s->plan_ok && s->in.tp == 32);
    tui_state_free(s);
}

static void test_number_prompt(void)
{
    TuiState *s = headline();
    press_str(s, "<Down><Down><Down><Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    press_str(s, "16abc<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT); /* a bad number keeps the prompt, says why, changes nothing */
    CHECK(s->status_err);
    CHECK_CONTAINS(s->status, "TP");
    CHECK_EQ_INT(s->in.tp, 8);
    press_str(s, "<BS><BS><BS><Enter>");
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK_EQ_INT(s->in.tp, 16);
    CHECK(s->plan_ok);
    press_str(s, "<Enter>0<Enter>");
    CHECK_EQ_INT(s->in.tp, 16);     /* 0 is outside [1, ...] */
    press_str(s, "<C-u>12<Enter>"); /* accepted; the planner says why it cannot plan it */
    CHECK_EQ_INT(s->in.tp, 12);
    CHECK(!s->plan_ok);
    CHECK_CONTAINS(s->plan_err.msg, "not divisible by tp = 12");
    press_str(s, "<Enter>7<Esc>");
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK_EQ_INT(s->in.tp, 12);
    tui_state_free(s);
}

static void test_find(void)
{
    TuiState *s = headline();
    TuiMatch m[TUI_MAX_MATCHES];
    CHECK_EQ_INT(tui_find(s, "LLAMA2", FIND_NONE, m, TUI_MAX_MATCHES), 3);
    CHECK_EQ_INT(tui_find(s, "h100", FIND_GPU, m, TUI_MAX_MATCHES), 2);
    CHECK_EQ_INT(tui_find(s, "zzz", FIND_NONE, m, TUI_MAX_MATCHES), 0);
    press_str(s, "/70b<Enter>");
    CHECK_STR(s->in.model->name, "llama2-70b");
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_MODEL);
    CHECK(s->plan_ok);                 /* 64 heads, 8 kv heads: TP 8 divides both */
    press_str(s, "/h100<Tab><Enter>"); /* Tab: the second match */
    CHECK_STR(s->in.gpu->name, "h100-pcie");
    press_str(s, "/nothing-like-this<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    CHECK_CONTAINS(s->status, "no name matches");
    press(s, 27);
    /* on Compare, find sets the selected column's recipe */
    press_str(s, "2<Right>/mxfp8<Enter>");
    CHECK_STR(s->slot[1]->name, "mxfp8");
    tui_state_free(s);
}

static void test_compare_columns(void)
{
    TuiState *s = headline();
    press(s, '2');
    CHECK_EQ_INT(s->nslots, 3);
    CHECK_STR(s->slot[0]->name, "megatron-bf16");
    press_str(s, "<Right><Right>b");
    CHECK_EQ_INT(s->baseline, 2);
    press(s, 'a');
    CHECK_EQ_INT(s->nslots, 4);
    CHECK_EQ_INT(s->field[SCR_COMPARE], 3);
    press_str(s, "<Left>x");
    CHECK_EQ_INT(s->nslots, 3);
    CHECK_EQ_INT(s->baseline, 0); /* the baseline column was removed */
    press(s, '+');
    CHECK(s->cmp_ok[s->field[SCR_COMPARE]]);
    for (int i = 0; i < 4; i++) press(s, 'x');
    CHECK_EQ_INT(s->nslots, 1); /* the last column stays */
    tui_state_free(s);
}

static void test_table5_presets(void)
{
    TuiState *s = headline();
    char *text;
    size_t len;
    Err e;
    CHECK(file_read_all("models/fp8lm_table5.csv", &text, &len, &e) == ST_OK);
    CHECK(tui_state_load_t5(s, text, len, "fp8lm_table5.csv", &e) == ST_OK);
    free(text);
    CHECK(s->nt5 >= 7);
    press_str(s, "2t");
    CHECK_STR(s->in.model->name, "gpt-7b");
    CHECK(s->in.tp == 1 && s->in.pp == 1 && s->in.dp == 32 && s->in.mbs == 2);
    CHECK(s->in.sharding == SHARD_DIST_OPT && !s->in.overlap_dp);
    CHECK_STR(s->slot[0]->name, "megatron-bf16");
    CHECK_STR(s->slot[1]->name, "msamp-o3");
    CHECK(s->cmp_ok[0] && s->cmp_ok[1]);
    press_str(s, "tt"); /* GPT-175B, micro-batch 1: BF16, TE, FP8-LM */
    CHECK_STR(s->in.model->name, "gpt-175b");
    CHECK(s->in.tp == 8 && s->in.pp == 4 && s->in.dp == 4 && s->in.mbs == 1);
    CHECK(s->nslots == 4 && !strcmp(s->slot[1]->name, "te-fp8"));
    /* the seed's point: TE FP8 needs more memory than BF16 at 175B */
    CHECK(s->cmp[1].total_bytes > s->cmp[0].total_bytes);
    tui_state_free(s);
}

static void test_scaling_spike(void)
{
    TuiState *s = headline();
    press(s, '4');
    CHECK(s->sim_ok);
    CHECK_EQ_INT(s->scenario, SCN_SPIKE);
    CHECK(s->trace[5] == 640.0f);
    /* the step after the spike casts with 448/640 = 0.7 (in fp32), flushing |x| <= ~0.00140 */
    float want = 448.0f / 640.0f;
    CHECK(s->steps[6].scale_used == want);
    ScaleBounds b;
    CHECK(scale_bounds(DT_E4M3, s->steps[6].scale_used, &b) == 0);
    CHECK_REL(b.flush_below, 0.00139508928, 1e-6);
    CHECK_REL(b.min_sub_below, 0.00279017857, 1e-6);
    /* history 4 / max holds 0.7 for four steps; Megatron's 1 / most_recent recovers at once */
    CHECK(s->steps[9].scale_used == want && s->steps[10].scale_used != want);
    press_str(s, "<Down><Down><Left><Left><Down>+");
    CHECK_EQ_INT(s->dcfg.hist_len, 1);
    CHECK_EQ_INT(s->dcfg.algo, AMAX_ALGO_MOST_RECENT);
    CHECK(s->steps[6].scale_used == want && s->steps[7].scale_used == 448.0f / 2.0f);
    /* editing an amax makes the scenario custom */
    press_str(s, "<End><Enter>inf<Enter>");
    CHECK_EQ_INT(s->scenario, SCN_CUSTOM);
    CHECK(isinf(s->trace[s->step_cur]));
    CHECK_EQ_INT(s->steps[s->step_cur].why, AMAX_INF);
    int n = s->ntrace;
    press_str(s, "ax");
    CHECK_EQ_INT(s->ntrace, n);
    tui_state_free(s);
}

static void test_scales_table1b(void)
{
    TuiScaleRow r[TUI_SCALE_ROWS];
    Err e;
    CHECK(tui_scale_rows(4096, 4096, r, &e) == ST_OK);
    CHECK_EQ_U64(r[0].total, 33554432);
    CHECK_EQ_U64(r[1 + GRAN_TENSOR].payload, 16777216);
    CHECK_NEAR(r[1 + GRAN_TENSOR].payload_pct_of_bf16, 50.0, 0);
    CHECK_EQ_U64(r[1 + GRAN_CHANNEL].scale_bytes, 16384);
    CHECK_EQ_U64(r[1 + GRAN_1X32].scale_bytes, 524288);
    CHECK_NEAR(r[1 + GRAN_1X32].scale_pct_of_payload, 3.125, 0);
    CHECK_NEAR(r[1 + GRAN_1X32].saving_pct, 48.4375, 0);
    CHECK(tui_scale_rows(UINT64_MAX / 2, 4, r, &e) == ST_OVERFLOW);
    /* presets: the model's FC1 at TP 8 is [49152/8, 12288] */
    TuiState *s = headline();
    press_str(s, "3+++");
    CHECK_EQ_U64(s->sc_rows, 49152 / 8);
    CHECK_EQ_U64(s->sc_cols, 12288);
    press_str(s, "<Down><Enter>100<Enter>");
    CHECK_EQ_U64(s->sc_rows, 100);
    tui_state_free(s);
}

static void test_value_explorer(void)
{
    TuiFx fx;
    tui_fx_compute(0.3, DT_E4M3, 1.0f, FP8_SATFINITE, &fx);
    CHECK_EQ_INT(fx.code, 0x2A);
    CHECK_STR(fx.bits, "0.0101.010");
    CHECK_NEAR(fx.value, 0.3125, 0);
    CHECK_NEAR(fx.prev, 0.28125, 0);
    CHECK_NEAR(fx.next, 0.34375, 0);
    CHECK_EQ_INT(fx.cls, FX_NORMAL);
    tui_fx_compute(500, DT_E4M3, 1.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x7E && fx.cls == FX_SATURATED);
    tui_fx_compute(500, DT_E4M3, 1.0f, FP8_NOSAT, &fx);
    CHECK(fx.cls == FX_OVERFLOW);
    /* the seed's 640 spike: at scale 0.7, 0.0013 flushes and 0.002 is the minimum subnormal */
    tui_fx_compute(0.0013, DT_E4M3, 448.0f / 640.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x00 && fx.cls == FX_ZERO);
    tui_fx_compute(0.002, DT_E4M3, 448.0f / 640.0f, FP8_SATFINITE, &fx);
    CHECK(fx.code == 0x01 && fx.cls == FX_SUBNORMAL);
    tui_fx_compute(1e9, DT_E5M2, 1.0f, FP8_NOSAT, &fx);
    CHECK(fx.cls == FX_OVERFLOW && fp8_is_inf(DT_E5M2, fx.code));
    /* Right steps onto the next grid point */
    TuiState *s = headline();
    press_str(s, "5+");
    CHECK_NEAR(s->fx_value, 0.34375, 0);
    press_str(s, "<Enter>nan<Enter>");
    CHECK(isnan(s->fx_value));
    press_str(s, "<Down><Down><Enter>-1<Enter>");
    CHECK(s->mode == MODE_PROMPT && s->fx_scale == 1.0f); /* scales must be positive */
    tui_state_free(s);
}

static void test_script_parser(void)
{
    const char *p = "a<Up><resize=60x15><C-l><F10><lt><S-Tab>";
    TuiScriptKey k;
    Err e;
    int want[] = {'a', KEY_UP, KEY_RESIZE, 12, KEY_F(10), '<', KEY_BTAB};
    for (int i = 0; i < 7; i++) {
        CHECK_EQ_INT(tui_script_next(&p, &k, &e), 1);
        CHECK_EQ_INT(k.key, want[i]);
        if (k.key == KEY_RESIZE) CHECK(k.cols == 60 && k.rows == 15);
    }
    CHECK_EQ_INT(tui_script_next(&p, &k, &e), 0);
    CHECK_EQ_INT(tui_script_check("<Nope>", &e), -1);
    CHECK_CONTAINS(e.msg, "unknown key <Nope>");
    CHECK_EQ_INT(tui_script_check("<resize=0x5>", &e), -1);
    CHECK_EQ_INT(tui_script_check("ab<Up", &e), -1);
    CHECK_EQ_INT(tui_script_check("ab<Up>", &e), 3);
}

static void test_format_helpers(void)
{
    char b[40];
    CHECK_STR(tui_fmt_bytes(0, b, 40), "0 B");
    CHECK_STR(tui_fmt_bytes(6912, b, 40), "6.9 kB");
    CHECK_STR(tui_fmt_bytes(65040000000ull, b, 40), "65.04 GB");
    CHECK_STR(tui_fmt_bytes(2705829000000ull, b, 40), "2,705.8 GB");
    CHECK_STR(tui_fmt_seconds(0, b, 40), "0 s");
    CHECK_STR(tui_fmt_seconds(0.0123, b, 40), "12.3 ms");
    CHECK_STR(tui_fmt_num(INFINITY, 4, b, 40), "inf");
}

int main(void)
{
    cat = calloc(1, sizeof *cat);
    load("models.csv", catalog_parse_models);
    load("gpus.csv", catalog_parse_gpus);
    load("recipes.csv", catalog_parse_recipes);
    RUN(test_layout_pure);
    RUN(test_layout_too_small);
    RUN(test_bar_split);
    RUN(test_screens_and_quit);
    RUN(test_footer_from_key_table);
    RUN(test_help_and_hints_fit);
    RUN(test_recipe_switch_changes_optimizer_terms);
    RUN(test_tp_past_heads_shows_validation);
    RUN(test_number_prompt);
    RUN(test_find);
    RUN(test_compare_columns);
    RUN(test_table5_presets);
    RUN(test_scaling_spike);
    RUN(test_scales_table1b);
    RUN(test_value_explorer);
    RUN(test_script_parser);
    RUN(test_format_helpers);
    free(cat);
    return test_summary();
}
