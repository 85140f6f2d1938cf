/* tui/tui.h — the ncurses shell around the TUI state: the interactive loop on
 * a terminal, and a headless mode for tests (curses on /dev/null with an
 * explicit terminal type and size, keys from a script, the final screen
 * dumped to a file).
 *
 * The shell is the only part that owns the terminal. It restores it on every
 * way out: quit, an error, and SIGINT / SIGTERM / SIGHUP (the handlers only
 * set a flag; the loop leaves, calls endwin and reports the signal so the
 * caller can exit 128 + signal). */
#ifndef FP8PLAN_TUI_TUI_H
#define FP8PLAN_TUI_TUI_H

#include <stdio.h>

#include "tui/state.h"
#include "util/status.h"

typedef struct {
    int headless;     /* 1: no terminal; keys from `keys`, screen to `dump` */
    int rows, cols;   /* headless terminal size (default 24 x 80) */
    const char *keys; /* headless key script (tui/script.h) */
    const char *dump; /* headless: write the final screen here ("-": stdout); NULL: nowhere */
    const char *term; /* headless terminal type; NULL: $TERM, or "dumb" when unset */
    int no_color;     /* --no-color (NO_COLOR in the environment does the same) */
    int ascii;        /* --ascii: no Unicode glyphs even under a UTF-8 locale */
} TuiOptions;

/* Run until the user quits (or, headless, the script ends). *signo is set to
 * the signal that ended the session, else 0. ST_UNAVAILABLE when there is no
 * terminal (not a tty, unknown TERM); ST_USAGE for a bad key script; ST_IO
 * when the dump cannot be written. The terminal is restored before return. */
Status tui_run(TuiState *s, const TuiOptions *o, int *signo, Err *e);

/* A headless session driven key by key (what --headless and the benchmark
 * use): curses on /dev/null with o->term (else $TERM, else "dumb") at
 * o->rows x o->cols. tui_session_key dispatches one key exactly as the
 * interactive loop does (action, recompute, repaint, refresh) and returns 1
 * when the key quits; KEY_RESIZE resizes to rows x cols first. */
typedef struct TuiSession TuiSession;
TuiSession *tui_session_open(TuiState *s, const TuiOptions *o, Err *e);
int tui_session_key(TuiSession *u, int key, int rows, int cols);
void tui_session_dump(TuiSession *u, FILE *f);
void tui_session_close(TuiSession *u);

/* Write the current curses screen as text (one line per row, trailing blanks
 * removed) followed by an attribute map, with a header naming the size,
 * terminal type, colour and Unicode settings. */
void tui_dump_screen(FILE *f, const char *term, int color, int unicode);

#endif
