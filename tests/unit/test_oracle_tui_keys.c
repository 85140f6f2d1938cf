/* tests/unit/test_oracle_tui_keys.c — every key of the TUI's key table, pressed
 * once where it applies, with the effect a user expects written down here
 * (screen, field, value, mode, prompt, quit) — not read from the table.
 *
 * The table is only enumerated at the end: every (key, where) pair it binds
 * must have been pressed in a matching context, so a key added to the table
 * fails this test until its expected effect is written here too. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "support/fixtures.h"
#include "support/tui_fixtures.h"
#include "test.h"
#include "tui/fields.h"
#include "tui/keys.h"
#include "util/fileio.h"

enum { ESC = 27, CTRL_H = 8, CTRL_L = 12, CTRL_U = 21, DEL = 127, MAX_PRESSED = 512 };

static Catalog *cat;
static struct {
    unsigned ctx;
    int key;
} pressed[MAX_PRESSED];
static int npressed;

/* press a key as the shell does, remembering the context it was pressed in */
static unsigned press(TuiState *s, int key)
{
    if (npressed < MAX_PRESSED) pressed[npressed].ctx = tui_context(s), pressed[npressed++].key = key;
    return fx_press(s, key);
}

static TuiState *fresh(void)
{
    TuiState *s = fx_tui_headline(cat); /* gpt-175b, h100-sxm, megatron-bf16, TP 8 PP 4 DP 4, 80x24 */
    CHECK(s != NULL);
    if (s) CHECK(s->plan_ok && s->screen == SCR_PLAN && s->mode == MODE_NORMAL && s->in.tp == 8);
    return s;
}

static void test_screen_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    press(s, '\t');
    CHECK_EQ_INT(s->screen, SCR_COMPARE);
    press(s, KEY_BTAB);
    CHECK_EQ_INT(s->screen, SCR_PLAN);
    press(s, KEY_BTAB); /* wraps to the last screen */
    CHECK_EQ_INT(s->screen, SCR_FORMATS);
    const int digits[] = {'1', '2', '3', '4', '5'};
    for (int i = 0; i < 5; i++) {
        press(s, digits[i]);
        CHECK_EQ_INT(s->screen, i);
    }
    press(s, '1');
    CHECK(press(s, CTRL_L) & ACT_CLEAR);
    CHECK(press(s, 'q') & ACT_QUIT);
    CHECK(press(s, KEY_F(10)) & ACT_QUIT);
    tui_state_free(s);
}

static void test_help_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    press(s, KEY_F(1));
    CHECK_EQ_INT(s->mode, MODE_HELP);
    press(s, KEY_DOWN), press(s, 'j');
    CHECK_EQ_INT(s->help_scroll, 2);
    press(s, KEY_UP), press(s, 'k');
    CHECK_EQ_INT(s->help_scroll, 0);
    press(s, KEY_NPAGE);
    CHECK_EQ_INT(s->help_scroll, 10);
    press(s, KEY_PPAGE);
    CHECK_EQ_INT(s->help_scroll, 0);
    CHECK(press(s, CTRL_L) & ACT_CLEAR);
    CHECK_EQ_INT(s->mode, MODE_HELP);
    /* any other key closes the help too (and does nothing else) */
    press(s, 'z');
    CHECK(s->mode == MODE_NORMAL && s->screen == SCR_PLAN);
    /* every close key closes the help without quitting */
    const int closers[] = {'?', KEY_F(1), ESC, 'q'};
    for (int i = 0; i < 4; i++) {
        press(s, i % 2 ? '?' : KEY_F(1)); /* open with both keys */
        CHECK_EQ_INT(s->mode, MODE_HELP);
        CHECK(!(press(s, closers[i]) & ACT_QUIT));
        CHECKF(s->mode == MODE_NORMAL, "key %d left the help open", closers[i]);
    }
    /* F10 quits from the help */
    press(s, '?');
    CHECK(press(s, KEY_F(10)) & ACT_QUIT);
    tui_state_free(s);
}

static void test_too_small_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    s->too_small = 1;
    CHECK(press(s, CTRL_L) & ACT_CLEAR);
    press(s, '\t'); /* only quit and redraw act */
    CHECK_EQ_INT(s->screen, SCR_PLAN);
    CHECK(press(s, 'q') & ACT_QUIT);
    CHECK(press(s, KEY_F(10)) & ACT_QUIT);
    tui_state_free(s);
}

static void test_field_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    press(s, KEY_DOWN), press(s, 'j');
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_RECIPE);
    press(s, KEY_UP), press(s, 'k');
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_MODEL);
    press(s, KEY_END);
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_COUNT - 1);
    press(s, KEY_HOME);
    CHECK_EQ_INT(s->field[SCR_PLAN], PF_MODEL);
    s->field[SCR_PLAN] = PF_TP; /* TP 8: Right and + double it, Left and - halve it */
    press(s, KEY_RIGHT);
    CHECK_EQ_INT(s->in.tp, 16);
    press(s, KEY_LEFT);
    CHECK_EQ_INT(s->in.tp, 8);
    press(s, '+');
    CHECK_EQ_INT(s->in.tp, 16);
    press(s, '-');
    CHECK_EQ_INT(s->in.tp, 8);
    press(s, '=');
    CHECK_EQ_INT(s->in.tp, 16);
    CHECK(s->plan_ok && s->plan.world == 16 * 4 * 4); /* replanned */
    /* Enter types a number: 4, Enter */
    press(s, '\n');
    CHECK(s->mode == MODE_PROMPT && s->prompt.kind == PROMPT_NUMBER);
    press(s, '4'), press(s, '\r');
    CHECK(s->mode == MODE_NORMAL && s->in.tp == 4);
    press(s, KEY_ENTER);
    press(s, '2'), press(s, KEY_ENTER);
    CHECK(s->mode == MODE_NORMAL && s->in.tp == 2);
    press(s, '\r');
    press(s, '1'), press(s, '\n');
    CHECK(s->mode == MODE_NORMAL && s->in.tp == 1);
    /* the prompt's editing keys: each deletion key removes one character, Ctrl-U the line,
     * Esc leaves everything as it was */
    press(s, '\n');
    press(s, '1'), press(s, '2'), press(s, '3'), press(s, '4');
    press(s, KEY_BACKSPACE);
    CHECK_STR(s->prompt.text, "123");
    press(s, DEL);
    CHECK_STR(s->prompt.text, "12");
    press(s, CTRL_H);
    CHECK_STR(s->prompt.text, "1");
    press(s, CTRL_U);
    CHECK_STR(s->prompt.text, "");
    press(s, '8'), press(s, ESC);
    CHECK(s->mode == MODE_NORMAL && s->in.tp == 1);
    CHECK_CONTAINS(s->status, "cancelled");
    /* Enter on the model field finds by name; Tab moves to the next match */
    s->field[SCR_PLAN] = PF_MODEL;
    press(s, '\n');
    CHECK(s->mode == MODE_PROMPT && s->prompt.kind == PROMPT_FIND);
    press(s, 'g'), press(s, 'p'), press(s, 't'), press(s, '-');
    CHECK_EQ_INT(s->prompt.match, 0);
    press(s, '\t');
    CHECK_EQ_INT(s->prompt.match, 1);
    press(s, ESC);
    CHECK_STR(s->in.model->name, "gpt-175b");
    /* / finds any name; the chosen model replaces the current one */
    press(s, '/');
    CHECK(s->mode == MODE_PROMPT && s->prompt.kind == PROMPT_FIND && s->prompt.field == FIND_NONE);
    const char *want = "gpt-13b";
    for (const char *c = want; *c; c++) press(s, *c);
    press(s, '\n');
    CHECK_STR(s->in.model->name, "gpt-13b");
    /* e opens the export prompt with a default path */
    press(s, 'e');
    CHECK(s->mode == MODE_PROMPT && s->prompt.kind == PROMPT_EXPORT && s->prompt.text[0]);
    press(s, ESC);
    /* PgDn / PgUp scroll the details */
    press(s, KEY_NPAGE);
    CHECK(s->scroll[SCR_PLAN] > 0);
    press(s, KEY_PPAGE);
    CHECK_EQ_INT(s->scroll[SCR_PLAN], 0);
    tui_state_free(s);
}

static void test_compare_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    char *text = NULL;
    size_t len;
    Err e;
    CHECKF(file_read_all("models/fp8lm_table5.csv", &text, &len, &e) == ST_OK, "%s", e.msg);
    CHECK(text && tui_state_load_t5(s, text, len, "fp8lm_table5.csv", &e) == ST_OK);
    free(text);
    press(s, '2');
    CHECK(s->nslots == 3 && !strcmp(s->slot[0]->name, "megatron-bf16") && !strcmp(s->slot[1]->name, "te-fp8"));
    press(s, KEY_RIGHT);
    CHECK_EQ_INT(s->field[SCR_COMPARE], 1);
    press(s, KEY_LEFT);
    CHECK_EQ_INT(s->field[SCR_COMPARE], 0);
    /* + and = move the column to the next recipe in the catalog (megatron-bf16 -> te-fp8), - back */
    press(s, '+');
    CHECK_STR(s->slot[0]->name, "te-fp8");
    press(s, '-');
    CHECK_STR(s->slot[0]->name, "megatron-bf16");
    press(s, '=');
    CHECK_STR(s->slot[0]->name, "te-fp8");
    press(s, '-');
    press(s, KEY_RIGHT), press(s, 'b');
    CHECK_EQ_INT(s->baseline, 1);
    press(s, 'a');
    CHECK_EQ_INT(s->nslots, 4);
    CHECK_EQ_INT(s->field[SCR_COMPARE], 2); /* the new column, after the selected one */
    press(s, 'x');
    CHECK_EQ_INT(s->nslots, 3);
    press(s, KEY_DC);
    CHECK_EQ_INT(s->nslots, 2);
    press(s, KEY_DOWN), press(s, 'j');
    CHECK_EQ_INT(s->scroll[SCR_COMPARE], 2);
    press(s, KEY_UP), press(s, 'k');
    CHECK_EQ_INT(s->scroll[SCR_COMPARE], 0);
    press(s, KEY_NPAGE);
    CHECK(s->scroll[SCR_COMPARE] > 1);
    press(s, KEY_PPAGE);
    CHECK_EQ_INT(s->scroll[SCR_COMPARE], 0);
    /* / on Compare finds a recipe for the selected column */
    press(s, '/');
    CHECK(s->mode == MODE_PROMPT && s->prompt.field == FIND_RECIPE);
    press(s, ESC);
    /* t: the first FP8-LM Table 5 setup, GPT-7B on TP1 PP1 DP32 */
    press(s, 't');
    CHECK_EQ_INT(s->t5_preset, 0);
    CHECK_STR(s->in.model->name, "gpt-7b");
    CHECK(s->in.tp == 1 && s->in.dp == 32);
    tui_state_free(s);
}

static void test_scaling_keys(void)
{
    TuiState *s = fresh();
    if (!s) return;
    press(s, '4');
    int n = s->ntrace, at = s->step_cur;
    CHECK(n > 2);
    press(s, ']');
    CHECK_EQ_INT(s->step_cur, (at + 1) % n);
    press(s, '[');
    CHECK_EQ_INT(s->step_cur, at);
    press(s, 'a');
    CHECK_EQ_INT(s->ntrace, n + 1);
    CHECK_EQ_INT(s->scenario, SCN_CUSTOM);
    CHECK(s->trace[s->step_cur] == s->trace[s->step_cur - 1]); /* the same amax, after the selected step */
    press(s, 'x');
    CHECK_EQ_INT(s->ntrace, n);
    press(s, KEY_DC);
    CHECK_EQ_INT(s->ntrace, n - 1);
    tui_state_free(s);
}

/* every key the table binds was pressed above where its row applies */
static void test_every_table_key_pressed(void)
{
    CHECK(tui_nkeys > 20);
    for (int i = 0; i < tui_nkeys; i++)
        for (int j = 0; j < 4 && tui_keys[i].keys[j]; j++) {
            int key = tui_keys[i].keys[j], hit = 0;
            for (int p = 0; p < npressed && !hit; p++)
                hit = pressed[p].key == key && (pressed[p].ctx & tui_keys[i].where);
            CHECKF(hit, "key %d of table row %d (%s) was never pressed where it applies", key, i,
                   tui_keys[i].help ? tui_keys[i].help : "no help text");
        }
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_screen_keys);
    RUN(test_help_keys);
    RUN(test_too_small_keys);
    RUN(test_field_keys);
    RUN(test_compare_keys);
    RUN(test_scaling_keys);
    RUN(test_every_table_key_pressed);
    free(cat);
    return test_summary();
}
