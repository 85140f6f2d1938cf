/* tui/keys.h — the one key table: it dispatches keys to actions, and the same
 * rows draw the footer hints and the help screen (htop's pattern).
 *
 * A row lists its keys (curses codes), where it acts (a screen, the help
 * overlay, the prompt line, the too-small screen), the short footer form and
 * the help text. A key that does nothing on a screen has no row for it there,
 * so it is neither shown nor dispatched. Actions return TuiAct flags; the
 * caller recomputes (tui_recompute) and repaints. No terminal is needed:
 * tests call tui_key() with curses key codes. */
#ifndef FP8PLAN_TUI_KEYS_H
#define FP8PLAN_TUI_KEYS_H

#include "tui/state.h"

/* Contexts a row acts in (bits): one per screen, then the overlays. */
enum {
    W_PLAN = 1 << SCR_PLAN,
    W_COMPARE = 1 << SCR_COMPARE,
    W_SCALES = 1 << SCR_SCALES,
    W_SCALING = 1 << SCR_SCALING,
    W_FORMATS = 1 << SCR_FORMATS,
    W_FORMS = W_PLAN | W_SCALES | W_SCALING | W_FORMATS, /* screens with a field list */
    W_SCREENS = W_FORMS | W_COMPARE,
    W_HELP = 1 << 8,
    W_PROMPT = 1 << 9, /* any prompt line */
    W_FIND = 1 << 10,  /* the find prompt (with W_PROMPT) */
    W_SMALL = 1 << 11,
};

typedef unsigned (*TuiActionFn)(TuiState *s, int key);

typedef struct {
    int keys[4];          /* curses key codes; 0 ends the list */
    const char *foot;     /* footer key name, ASCII ("Up/Dn"); NULL: not in the footer */
    const char *foot_u;   /* footer key name under UTF-8 ("↑↓"); NULL: same as foot */
    const char *label;    /* footer label ("Move") */
    const char *help_key; /* key names in the help screen ("Up Down j k") */
    const char *help;     /* what it does, one line */
    unsigned where;
    TuiActionFn fn;
} TuiKey;

extern const TuiKey tui_keys[];
extern const int tui_nkeys;

/* The context bits of the state as it is now: W_SMALL, W_HELP, W_PROMPT (| W_FIND), or a screen's bit. */
unsigned tui_context(const TuiState *s);

/* Dispatch one key (a curses code: 'q', KEY_DOWN, KEY_F(1), '\t', KEY_BTAB, 12
 * for Ctrl-L, ...). Returns the TuiAct flags. Unknown keys set a hint in the
 * status line and return ACT_REDRAW. */
unsigned tui_key(TuiState *s, int key);

/* Footer: "key label" pairs of the rows acting in the current context, in
 * table order, that fit in `width` columns (the rest are dropped). Writes
 * up to max pairs and returns how many. */
typedef struct {
    const char *key, *label;
} TuiHint;
int tui_footer(const TuiState *s, int width, TuiHint *out, int max);

/* Help screen lines (plain text, one per row): the keys of every screen, the
 * keys of the current screen, then the walkthroughs. Returns the number of
 * lines written (at most max), each at most width-1 columns of ASCII. */
int tui_help_lines(const TuiState *s, char (*lines)[160], int max);

/* Screen names for the tabs ("Plan", "Compare", ...). */
const char *tui_screen_name(TuiScreen scr);

#endif
