/* tui/keys.c — the key table, its actions, the footer and the help text (see keys.h). */
#include "tui/keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "check/table5.h"
#include "reports/seed_report.h"
#include "tui/export.h"
#include "tui/fields.h"
#include "tui/layout.h"
#include "tui/prompt.h"

#define CTRL(c) ((c)&0x1f)
enum { K_ESC = 27, K_DEL = 127 };

const char *tui_screen_name(TuiScreen scr)
{
    static const char *const n[SCR_COUNT_] = {"Plan", "Compare", "Scales", "Scaling", "Formats"};
    return (unsigned)scr < SCR_COUNT_ ? n[scr] : "?";
}

unsigned tui_context(const TuiState *s)
{
    if (s->too_small) return W_SMALL;
    if (s->mode == MODE_HELP) return W_HELP;
    if (s->mode == MODE_PROMPT) return W_PROMPT | (s->prompt.kind == PROMPT_FIND ? (unsigned)W_FIND : 0u);
    return 1u << s->screen;
}

/* ---- global actions ---------------------------------------------------------------------------------------- */

static unsigned a_quit(TuiState *s, int k) { return (void)s, (void)k, ACT_QUIT; }
static unsigned a_redraw(TuiState *s, int k) { return (void)s, (void)k, ACT_CLEAR | ACT_REDRAW; }
static unsigned a_help(TuiState *s, int k)
{
    (void)k;
    s->mode = MODE_HELP;
    s->help_scroll = 0;
    return ACT_REDRAW;
}
static unsigned a_help_close(TuiState *s, int k) { return (void)k, s->mode = MODE_NORMAL, ACT_REDRAW; }
static unsigned a_help_scroll(TuiState *s, int k)
{
    int d = k == KEY_UP || k == 'k' ? -1 : k == KEY_DOWN || k == 'j' ? 1 : k == KEY_PPAGE ? -10 : 10;
    s->help_scroll += d; /* the view clamps it to the text */
    if (s->help_scroll < 0) s->help_scroll = 0;
    return ACT_REDRAW;
}
static unsigned goto_screen(TuiState *s, int scr)
{
    s->screen = (TuiScreen)(((scr % SCR_COUNT_) + SCR_COUNT_) % SCR_COUNT_);
    s->status[0] = '\0';
    return ACT_REDRAW;
}
static unsigned a_next(TuiState *s, int k) { return (void)k, goto_screen(s, (int)s->screen + 1); }
static unsigned a_prev(TuiState *s, int k) { return (void)k, goto_screen(s, (int)s->screen - 1); }
static unsigned a_number(TuiState *s, int k) { return goto_screen(s, k - '1'); }
static unsigned a_export(TuiState *s, int k)
{
    (void)k;
    char path[256];
    tui_export_default_path(s, path, sizeof path);
    return tui_prompt_open(s, PROMPT_EXPORT, 0, path);
}

/* ---- fields --------------------------------------------------------------------------------------------------- */

static unsigned a_move(TuiState *s, int k)
{
    const TuiField *f;
    int n = tui_fields(s->screen, &f), *i = &s->field[s->screen];
    if (!n) return ACT_NONE;
    if (k == KEY_HOME) *i = 0;
    if (k == KEY_END) *i = n - 1;
    if ((k == KEY_UP || k == 'k') && *i > 0) --*i;
    if ((k == KEY_DOWN || k == 'j') && *i < n - 1) ++*i;
    s->status[0] = '\0';
    return ACT_REDRAW;
}
static unsigned a_change(TuiState *s, int k)
{
    const TuiField *f = tui_focused_field(s);
    if (!f) return ACT_NONE;
    s->status[0] = '\0';
    return f->step(s, k == KEY_RIGHT || k == '+' || k == '=' ? +1 : -1) | ACT_REDRAW;
}
static unsigned a_enter(TuiState *s, int k)
{
    const TuiField *f = tui_focused_field(s);
    if (!f) return ACT_NONE;
    if (f->set) return tui_prompt_open(s, PROMPT_NUMBER, s->field[s->screen], NULL);
    if (f->find) return tui_prompt_open(s, PROMPT_FIND, f->find, NULL);
    return (void)k, a_change(s, '+');
}
static unsigned a_find(TuiState *s, int k)
{
    (void)k;
    return tui_prompt_open(s, PROMPT_FIND, s->screen == SCR_COMPARE ? FIND_RECIPE : FIND_NONE, NULL);
}
static unsigned a_scroll(TuiState *s, int k)
{
    TuiLayout l; /* a page is what the scrolled area shows */
    tui_layout(s->rows, s->cols, &l);
    int page = s->screen == SCR_COMPARE ? l.compare.h - 4 : l.details[0].h - 2;
    if (page < 1) page = 1;
    int d = k == KEY_PPAGE ? -page : k == KEY_NPAGE ? page : k == KEY_UP || k == 'k' ? -1 : 1;
    s->scroll[s->screen] += d; /* the view clamps it */
    if (s->scroll[s->screen] < 0) s->scroll[s->screen] = 0;
    return ACT_REDRAW;
}

/* ---- Compare ---------------------------------------------------------------------------------------------------- */

static int recipe_index(const TuiState *s, const Recipe *r) { return (int)(r - s->cat->recipes); }

static unsigned a_col(TuiState *s, int k)
{
    int *c = &s->field[SCR_COMPARE];
    if (k == KEY_LEFT && *c > 0) --*c;
    if (k == KEY_RIGHT && *c < s->nslots - 1) ++*c;
    return ACT_REDRAW;
}
static unsigned a_col_recipe(TuiState *s, int k)
{
    int c = s->field[SCR_COMPARE], n = s->cat->nrecipes;
    if (c >= s->nslots) return ACT_NONE;
    int i = recipe_index(s, s->slot[c]) + (k == '-' ? -1 : 1);
    s->slot[c] = &s->cat->recipes[((i % n) + n) % n];
    s->t5_preset = -1;
    return ACT_REPLAN | ACT_REDRAW;
}
static unsigned a_col_add(TuiState *s, int k)
{
    (void)k;
    if (s->nslots >= TUI_MAX_SLOTS)
        return tui_status(s, 1, "at most %d recipes side by side", TUI_MAX_SLOTS), ACT_REDRAW;
    int c = s->field[SCR_COMPARE];
    const Recipe *next = &s->cat->recipes[(recipe_index(s, s->slot[c]) + 1) % s->cat->nrecipes];
    memmove(&s->slot[c + 2], &s->slot[c + 1], sizeof *s->slot * (size_t)(s->nslots - c - 1));
    s->slot[c + 1] = next;
    s->nslots++;
    s->field[SCR_COMPARE] = c + 1;
    if (s->baseline > c) s->baseline++;
    return ACT_REPLAN | ACT_REDRAW;
}
static unsigned a_col_del(TuiState *s, int k)
{
    (void)k;
    int c = s->field[SCR_COMPARE];
    if (s->nslots <= 1) return tui_status(s, 1, "the last column stays"), ACT_REDRAW;
    memmove(&s->slot[c], &s->slot[c + 1], sizeof *s->slot * (size_t)(s->nslots - c - 1));
    s->nslots--;
    if (s->baseline == c)
        s->baseline = 0;
    else if (s->baseline > c)
        s->baseline--;
    if (c >= s->nslots) s->field[SCR_COMPARE] = s->nslots - 1;
    return ACT_REPLAN | ACT_REDRAW;
}
static unsigned a_baseline(TuiState *s, int k)
{
    (void)k;
    s->baseline = s->field[SCR_COMPARE];
    tui_status(s, 0, "deltas are now against %s", s->slot[s->baseline]->name);
    return ACT_REDRAW;
}

/* `t`: the next FP8-LM Table 5 setup: its model, layout and recipes on h100-sxm. */
static unsigned a_t5(TuiState *s, int k)
{
    (void)k;
    if (!s->nt5) return tui_status(s, 1, "no FP8-LM Table 5 rows (models/fp8lm_table5.csv) were loaded"), ACT_REDRAW;
    /* the setups are the distinct (model, tp, pp, dp, mbs, seq) of the rows, in file order */
    int starts[TUI_T5_MAX], nset = 0;
    for (int i = 0; i < s->nt5; i++) {
        const TuiT5Row *a = &s->t5[i], *b = nset ? &s->t5[starts[nset - 1]] : NULL;
        if (!b || strcmp(a->model, b->model) || a->tp != b->tp || a->pp != b->pp || a->dp != b->dp ||
            a->mbs != b->mbs || a->seq != b->seq)
            starts[nset++] = i;
    }
    int p = (s->t5_preset + 1) % nset;
    const TuiT5Row *row = &s->t5[starts[p]];
    const ModelSpec *m = catalog_model(s->cat, row->model);
    const GpuSpec *g = catalog_gpu(s->cat, "h100-sxm");
    if (!m || !g) return tui_status(s, 1, "Table 5 needs %s and h100-sxm in the catalog", row->model), ACT_REDRAW;
    s->t5_preset = p;
    table5_plan_input(&s->in, s->cat, m, NULL, g, row->tp, row->pp, row->dp, row->mbs, row->seq);
    s->nslots = 0;
    for (int i = starts[p]; i < s->nt5 && s->nslots < TUI_MAX_SLOTS; i++) {
        const TuiT5Row *r = &s->t5[i];
        if (p + 1 < nset && i >= starts[p + 1]) break;
        const Recipe *rc = catalog_recipe(s->cat, r->recipe);
        if (rc) s->slot[s->nslots++] = rc;
    }
    const Recipe *lean = catalog_recipe(s->cat, "fp8lm"); /* FP8-LM's 6 B/param accounting, for reference */
    if (lean && s->nslots < TUI_MAX_SLOTS) s->slot[s->nslots++] = lean;
    s->baseline = 0;
    s->field[SCR_COMPARE] = 0;
    s->in.recipe = s->slot[0];
    tui_status(s, 0, "FP8-LM Table 5 setup %d of %d: %s, TP%u PP%u DP%u, micro-batch %u (t: next)", p + 1, nset,
               row->model, row->tp, row->pp, row->dp, row->mbs);
    return ACT_REPLAN | ACT_REDRAW;
}

/* ---- Scaling ------------------------------------------------------------------------------------------------------ */

static unsigned a_step_sel(TuiState *s, int k)
{
    int d = k == '[' ? -1 : 1, n = s->ntrace;
    s->step_cur = ((s->step_cur + d) % n + n) % n;
    return ACT_REDRAW;
}
static unsigned a_step_add(TuiState *s, int k)
{
    (void)k;
    if (s->ntrace >= TUI_MAX_TRACE) return tui_status(s, 1, "at most %d steps", TUI_MAX_TRACE), ACT_REDRAW;
    int c = s->step_cur;
    memmove(&s->trace[c + 2], &s->trace[c + 1], sizeof *s->trace * (size_t)(s->ntrace - c - 1));
    s->trace[c + 1] = s->trace[c];
    s->ntrace++;
    s->step_cur = c + 1;
    s->scenario = SCN_CUSTOM;
    return ACT_RESIM | ACT_REDRAW;
}
static unsigned a_step_del(TuiState *s, int k)
{
    (void)k;
    if (s->ntrace <= 1) return tui_status(s, 1, "the last step stays"), ACT_REDRAW;
    int c = s->step_cur;
    memmove(&s->trace[c], &s->trace[c + 1], sizeof *s->trace * (size_t)(s->ntrace - c - 1));
    s->ntrace--;
    s->scenario = SCN_CUSTOM;
    return ACT_RESIM | ACT_REDRAW;
}

/* ---- prompt ------------------------------------------------------------------------------------------------------- */

static unsigned a_p_submit(TuiState *s, int k) { return (void)k, tui_prompt_submit(s); }
static unsigned a_p_cancel(TuiState *s, int k) { return (void)k, tui_prompt_cancel(s); }
static unsigned a_p_edit(TuiState *s, int k) { return tui_prompt_edit(s, k); }

/* ---- the table ------------------------------------------------------------------------------------------------------ */

/* One row per key binding, in footer order. Columns: keys, footer key (ASCII),
 * footer key (UTF-8), footer label, help keys, help text, where, action. */
// clang-format off
const TuiKey tui_keys[] = {
    {{KEY_F(1), '?'}, "F1", NULL, "Help", "F1 ?", "this help: every key of this screen and the walkthroughs", W_SCREENS, a_help},
    {{'\t'}, "Tab", NULL, "Screen", "Tab", "next screen (Shift-Tab: previous; 1-5: go to one)", W_SCREENS, a_next},
    {{KEY_BTAB}, NULL, NULL, NULL, "Shift-Tab", "previous screen", W_SCREENS, a_prev},
    {{'1', '2', '3', '4'}, NULL, NULL, NULL, "1 2 3 4 5", "Plan, Compare, Scales, Scaling, Formats", W_SCREENS, a_number},
    {{'5'}, NULL, NULL, NULL, NULL, NULL, W_SCREENS, a_number},
    /* screens with fields */
    {{KEY_UP, KEY_DOWN, 'k', 'j'}, "Up/Dn", "\xe2\x86\x91\xe2\x86\x93", "Field", "Up Down k j", "move between the fields", W_FORMS, a_move},
    {{KEY_HOME, KEY_END}, NULL, NULL, NULL, "Home End", "first / last field", W_FORMS, a_move},
    {{KEY_LEFT, KEY_RIGHT, '-', '+'}, "Lt/Rt", "\xe2\x86\x90\xe2\x86\x92", "Change", "Left Right - +", "change the field: next/previous choice, halve/double a number", W_FORMS, a_change},
    {{'='}, NULL, NULL, NULL, NULL, NULL, W_FORMS, a_change},
    {{'\n', '\r', KEY_ENTER}, "Enter", NULL, "Type", "Enter", "type a value for the field (a name for model/GPU/recipe)", W_FORMS, a_enter},
    /* Compare */
    {{KEY_LEFT, KEY_RIGHT}, "Lt/Rt", "\xe2\x86\x90\xe2\x86\x92", "Column", "Left Right", "select a recipe column", W_COMPARE, a_col},
    {{'+', '-', '='}, "+/-", NULL, "Recipe", "+ -", "change the selected column's recipe", W_COMPARE, a_col_recipe},
    {{'t'}, "t", NULL, "Table 5", "t", "next FP8-LM Table 5 setup, with the paper's figures", W_COMPARE, a_t5},
    {{'b'}, "b", NULL, "Baseline", "b", "deltas against the selected column", W_COMPARE, a_baseline},
    {{'a'}, "a", NULL, "Add", "a", "add a column after the selected one", W_COMPARE, a_col_add},
    {{'x', KEY_DC}, "x", NULL, "Remove", "x Delete", "remove the selected column", W_COMPARE, a_col_del},
    {{KEY_UP, KEY_DOWN, 'k', 'j'}, NULL, NULL, NULL, "Up Down k j", "scroll the rows", W_COMPARE, a_scroll},
    /* Scaling */
    {{'[', ']'}, "[ ]", NULL, "Step", "[ ]", "previous / next step of the trace", W_SCALING, a_step_sel},
    {{'a'}, NULL, NULL, NULL, "a", "insert a step after the selected one (same amax)", W_SCALING, a_step_add},
    {{'x', KEY_DC}, NULL, NULL, NULL, "x Delete", "delete the selected step", W_SCALING, a_step_del},
    /* every screen */
    {{'e'}, "e", NULL, "Export", "e", "export this screen as CSV (asks for a path; atomic write)", W_SCREENS, a_export},
    {{'/'}, "/", NULL, "Find", "/", "find a model, GPU or recipe by name (Compare: a recipe)", W_PLAN | W_COMPARE, a_find},
    {{KEY_NPAGE, KEY_PPAGE}, "PgDn", NULL, "More", "PgDn PgUp", "scroll the details below", W_PLAN | W_COMPARE, a_scroll},
    {{CTRL('l')}, NULL, NULL, NULL, "Ctrl-L", "redraw the whole screen", W_SCREENS | W_HELP | W_SMALL, a_redraw},
    {{'q', KEY_F(10)}, "q", NULL, "Quit", "q F10", "quit", W_SCREENS | W_SMALL, a_quit},
    /* the help overlay */
    {{KEY_UP, KEY_DOWN, 'k', 'j'}, "Up/Dn", "\xe2\x86\x91\xe2\x86\x93", "Scroll", "Up Down k j", "scroll the help", W_HELP, a_help_scroll},
    {{KEY_PPAGE, KEY_NPAGE}, NULL, NULL, NULL, "PgUp PgDn", "scroll by a page", W_HELP, a_help_scroll},
    {{'?', KEY_F(1), K_ESC, 'q'}, "Esc", NULL, "Close", "Esc q ?", "close the help", W_HELP, a_help_close},
    {{KEY_F(10)}, "F10", NULL, "Quit", "F10", "quit", W_HELP, a_quit},
    /* the prompt line */
    {{'\n', '\r', KEY_ENTER}, "Enter", NULL, "OK", "Enter", "apply what was typed", W_PROMPT, a_p_submit},
    {{K_ESC}, "Esc", NULL, "Cancel", "Esc", "close the prompt, change nothing", W_PROMPT, a_p_cancel},
    {{'\t'}, "Tab", NULL, "Next match", "Tab", "find: the next matching name", W_FIND, a_p_edit},
    {{KEY_BACKSPACE, K_DEL, CTRL('h')}, "BS", NULL, "Delete", "Backspace", "delete a character", W_PROMPT, a_p_edit},
    {{CTRL('u')}, "^U", NULL, "Clear", "Ctrl-U", "clear the line", W_PROMPT, a_p_edit},
};
// clang-format on
const int tui_nkeys = (int)(sizeof tui_keys / sizeof *tui_keys);

static int row_has_key(const TuiKey *k, int key)
{
    for (int i = 0; i < 4 && k->keys[i]; i++)
        if (k->keys[i] == key) return 1;
    return 0;
}

unsigned tui_key(TuiState *s, int key)
{
    unsigned ctx = tui_context(s);
    for (int i = 0; i < tui_nkeys; i++)
        if ((tui_keys[i].where & ctx) && row_has_key(&tui_keys[i], key)) return tui_keys[i].fn(s, key);
    if ((ctx & W_PROMPT) && key >= 32 && key < 127) return tui_prompt_edit(s, key);
    if (ctx == W_SMALL) return ACT_NONE;
    if (ctx == W_HELP) return a_help_close(s, key); /* any other key closes the help */
    if (key >= 32 && key < 127)
        tui_status(s, 1, "'%c' does nothing on the %s screen; press ? for the keys", key, tui_screen_name(s->screen));
    return ACT_REDRAW;
}

/* ---- footer and help ------------------------------------------------------------------------------------------------ */

/* display columns of UTF-8 text whose characters are all one column wide */
static int cols_of(const char *t)
{
    int n = 0;
    for (; *t; t++) n += ((unsigned char)*t & 0xC0) != 0x80;
    return n;
}

/* How readily a footer hint is dropped when the footer is too narrow: 0 never
 * (help, quit), 1 last (the keys that move and change), 2 first. */
static int drop_rank(TuiActionFn fn)
{
    if (fn == a_help || fn == a_quit) return 0;
    if (fn == a_next || fn == a_move || fn == a_change || fn == a_enter || fn == a_col || fn == a_col_recipe ||
        fn == a_export || fn == a_help_close || fn == a_p_submit || fn == a_p_cancel || fn == a_help_scroll)
        return 1;
    return 2;
}

int tui_footer(const TuiState *s, int width, TuiHint *out, int max)
{
    unsigned ctx = tui_context(s);
    TuiHint all[48];
    int rank[48], n = 0, total = 0;
    for (int i = 0; i < tui_nkeys && n < 48; i++) {
        const TuiKey *k = &tui_keys[i];
        if (!(k->where & ctx) || !k->foot) continue;
        all[n].key = s->unicode && k->foot_u ? k->foot_u : k->foot;
        all[n].label = k->label;
        rank[n] = drop_rank(k->fn);
        total += cols_of(all[n].key) + 1 + cols_of(all[n].label) + 1; /* "key label " */
        n++;
    }
    /* keep table order; while too wide, drop the last hint of the highest rank */
    while (total > width) {
        int victim = -1;
        for (int i = 0; i < n; i++)
            if (rank[i] > 0 && (victim < 0 || rank[i] >= rank[victim])) victim = i;
        if (victim < 0) break;
        total -= cols_of(all[victim].key) + 1 + cols_of(all[victim].label) + 1;
        memmove(&all[victim], &all[victim + 1], sizeof *all * (size_t)(n - victim - 1));
        memmove(&rank[victim], &rank[victim + 1], sizeof *rank * (size_t)(n - victim - 1));
        n--;
    }
    int used = n < max ? n : max;
    memcpy(out, all, sizeof *out * (size_t)used);
    return used;
}

static const char *const walkthroughs[] = {
    "Walkthroughs of the seed document (no flags needed):",
    "  Bytes per parameter (Table 1a): Plan screen, move to 'recipe' and press",
    "    Left/Right. With stack megatron-lm (FP32 main grads) 'B/param' reads bf16",
    "    16, megatron-bf16 18, fp8lm 6; the bar and the master/gradient/Adam terms",
    "    change by exactly those bytes. megatron-core keeps FP32 grads in BF16 (2",
    "    less, as its plan counts them); the recipe's figure shows beneath it.",
    "  Scale granularity (Table 1b): screen 3. At 4096x4096 the FP8 payload is",
    "    50.000 % of BF16; per-channel scales 16,384 B; 1x32 E8M0 scales",
    "    524,288 B = 3.125 % of the payload, saving 48.438 %.",
    "  The 640 spike: screen 4, scenario 'spike to 640'. The step after the spike",
    "    casts with scale 448/640 = 0.7: values up to ~0.00140 flush to zero and",
    "    up to ~0.00279 become the minimum subnormal. Try history 1/most_recent",
    "    (Megatron) against 1024/max (TE).",
    "  FP8-LM Table 5: screen 2, press t for each setup (GPT-7B, 13B, 175B on",
    "    H100). The 'published' rows are the paper's; TE FP8 needs more memory",
    "    than BF16 at 175B because of its cached FP8 weight copies.",
    "Numbers: GB = 1e9 B, per GPU (the most loaded pipeline stage); communication",
    "  = bytes each GPU sends per step. The CLI prints the same: fp8plan plan ...",
};

int tui_help_lines(const TuiState *s, char (*lines)[160], int max)
{
    int n = 0;
#define LINE(...) (n < max ? (void)snprintf(lines[n++], 160, __VA_ARGS__) : (void)0)
    LINE("fp8plan tui: what happens to memory, communication and step time when a");
    LINE("training run moves from BF16 to FP8. Change any input and watch.");
    LINE("%s", "");
    const unsigned groups[] = {W_SCREENS, 1u << s->screen, W_PROMPT | W_FIND, W_HELP};
    const char *const titles[] = {"Keys on every screen:", NULL,
                                  "While typing (after Enter, / or e):", "In this help:"};
    for (int g = 0; g < 4; g++) {
        if (g == 1)
            LINE("Keys on the %s screen:", tui_screen_name(s->screen));
        else
            LINE("%s", titles[g]);
        for (int i = 0; i < tui_nkeys; i++) {
            const TuiKey *k = &tui_keys[i];
            if (!k->help) continue;
            int global = (k->where & W_SCREENS) == W_SCREENS;
            if (g == 0 ? !global : g == 1 ? global || !(k->where & groups[1]) : !(k->where & groups[g])) continue;
            LINE("  %-14s %s", k->help_key, k->help);
        }
        LINE("%s", "");
    }
    for (size_t i = 0; i < sizeof walkthroughs / sizeof *walkthroughs; i++) LINE("%s", walkthroughs[i]);
#undef LINE
    return n;
}
