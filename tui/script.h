/* tui/script.h — key scripts for the headless mode and the tests.
 *
 * Plain characters stand for themselves; names in angle brackets stand for
 * the keys a terminal would send:
 *   <Up> <Down> <Left> <Right> <Home> <End> <PgUp> <PgDn> <Enter> <Tab> <S-Tab>
 *   <Esc> <BS> <Del> <Space> <F1>..<F12> <C-a>..<C-z> (Ctrl + letter) <lt> ('<')
 *   <resize=WxH>  the terminal becomes W columns by H rows (KEY_RESIZE)
 * e.g. "2t<Down><Down>+<resize=60x15>q". Names are case-insensitive. */
#ifndef FP8PLAN_TUI_SCRIPT_H
#define FP8PLAN_TUI_SCRIPT_H

#include "util/status.h"

typedef struct {
    int key;        /* curses key code (KEY_RESIZE for <resize=...>) */
    int rows, cols; /* for KEY_RESIZE */
} TuiScriptKey;

/* Parse the next key at *p and advance it. Returns 1 with *out filled, 0 at
 * the end of the script, or -1 with e naming the bad token (ST_USAGE). */
int tui_script_next(const char **p, TuiScriptKey *out, Err *e);

/* Check a whole script; returns the number of keys, or -1 with e set. */
int tui_script_check(const char *script, Err *e);

#endif
