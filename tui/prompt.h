/* tui/prompt.h — the one-line prompt under the body: typing a number into a
 * field (Enter), finding a model, GPU or recipe by name (/), and choosing the
 * export path (e). The prompt edits s->prompt; submitting applies it. */
#ifndef FP8PLAN_TUI_PROMPT_H
#define FP8PLAN_TUI_PROMPT_H

#include <stddef.h>

#include "tui/fields.h"
#include "tui/state.h"

/* Open a prompt. For PROMPT_NUMBER `arg` is the field index; for PROMPT_FIND
 * it is the TuiFind kind to search (FIND_NONE: models, GPUs and recipes);
 * PROMPT_EXPORT ignores it. `initial` prefills the text (may be NULL). */
unsigned tui_prompt_open(TuiState *s, PromptKind kind, int arg, const char *initial);

/* Editing: a printable character is appended; Backspace deletes one; Ctrl-U
 * clears; Tab picks the next match (find). */
unsigned tui_prompt_edit(TuiState *s, int key);
/* Enter: apply. A bad number keeps the prompt open with the error in the status line. */
unsigned tui_prompt_submit(TuiState *s);
/* Esc: close without applying. */
unsigned tui_prompt_cancel(TuiState *s);

/* Case-insensitive substring search over the catalog's names. */
typedef struct {
    TuiFind kind;
    int index;
} TuiMatch;
enum { TUI_MAX_MATCHES = 3 * 256 };
int tui_find(const TuiState *s, const char *text, TuiFind only, TuiMatch *out, int max);
const char *tui_match_name(const TuiState *s, TuiMatch m);
const char *tui_find_kind_name(TuiFind k);

/* What the prompt line shows: a label ("TP = ", "find: ", "export CSV to: ")
 * and, for find, a preview of the selected match ("model gpt-175b (1 of 3, Tab: next)"). */
void tui_prompt_describe(const TuiState *s, char *label, size_t label_n, char *preview, size_t preview_n);

#endif
