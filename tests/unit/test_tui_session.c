/* tests/unit/test_tui_session.c — TUI sessions driven by keys, without a
 * terminal, asserting behaviour against the planner and fp8/: the recipe switch
 * on GPT-175B, TP past the head count, typed numbers, find, Compare columns and
 * the Table 5 presets, delayed scaling after the 640 spike, Table 1b; and a
 * long random key sequence that must keep the state consistent. */
#include <curses.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "check/table5.h"
#include "fp8/scale.h"
#include "reports/seed_report.h"
#include "support/fixtures.h"
#include "support/tui_fixtures.h"
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

/* ---- sessions that assert behaviour -------------------------------------------------------------------------- */

static uint64_t optim_bytes(const Plan *p)
{
    return p->mem[MT_MASTER_GEMM].bytes + p->mem[MT_OPTIM_M_GEMM].bytes + p->mem[MT_OPTIM_V_GEMM].bytes +
           p->mem[MT_GRAD_GEMM].bytes;
}

static void test_recipe_switch_changes_optimizer_terms(void)
{
    TuiState *s = fx_tui_headline(cat);
    CHECK(s->plan_ok);
    Plan before = s->plan;
    CHECK_STR(s->in.recipe->name, "megatron-bf16");
    /* to the recipe field, then Right until fp8lm */
    fx_press(s, KEY_DOWN), fx_press(s, KEY_DOWN);
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_RECIPE);
    for (int i = 0; i < 32 && strcmp(s->in.recipe->name, "fp8lm"); i++) fx_press(s, KEY_RIGHT);
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
    TuiState *s = fx_tui_headline(cat);
    fx_press_str(s, "<Down><Down><Down>");
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_TP);
    fx_press(s, '+'), fx_press(s, '+'); /* 16, 32: 96 heads divide */
    CHECK_EQ_INT(s->in.tp, 32);
    CHECK(s->plan_ok);
    fx_press(s, '+'), fx_press(s, '+'); /* 64, 128 */
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
    fx_press(s, '-'), fx_press(s, '-');
    CHECK(s->plan_ok && s->in.tp == 32);
    tui_state_free(s);
}

static void test_number_prompt(void)
{
    TuiState *s = fx_tui_headline(cat);
    fx_press_str(s, "<Down><Down><Down><Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    fx_press_str(s, "16abc<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT); /* a bad number keeps the prompt, says why, changes nothing */
    CHECK(s->status_err);
    CHECK_CONTAINS(s->status, "TP");
    CHECK_EQ_INT(s->in.tp, 8);
    fx_press_str(s, "<BS><BS><BS><Enter>");
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK_EQ_INT(s->in.tp, 16);
    CHECK(s->plan_ok);
    fx_press_str(s, "<Enter>0<Enter>");
    CHECK_EQ_INT(s->in.tp, 16);        /* 0 is outside [1, ...] */
    fx_press_str(s, "<C-u>12<Enter>"); /* accepted; the planner says why it cannot plan it */
    CHECK_EQ_INT(s->in.tp, 12);
    CHECK(!s->plan_ok);
    CHECK_CONTAINS(s->plan_err.msg, "not divisible by tp = 12");
    fx_press_str(s, "<Enter>7<Esc>");
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK_EQ_INT(s->in.tp, 12);
    tui_state_free(s);
}

/* Bounds of two typed-or-stepped fields. The global batch (Plan, field 10) doubles up to 2^40 =
 * 1,099,511,627,776 and stops there: from 2^39 one step reaches it, another stays; from 3 x 2^38 =
 * 824,633,720,832 (past half the bound) a step gives 2^40, not 1.5 x 2^40; typing 2^40 + 1 is refused.
 * The value explorer's scale (Formats, field 3) takes a positive normal fp32 value: 0.5 and FLT_MAX
 * (3.4028234663852886e38) are accepted; 1e39 (past FLT_MAX) and 1e-39 (below FLT_MIN 1.1754944e-38: a
 * subnormal) are refused, the scale unchanged. */
static void test_typed_bounds(void)
{
    TuiState *s = fx_tui_headline(cat);
    fx_press_str(s, "<Down><Down><Down><Down><Down><Down><Down><Down><Down>");
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_GBS);
    fx_press_str(s, "<Enter>549755813888<Enter><Right>");
    CHECK_EQ_U64(s->in.gbs, 1099511627776ull);
    fx_press_str(s, "<Right>");
    CHECK_EQ_U64(s->in.gbs, 1099511627776ull);
    fx_press_str(s, "<Enter>824633720832<Enter>");
    CHECK_EQ_U64(s->in.gbs, 824633720832ull);
    fx_press_str(s, "<Right>");
    CHECK_EQ_U64(s->in.gbs, 1099511627776ull);
    fx_press_str(s, "<Left>");
    CHECK_EQ_U64(s->in.gbs, 549755813888ull);
    fx_press_str(s, "<Enter>1099511627777<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    fx_press_str(s, "<Esc>");
    CHECK_EQ_U64(s->in.gbs, 549755813888ull);

    fx_press_str(s, "5<Down><Down>");
    CHECK_EQ_INT(s->field[SCR_FORMATS], XF_SCALE);
    fx_press_str(s, "<Enter>0.5<Enter>");
    CHECK_EQ_INT(s->mode, MODE_NORMAL);
    CHECK(s->fx_scale == 0.5f);
    fx_press_str(s, "<Enter>3.4028234663852886e38<Enter>");
    CHECK(s->fx_scale == FLT_MAX);
    fx_press_str(s, "<Enter>0.5<Enter><Enter>1e39<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    CHECK_CONTAINS(s->status, "must be a positive normal fp32 value");
    fx_press_str(s, "<Esc><Enter>1e-39<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    fx_press_str(s, "<Esc>");
    CHECK(s->fx_scale == 0.5f);
    tui_state_free(s);
}

static void test_find(void)
{
    TuiState *s = fx_tui_headline(cat);
    TuiMatch m[TUI_MAX_MATCHES];
    CHECK_EQ_INT(tui_find(s, "LLAMA2", FIND_NONE, m, TUI_MAX_MATCHES), 3);
    CHECK_EQ_INT(tui_find(s, "h100", FIND_GPU, m, TUI_MAX_MATCHES), 3); /* sxm, pcie, hbm2e-96g */
    CHECK_EQ_INT(tui_find(s, "zzz", FIND_NONE, m, TUI_MAX_MATCHES), 0);
    fx_press_str(s, "/70b<Enter>");
    CHECK_STR(s->in.model->name, "llama2-70b");
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_MODEL);
    CHECK(s->plan_ok);                    /* 64 heads, 8 kv heads: TP 8 divides both */
    fx_press_str(s, "/h100<Tab><Enter>"); /* Tab: the second match */
    CHECK_STR(s->in.gpu->name, "h100-pcie");
    fx_press_str(s, "/nothing-like-this<Enter>");
    CHECK_EQ_INT(s->mode, MODE_PROMPT);
    CHECK_CONTAINS(s->status, "no name matches");
    fx_press(s, 27);
    /* on Compare, find sets the selected column's recipe */
    fx_press_str(s, "2<Right>/mxfp8<Enter>");
    CHECK_STR(s->slot[1]->name, "mxfp8");
    tui_state_free(s);
}

static void test_compare_columns(void)
{
    TuiState *s = fx_tui_headline(cat);
    fx_press(s, '2');
    CHECK_EQ_INT(s->nslots, 3);
    CHECK_STR(s->slot[0]->name, "megatron-bf16");
    fx_press_str(s, "<Right><Right>b");
    CHECK_EQ_INT(s->baseline, 2);
    fx_press(s, 'a');
    CHECK_EQ_INT(s->nslots, 4);
    CHECK_EQ_INT(s->field[SCR_COMPARE], 3);
    fx_press_str(s, "<Left>x");
    CHECK_EQ_INT(s->nslots, 3);
    CHECK_EQ_INT(s->baseline, 0); /* the baseline column was removed */
    fx_press(s, '+');
    CHECK(s->cmp_ok[s->field[SCR_COMPARE]]);
    for (int i = 0; i < 4; i++) fx_press(s, 'x');
    CHECK_EQ_INT(s->nslots, 1); /* the last column stays */
    tui_state_free(s);
}

static void test_table5_presets(void)
{
    TuiState *s = fx_tui_headline(cat);
    char *text;
    size_t len;
    Err e;
    CHECK(file_read_all("models/fp8lm_table5.csv", &text, &len, &e) == ST_OK);
    CHECK(tui_state_load_t5(s, text, len, "fp8lm_table5.csv", &e) == ST_OK);
    /* `fp8plan report seed`'s figures for the same rows: the screen must plan exactly as the report does */
    T5Figure *fig = NULL;
    int nfig = 0;
    SeedCheck chk;
    CHECK(check_table5(cat, text, len, "fp8lm_table5.csv", &fig, &nfig, &chk, &e) == ST_OK);
    free(text);
    CHECK(s->nt5 >= 7);
    fx_press_str(s, "2t");
    CHECK_STR(s->in.model->name, "gpt-7b");
    CHECK(s->in.tp == 1 && s->in.pp == 1 && s->in.dp == 32 && s->in.mbs == 2);
    CHECK(s->in.sharding == SHARD_DIST_OPT && !s->in.overlap_dp);
    CHECK_STR(s->slot[0]->name, "megatron-bf16");
    CHECK_STR(s->slot[1]->name, "msamp-o3");
    CHECK(s->cmp_ok[0] && s->cmp_ok[1]);
    fx_press_str(s, "tt"); /* GPT-175B, micro-batch 1: BF16, TE, FP8-LM */
    CHECK_STR(s->in.model->name, "gpt-175b");
    CHECK(s->in.tp == 8 && s->in.pp == 4 && s->in.dp == 4 && s->in.mbs == 1);
    CHECK(s->nslots == 4 && !strcmp(s->slot[1]->name, "te-fp8"));
    /* the seed's point: TE FP8 needs more memory than BF16 at 175B */
    CHECK(s->cmp[1].total_bytes > s->cmp[0].total_bytes);
    /* every GPT-175B micro-batch-1 throughput and memory figure of the report equals the screen's plan
     * (the screen once left the weight-gradient accumulation fused: +26.7 % against the report's +6.8 %) */
    int same = 0;
    for (int i = 0; i < nfig; i++) {
        const T5Figure *f = &fig[i];
        if (strcmp(f->model, "gpt-175b") || strcmp(f->layout, "TP8 PP4 DP4 mbs1")) continue;
        for (int k = 0; k < s->nslots; k++) {
            if (strcmp(f->recipe, s->slot[k]->name)) continue;
            double planned = !strcmp(f->metric, "throughput") ? s->cmp[k].samples_per_s
                             : !strcmp(f->metric, "memory")   ? (double)s->cmp[k].total_bytes / 1e9
                                                              : NAN;
            if (isnan(planned)) continue;
            CHECK(f->predicted == planned);
            same++;
        }
    }
    CHECK_EQ_INT(same, 7); /* memory: bf16, te, msamp-o3, fp8lm; throughput: bf16, te, msamp-o3 */
    free(fig);
    tui_state_free(s);
}

static void test_scaling_spike(void)
{
    TuiState *s = fx_tui_headline(cat);
    fx_press(s, '4');
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
    fx_press_str(s, "<Down><Down><Left><Left><Down>+");
    CHECK_EQ_INT(s->dcfg.hist_len, 1);
    CHECK_EQ_INT(s->dcfg.algo, AMAX_ALGO_MOST_RECENT);
    CHECK(s->steps[6].scale_used == want && s->steps[7].scale_used == 448.0f / 2.0f);
    /* margin (the next field): scale = fmax / amax / 2^margin, so margin 1 halves step 6's 0.7 to 0.35 (exact in
     * fp32: a power of two); stepping stops at the field's bounds, -64 and 64, and does not jump past them */
    fx_press_str(s, "<Down><Right>");
    CHECK_EQ_INT(s->dcfg.margin, 1);
    CHECK(s->steps[6].scale_used == want / 2.0f);
    fx_press_str(s, "<Enter>-64<Enter><Left>");
    CHECK_EQ_INT(s->dcfg.margin, -64);
    fx_press_str(s, "<Enter>64<Enter><Right>");
    CHECK_EQ_INT(s->dcfg.margin, 64);
    fx_press_str(s, "<Left>");
    CHECK_EQ_INT(s->dcfg.margin, 63);
    fx_press_str(s, "<Enter>0<Enter>");
    CHECK_EQ_INT(s->dcfg.margin, 0);
    CHECK(s->steps[6].scale_used == want);
    /* editing an amax makes the scenario custom */
    fx_press_str(s, "<End><Enter>inf<Enter>");
    CHECK_EQ_INT(s->scenario, SCN_CUSTOM);
    CHECK(isinf(s->trace[s->step_cur]));
    CHECK_EQ_INT(s->steps[s->step_cur].why, AMAX_INF);
    int n = s->ntrace;
    fx_press_str(s, "ax");
    CHECK_EQ_INT(s->ntrace, n);
    tui_state_free(s);
}

static void test_scales_table1b(void)
{
    SeedScaleRow r[SEED_T1B_ROWS]; /* the rows the Scales screen draws */
    Err e;
    CHECK(seed_table1b_rows(4096, 4096, r, &e) == ST_OK);
    CHECK_EQ_U64(r[0].total_bytes, 33554432);
    CHECK_EQ_U64(r[1 + GRAN_TENSOR].payload_bytes, 16777216);
    CHECK_NEAR(r[1 + GRAN_TENSOR].payload_of_bf16_pct, 50.0, 0);
    CHECK_EQ_U64(r[1 + GRAN_CHANNEL].scale_bytes, 16384);
    CHECK_EQ_U64(r[1 + GRAN_1X32].scale_bytes, 524288);
    CHECK_NEAR(r[1 + GRAN_1X32].scale_of_payload_pct, 3.125, 0);
    CHECK_NEAR(r[1 + GRAN_1X32].saving_vs_bf16_pct, 48.4375, 0);
    CHECK(seed_table1b_rows(UINT64_MAX / 2, 4, r, &e) == ST_OVERFLOW);
    /* presets: the model's FC1 at TP 8 is [49152/8, 12288] */
    TuiState *s = fx_tui_headline(cat);
    fx_press_str(s, "3+++");
    CHECK_EQ_U64(s->sc_rows, 49152 / 8);
    CHECK_EQ_U64(s->sc_cols, 12288);
    fx_press_str(s, "<Down><Enter>100<Enter>");
    CHECK_EQ_U64(s->sc_rows, 100);
    tui_state_free(s);
}

/* ---- a long random session: whatever the keys, the state stays consistent ----------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
    return (unsigned)(rng >> 32);
}

static int consistent(const TuiState *s)
{
    const TuiField *f;
    int ok = (unsigned)s->screen < SCR_COUNT_ && (unsigned)s->mode <= MODE_PROMPT;
    for (int scr = 0; scr < SCR_COUNT_; scr++) {
        int n = tui_fields((TuiScreen)scr, &f);
        if (n) ok &= s->field[scr] >= 0 && s->field[scr] < n;
    }
    ok &= s->nslots >= 1 && s->nslots <= TUI_MAX_SLOTS && s->baseline >= 0 && s->baseline < s->nslots;
    ok &= s->field[SCR_COMPARE] >= 0 && s->field[SCR_COMPARE] < s->nslots;
    ok &= s->ntrace >= 1 && s->ntrace <= TUI_MAX_TRACE && s->step_cur >= 0 && s->step_cur < s->ntrace;
    ok &= s->in.model >= cat->models && s->in.model < cat->models + cat->nmodels;
    ok &= s->in.gpu >= cat->gpus && s->in.gpu < cat->gpus + cat->ngpus;
    ok &= s->in.recipe >= cat->recipes && s->in.recipe < cat->recipes + cat->nrecipes;
    ok &= strlen(s->prompt.text) < sizeof s->prompt.text;
    /* the plan shown is the planner's plan for the inputs shown, or its refusal */
    static Plan p;
    int built = plan_build(&s->in, &p, NULL) == ST_OK;
    ok &= built == s->plan_ok && (!built || p.total_bytes == s->plan.total_bytes);
    return ok;
}

static void test_random_keys_keep_state_consistent(void)
{
    /* every key of the table and some text; no 'e' (an export would write files here) */
    int pool[96], n = 0;
    for (int i = 0; i < tui_nkeys; i++)
        for (int k = 0; k < 4 && tui_keys[i].keys[k]; k++)
            if (tui_keys[i].keys[k] != 'e' && tui_keys[i].keys[k] != 'q' && n < 80) pool[n++] = tui_keys[i].keys[k];
    const char extra[] = "0123456789.x/abcz-";
    for (size_t i = 0; i < sizeof extra - 1 && n < 96; i++) pool[n++] = extra[i];
    TuiState *s = NULL;
    int bad = 0, valid = 0, screens[SCR_COUNT_] = {0};
    for (int i = 0; i < 20000 && bad < 5; i++) {
        if (i % 400 == 0) { /* a fresh start now and then, so valid plans keep being explored */
            tui_state_free(s);
            s = fx_tui_headline(cat);
        }
        int k = pool[next_rand() % (unsigned)n];
        s->too_small = next_rand() % 100 == 0; /* now and then the terminal is too small */
        fx_press(s, k);
        s->too_small = 0;
        if (!consistent(s)) CHECKF(++bad == 0, "state inconsistent after key %d at step %d", k, i);
        valid += s->plan_ok;
        screens[s->screen]++;
        if (i % 97 == 0) { /* the views' inputs stay computable */
            char lines[160][160];
            TuiHint h[48];
            CHECK(tui_help_lines(s, lines, 160) > 0);
            CHECK(tui_footer(s, 80, h, 48) > 0);
            Err e;
            Table *t = tui_export_table(s, &e);
            CHECK(t || e.st);
            table_free(t);
        }
    }
    tui_state_free(s);
    /* the walk really covered valid plans and every screen */
    CHECKF(valid > 2000, "only %d of 20000 steps had a valid plan", valid);
    for (int i = 0; i < SCR_COUNT_; i++) CHECKF(screens[i] > 1000, "screen %d seen %d times", i, screens[i]);
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_recipe_switch_changes_optimizer_terms);
    RUN(test_tp_past_heads_shows_validation);
    RUN(test_number_prompt);
    RUN(test_typed_bounds);
    RUN(test_find);
    RUN(test_compare_columns);
    RUN(test_table5_presets);
    RUN(test_scaling_spike);
    RUN(test_scales_table1b);
    RUN(test_random_keys_keep_state_consistent);
    free(cat);
    return test_summary();
}
