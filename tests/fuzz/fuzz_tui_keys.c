/* tests/fuzz/fuzz_tui_keys.c — arbitrary key sequences into the TUI state (no
 * terminal): each byte picks a key of the key table or a character to type.
 * Nothing may crash, and the state must stay consistent: indices in range, the
 * plan shown is the planner's plan for the inputs shown (or its refusal).
 * Runs from the repository root (make fuzz), where models/ is. Exports ('e')
 * are left out so the fuzzer never writes files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/fixtures.h"
#include "tui/fields.h"
#include "tui/keys.h"
#include "tui/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Catalog *cat;
static int pool[128], npool;

static void init(void)
{
    cat = fx_catalog();
    for (int i = 0; i < tui_nkeys; i++)
        for (int k = 0; k < 4 && tui_keys[i].keys[k]; k++)
            if (tui_keys[i].keys[k] != 'e' && npool < 100) pool[npool++] = tui_keys[i].keys[k];
    const char text[] = "0123456789.-/xinfa";
    for (size_t i = 0; i < sizeof text - 1; i++) pool[npool++] = text[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cat) init();
    PlanInput in = fx_headline(cat, "megatron-bf16");
    TuiState *s = tui_state_new(cat, &in);
    if (!s) return 0;
    tui_recompute(s, ACT_ALL);
    static Plan p;
    for (size_t i = 0; i < size; i++) {
        s->too_small = data[i] == 0xFF;
        tui_recompute(s, tui_key(s, pool[data[i] % npool]));
        s->too_small = 0;
        const TuiField *f;
        int nf = tui_fields(s->screen, &f);
        if ((unsigned)s->screen >= SCR_COUNT_ || (nf && (s->field[s->screen] < 0 || s->field[s->screen] >= nf)))
            __builtin_trap();
        if (s->nslots < 1 || s->nslots > TUI_MAX_SLOTS || s->baseline >= s->nslots || s->step_cur >= s->ntrace)
            __builtin_trap();
        int built = plan_build(&s->in, &p, NULL) == ST_OK;
        if (built != s->plan_ok || (built && p.total_bytes != s->plan.total_bytes)) __builtin_trap();
    }
    tui_state_free(s);
    return 0;
}
