/* tui/prompt.c — the prompt line: numbers, find, export path (see prompt.h). */
#include "tui/prompt.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tui/export.h"
#include "tui/keys.h"

unsigned tui_prompt_open(TuiState *s, PromptKind kind, int arg, const char *initial)
{
    s->mode = MODE_PROMPT;
    s->prompt.kind = kind;
    s->prompt.field = arg;
    s->prompt.match = 0;
    snprintf(s->prompt.text, sizeof s->prompt.text, "%s", initial ? initial : "");
    s->status[0] = '\0';
    return ACT_REDRAW;
}

unsigned tui_prompt_cancel(TuiState *s)
{
    s->mode = MODE_NORMAL;
    tui_status(s, 0, "cancelled");
    return ACT_REDRAW;
}

unsigned tui_prompt_edit(TuiState *s, int key)
{
    char *t = s->prompt.text;
    size_t n = strlen(t);
    if (key == '\t') {
        s->prompt.match++;
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (n) t[n - 1] = '\0';
        s->prompt.match = 0;
    } else if (key == 21) { /* Ctrl-U */
        t[0] = '\0';
        s->prompt.match = 0;
    } else if (key >= 32 && key < 127 && n + 1 < sizeof s->prompt.text) {
        t[n] = (char)key;
        t[n + 1] = '\0';
        s->prompt.match = 0;
    }
    s->status[0] = '\0';
    return ACT_REDRAW;
}

/* ---- find ---------------------------------------------------------------------------------------------------- */

const char *tui_find_kind_name(TuiFind k)
{
    return k == FIND_MODEL ? "model" : k == FIND_GPU ? "GPU" : k == FIND_RECIPE ? "recipe" : "name";
}

const char *tui_match_name(const TuiState *s, TuiMatch m)
{
    switch (m.kind) {
    case FIND_MODEL: return s->cat->models[m.index].name;
    case FIND_GPU: return s->cat->gpus[m.index].name;
    case FIND_RECIPE: return s->cat->recipes[m.index].name;
    default: return "";
    }
}

int tui_find(const TuiState *s, const char *text, TuiFind only, TuiMatch *out, int max)
{
    int n = 0;
    const int counts[] = {0, s->cat->nmodels, s->cat->ngpus, s->cat->nrecipes};
    for (int k = FIND_MODEL; k <= FIND_RECIPE; k++) {
        if (only != FIND_NONE && only != (TuiFind)k) continue;
        for (int i = 0; i < counts[k] && n < max; i++) {
            TuiMatch m = {(TuiFind)k, i};
            if (strcasestr(tui_match_name(s, m), text)) out[n++] = m;
        }
    }
    return n;
}

static int selected_match(const TuiState *s, TuiMatch *m, int *count)
{
    TuiMatch all[TUI_MAX_MATCHES];
    int n = tui_find(s, s->prompt.text, (TuiFind)s->prompt.field, all, TUI_MAX_MATCHES);
    *count = n;
    if (!n) return 0;
    *m = all[s->prompt.match % n];
    return 1;
}

/* ---- submit ---------------------------------------------------------------------------------------------------- */

static unsigned submit_find(TuiState *s)
{
    TuiMatch m;
    int n;
    if (!selected_match(s, &m, &n)) {
        tui_status(s, 1, "no %s matches '%s'", tui_find_kind_name((TuiFind)s->prompt.field), s->prompt.text);
        return ACT_REDRAW;
    }
    s->mode = MODE_NORMAL;
    unsigned act;
    if (s->screen == SCR_COMPARE) { /* the selected column takes the recipe */
        int c = s->field[SCR_COMPARE];
        s->slot[c] = &s->cat->recipes[m.index];
        s->t5_preset = -1;
        act = ACT_REPLAN | ACT_REDRAW;
    } else if (m.kind == FIND_MODEL) {
        act = tui_set_model(s, &s->cat->models[m.index]);
        s->field[SCR_PLAN] = PF_MODEL;
    } else if (m.kind == FIND_GPU) {
        act = tui_set_gpu(s, &s->cat->gpus[m.index]);
        s->field[SCR_PLAN] = PF_GPU;
    } else {
        act = tui_set_recipe(s, &s->cat->recipes[m.index]);
        s->field[SCR_PLAN] = PF_RECIPE;
    }
    tui_status(s, 0, "%s %s", tui_find_kind_name(m.kind), tui_match_name(s, m));
    return act;
}

static unsigned submit_number(TuiState *s)
{
    const TuiField *f;
    int n = tui_fields(s->screen, &f), i = s->prompt.field;
    if (i < 0 || i >= n || !f[i].set) return s->mode = MODE_NORMAL, ACT_REDRAW;
    Err e;
    err_clear(&e);
    unsigned act = f[i].set(s, s->prompt.text, &e);
    if (e.st) { /* keep the prompt open so the value can be fixed */
        tui_status(s, 1, "%s", e.msg);
        return ACT_REDRAW;
    }
    s->mode = MODE_NORMAL;
    return act | ACT_REDRAW;
}

static unsigned submit_export(TuiState *s)
{
    if (!s->prompt.text[0] || !strcmp(s->prompt.text, "-"))
        return tui_status(s, 1, "type a file name for the CSV"), ACT_REDRAW;
    Err e;
    int rows = 0;
    s->mode = MODE_NORMAL;
    if (tui_export(s, s->prompt.text, &rows, &e)) {
        tui_status(s, 1, "export failed: %s", e.msg);
    } else {
        snprintf(s->last_export, sizeof s->last_export, "%s", s->prompt.text);
        tui_status(s, 0, "wrote %d row%s of CSV to %s", rows, rows == 1 ? "" : "s", s->prompt.text);
    }
    return ACT_REDRAW;
}

unsigned tui_prompt_submit(TuiState *s)
{
    switch (s->prompt.kind) {
    case PROMPT_FIND: return submit_find(s);
    case PROMPT_NUMBER: return submit_number(s);
    default: return submit_export(s);
    }
}

void tui_prompt_describe(const TuiState *s, char *label, size_t ln, char *preview, size_t pn)
{
    preview[0] = '\0';
    switch (s->prompt.kind) {
    case PROMPT_NUMBER: {
        const TuiField *f;
        int n = tui_fields(s->screen, &f), i = s->prompt.field;
        char cur[64] = "";
        if (i >= 0 && i < n) f[i].text(s, cur, sizeof cur);
        snprintf(label, ln, "%s (now %s) = ", i >= 0 && i < n ? f[i].label : "?", cur);
        break;
    }
    case PROMPT_FIND: {
        snprintf(label, ln, "find %s: ", tui_find_kind_name((TuiFind)s->prompt.field));
        TuiMatch m;
        int n;
        if (selected_match(s, &m, &n))
            snprintf(preview, pn, "-> %s %s (%d of %d, Tab: next)", tui_find_kind_name(m.kind), tui_match_name(s, m),
                     s->prompt.match % n + 1, n);
        else
            snprintf(preview, pn, "(no match)");
        break;
    }
    default: snprintf(label, ln, "export CSV to: "); break;
    }
}
