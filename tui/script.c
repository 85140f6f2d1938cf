/* tui/script.c — key scripts (see script.h). */
#include "tui/script.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/num.h"

static const struct {
    const char *name;
    int key;
} names[] = {
    {"up", KEY_UP},        {"down", KEY_DOWN}, {"left", KEY_LEFT},  {"right", KEY_RIGHT},
    {"home", KEY_HOME},    {"end", KEY_END},   {"pgup", KEY_PPAGE}, {"pgdn", KEY_NPAGE},
    {"enter", '\n'},       {"tab", '\t'},      {"s-tab", KEY_BTAB}, {"esc", 27},
    {"bs", KEY_BACKSPACE}, {"del", KEY_DC},    {"space", ' '},      {"lt", '<'},
};

int tui_script_next(const char **p, TuiScriptKey *out, Err *e)
{
    const char *s = *p;
    if (!*s) return 0;
    out->rows = out->cols = 0;
    if (*s != '<') {
        out->key = (unsigned char)*s;
        *p = s + 1;
        return 1;
    }
    const char *end = strchr(s, '>');
    if (!end || end - s > 40) return err_set(e, ST_USAGE, "--keys: '<' without a closing '>' near \"%.20s\"", s), -1;
    char tok[48];
    size_t n = (size_t)(end - s - 1);
    memcpy(tok, s + 1, n);
    tok[n] = '\0';
    *p = end + 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcasecmp(tok, names[i].name)) return out->key = names[i].key, 1;
    int f;
    if ((tok[0] == 'F' || tok[0] == 'f') && !num_parse_int_range(tok + 1, 1, 12, &f, NULL))
        return out->key = KEY_F(f), 1;
    if ((tok[0] == 'C' || tok[0] == 'c') && tok[1] == '-' && tok[2] && !tok[3] &&
        ((tok[2] >= 'a' && tok[2] <= 'z') || (tok[2] >= 'A' && tok[2] <= 'Z')))
        return out->key = tok[2] & 0x1f, 1;
    if (!strncasecmp(tok, "resize=", 7)) {
        uint64_t w, h;
        Err sub;
        if (num_parse_shape(tok + 7, &w, &h, &sub) || w > 1000 || h > 1000)
            return err_set(e, ST_USAGE, "--keys: <%s>: the size must be WxH, each 1..1000", tok), -1;
        out->key = KEY_RESIZE, out->cols = (int)w, out->rows = (int)h;
        return 1;
    }
    return err_set(e, ST_USAGE, "--keys: unknown key <%s> (see fp8plan tui --help)", tok), -1;
}

int tui_script_check(const char *script, Err *e)
{
    const char *p = script;
    TuiScriptKey k;
    int n = 0, r;
    while ((r = tui_script_next(&p, &k, e)) > 0) n++;
    return r < 0 ? -1 : n;
}
