/* tests/support/tui_fixtures.c — TUI sessions for tests (see tui_fixtures.h). */
#include "tui_fixtures.h"

#include "fixtures.h"
#include "tui/keys.h"
#include "tui/script.h"

TuiState *fx_tui_headline(const Catalog *c)
{
    PlanInput in = fx_headline(c, "megatron-bf16");
    TuiState *s = tui_state_new(c, &in);
    if (!s) return NULL;
    s->rows = 24, s->cols = 80;
    tui_recompute(s, ACT_ALL);
    return s;
}

unsigned fx_press(TuiState *s, int key)
{
    unsigned act = tui_key(s, key);
    tui_recompute(s, act);
    return act;
}

void fx_press_str(TuiState *s, const char *keys)
{
    const char *p = keys;
    TuiScriptKey k;
    Err e;
    while (tui_script_next(&p, &k, &e) > 0) fx_press(s, k.key);
}
