/* tui/shell.c — the curses shell: terminal set-up and restore, signals, the
 * key loop, the headless mode and screen dumps (see tui.h). */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <langinfo.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "tui/keys.h"
#include "tui/layout.h"
#include "tui/script.h"
#include "tui/tui.h"
#include "tui/view.h"
#include "util/fileio.h"

static volatile sig_atomic_t got_signal;
static int curses_active; /* endwin still owed */

static void on_signal(int sig) { got_signal = sig; }

/* Last resort: if anything exits while curses owns the terminal, give it back. */
static void restore_at_exit(void)
{
    if (curses_active) endwin(), curses_active = 0;
}

struct TuiSession {
    TuiState *s;
    TuiLayout l;
    TuiPaint p;
    SCREEN *scr;
    FILE *out, *in; /* headless: /dev/null */
    const char *term;
};
typedef struct TuiSession Ui;

static void relayout(Ui *u)
{
    tui_layout(LINES, COLS, &u->l);
    u->s->rows = LINES, u->s->cols = COLS, u->s->too_small = u->l.too_small;
}

static void paint(Ui *u, int clear_all)
{
    int first = tui_draw(u->s, &u->l, &u->p);
    if (!u->l.too_small) { /* the view clamped the scroll to its text: keep that */
        if (u->s->mode == MODE_HELP)
            u->s->help_scroll = first;
        else
            u->s->scroll[u->s->screen] = first;
    }
    if (clear_all) clearok(curscr, TRUE);
    refresh();
}

/* One key; returns 1 when the user quits. */
static int handle(Ui *u, int key)
{
    unsigned act;
    if (key == KEY_RESIZE) {
        relayout(u);
        act = ACT_REDRAW | ACT_CLEAR;
    } else {
        act = tui_key(u->s, key);
    }
    if (act & ACT_QUIT) return 1;
    tui_recompute(u->s, act);
    if (act) paint(u, (act & ACT_CLEAR) != 0);
    return 0;
}

static void setup(Ui *u, TuiState *s, const TuiOptions *o)
{
    cbreak(); /* not raw: Ctrl-C still raises SIGINT, which restores the terminal */
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    const char *nc = getenv("NO_COLOR");
    u->s = s;
    u->p.color = !o->no_color && has_colors() && !(nc && *nc);
    u->p.unicode = !o->ascii && !strcmp(nl_langinfo(CODESET), "UTF-8");
    s->unicode = u->p.unicode;
    paint_init(&u->p);
    relayout(u);
    tui_recompute(s, ACT_ALL);
}

void tui_dump_screen(FILE *f, const char *term, int color, int unicode)
{
    int rows = LINES, cols = COLS;
    fprintf(f, "# fp8plan tui screen %dx%d TERM=%s colour=%s unicode=%s\n", cols, rows, term, color ? "on" : "off",
            unicode ? "on" : "off");
    char *attr = malloc((size_t)cols + 1);
    if (!attr) return;
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            fprintf(f, "# attributes: . plain, R reverse, B bold, X bold+reverse, U underline, D dim, 1-9a-z colour "
                       "pair\n");
        for (int y = 0; y < rows; y++) {
            char line[8192];
            size_t used = 0, keep = 0;
            int akeep = 0;
            for (int x = 0; x < cols; x++) {
                cchar_t cc;
                wchar_t wch[CCHARW_MAX + 1] = {0};
                attr_t a = 0;
                short pair = 0;
                if (mvwin_wch(stdscr, y, x, &cc) == ERR || getcchar(&cc, wch, &a, &pair, NULL) == ERR) wch[0] = L'?';
                char mb[MB_LEN_MAX + 1];
                mbstate_t st;
                memset(&st, 0, sizeof st);
                size_t n = wch[0] ? wcrtomb(mb, wch[0], &st) : 0;
                if (n == (size_t)-1 || n == 0) mb[0] = '?', n = 1;
                if (wch[0] == L' ') mb[0] = ' ', n = 1;
                if (used + n < sizeof line) memcpy(line + used, mb, n), used += n;
                if (wch[0] != L' ') keep = used;
                char c = '.';
                if (pair > 0)
                    c = pair < 10 ? (char)('0' + pair) : (char)('a' + pair - 10);
                else if ((a & A_REVERSE) && (a & A_BOLD))
                    c = 'X';
                else if (a & A_REVERSE)
                    c = 'R';
                else if (a & A_BOLD)
                    c = 'B';
                else if (a & A_UNDERLINE)
                    c = 'U';
                else if (a & A_DIM)
                    c = 'D';
                attr[x] = c;
                if (c != '.') akeep = x + 1;
            }
            if (!pass)
                fprintf(f, "%.*s\n", (int)keep, line);
            else
                fprintf(f, "%.*s\n", akeep, attr);
        }
    }
    free(attr);
}

TuiSession *tui_session_open(TuiState *s, const TuiOptions *o, Err *e)
{
    Ui *u = calloc(1, sizeof *u);
    if (!u) return err_set(e, ST_NOMEM, "out of memory"), NULL;
    u->term = o->term && *o->term ? o->term : getenv("TERM");
    if (!u->term || !*u->term) u->term = "dumb";
    u->out = fopen("/dev/null", "w"), u->in = fopen("/dev/null", "r");
    u->scr = u->out && u->in ? newterm(u->term, u->out, u->in) : NULL;
    if (!u->scr) {
        err_set(e, ST_UNAVAILABLE, "cannot set up terminal type '%s' (is its terminfo entry installed?)", u->term);
        if (u->out) fclose(u->out);
        if (u->in) fclose(u->in);
        free(u);
        return NULL;
    }
    curses_active = 1;
    resizeterm(o->rows > 0 ? o->rows : 24, o->cols > 0 ? o->cols : 80);
    setup(u, s, o);
    paint(u, 0);
    return u;
}

int tui_session_key(TuiSession *u, int key, int rows, int cols)
{
    if (key == KEY_RESIZE) resizeterm(rows, cols);
    return handle(u, key);
}

void tui_session_dump(TuiSession *u, FILE *f) { tui_dump_screen(f, u->term, u->p.color, u->p.unicode); }

void tui_session_close(TuiSession *u)
{
    if (!u) return;
    endwin();
    curses_active = 0;
    delscreen(u->scr);
    fclose(u->out);
    fclose(u->in);
    free(u);
}

static Status run_headless(TuiState *s, const TuiOptions *o, Err *e)
{
    Ui *u = tui_session_open(s, o, e);
    if (!u) return e->st;
    Status st = ST_OK;
    const char *k = o->keys ? o->keys : "";
    TuiScriptKey key;
    int r;
    while ((r = tui_script_next(&k, &key, e)) > 0)
        if (tui_session_key(u, key.key, key.rows, key.cols)) break;
    if (r < 0) st = ST_USAGE;
    OutFile of;
    if (!st && o->dump && !(st = outfile_open(&of, o->dump, e))) {
        tui_session_dump(u, of.f);
        st = outfile_commit(&of, e);
    }
    tui_session_close(u);
    return st;
}

static Status run_terminal(TuiState *s, const TuiOptions *o, int *signo, Err *e)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return err_set(e, ST_UNAVAILABLE, "standard input and output must be a terminal (try --headless)");
    const char *term = getenv("TERM");
    struct sigaction sa, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read returns so the loop sees the flag */
    sigemptyset(&sa.sa_mask);
    got_signal = 0;
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);
    SCREEN *scr = term && *term ? newterm(NULL, stdout, stdin) : NULL;
    if (!scr) {
        for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
        return err_set(e, ST_UNAVAILABLE, "cannot use terminal type '%s' (set TERM, e.g. TERM=xterm-256color)",
                       term && *term ? term : "(unset)");
    }
    curses_active = 1;
    Ui u;
    setup(&u, s, o);
    timeout(250); /* wake up now and then to see a signal even if a read is restarted */
    paint(&u, 0);
    while (!got_signal) {
        int ch = getch();
        if (got_signal) break;
        if (ch == ERR) continue;
        if (handle(&u, ch)) break;
    }
    endwin();
    curses_active = 0;
    delscreen(scr);
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
    *signo = got_signal;
    return ST_OK;
}

Status tui_run(TuiState *s, const TuiOptions *o, int *signo, Err *e)
{
    static int registered;
    if (!registered) atexit(restore_at_exit), registered = 1;
    *signo = 0;
    if (o->keys && tui_script_check(o->keys, e) < 0) return ST_USAGE;
    return o->headless ? run_headless(s, o, e) : run_terminal(s, o, signo, e);
}
