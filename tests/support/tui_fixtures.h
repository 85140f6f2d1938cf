/* tests/support/tui_fixtures.h — the TUI tests' session: the seed's headline
 * on an 80x24 screen, driven by keys the way the shell drives it, without a
 * terminal. Linked into every test and fuzz binary with tests/support/. */
#ifndef FP8PLAN_TESTS_SUPPORT_TUI_FIXTURES_H
#define FP8PLAN_TESTS_SUPPORT_TUI_FIXTURES_H

#include "tui/state.h"

/* fx_headline(c, "megatron-bf16") (support/fixtures.h) as a TUI state of 24
 * rows x 80 columns, computed. The caller frees it with tui_state_free. */
TuiState *fx_tui_headline(const Catalog *c);

/* One key as the shell handles it: dispatch, then recompute what the action
 * says. Returns the action flags. */
unsigned fx_press(TuiState *s, int key);

/* Keys in tui/script.h's notation ("3+++", "<Down><Enter>100<Enter>"), each
 * pressed with fx_press; parsing stops at the first bad key name. */
void fx_press_str(TuiState *s, const char *keys);

#endif
