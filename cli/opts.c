/* cli/opts.c — the one option parser: a table of rows (cli/opts.h) to getopt_long's array, each value
 * read and range-checked by its row's kind, and the --help lines written from the same rows. */
#include "cli/opts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/num.h"

enum { MAX_ROWS = 192 }; /* flags of one command, blocks flattened */

typedef struct {
    CliOpt row[MAX_ROWS]; /* a use resolved: the shared row with the command's range, help, offset */
    size_t off[MAX_ROWS]; /* the offset the row's block adds */
    int n;
    const char *bad; /* a use of a name its table lacks, or the row past MAX_ROWS: the table is wrong */
} Flat;

static void flatten(const CliOpt *opts, size_t off, Flat *f);

/* An OPT_USE row: the shared row of its name, narrowed and described by the command. */
static void use(const CliOpt *u, size_t off, Flat *f)
{
    Flat shared = {.n = 0};
    flatten(u->block, 0, &shared);
    if (f->n == MAX_ROWS) f->bad = u->name;
    for (int i = 0; i < shared.n && f->n < MAX_ROWS; i++) {
        CliOpt r = shared.row[i];
        if (!r.name || strcmp(r.name, u->name)) continue;
        if (u->hi > 0) r.lo = u->lo, r.hi = u->hi;
        if (u->help) r.help = u->help;
        if (u->arg) r.arg = u->arg;
        r.need = u->need, r.hide = u->hide; /* which commands take it: the using table's say */
        f->row[f->n] = r;
        f->off[f->n++] = off + u->off + shared.off[i];
        return;
    }
    f->bad = u->name;
}

static void flatten(const CliOpt *opts, size_t off, Flat *f)
{
    for (const CliOpt *o = opts; o->kind != OPT_END; o++) {
        if (o->kind == OPT_BLOCK) {
            flatten(o->block, off + o->off, f);
        } else if (o->kind == OPT_USE) {
            use(o, off, f);
        } else if (o->kind != OPT_TEXT && f->n == MAX_ROWS) {
            f->bad = o->name;
        } else if (o->kind != OPT_TEXT) {
            f->row[f->n] = *o;
            f->off[f->n++] = off;
        }
    }
}

const CliOpt *cli_opts_find(const CliOpt *opts, const char *name, size_t *off)
{
    for (const CliOpt *o = opts; o->kind != OPT_END; o++) {
        const CliOpt *r = NULL;
        size_t sub = 0;
        if (o->kind == OPT_BLOCK || o->kind == OPT_USE) {
            if (o->kind == OPT_USE && strcmp(o->name, name)) continue;
            r = cli_opts_find(o->block, name, &sub);
            sub += o->off;
        } else if (o->kind != OPT_TEXT && o->name && !strcmp(o->name, name)) {
            r = o;
        }
        if (!r) continue;
        if (off) *off = sub;
        return r;
    }
    return NULL;
}

int cli_opt_range(const CliParse *p, const CliOpt *o, const char *arg, double v, double lo, double hi, int whole)
{
    if (whole) {
        if (v < lo) return cli_usage(p->cmd, "--%s: '%s' must be at least %.0f", o->name, arg, lo);
        return cli_usage(p->cmd, "--%s: '%s' is too large (at most %.0f)", o->name, arg, hi);
    }
    return cli_usage(p->cmd, "--%s: '%s' must be in [%g, %g]", o->name, arg, lo, hi);
}

/* A whole number into the row's uint32_t or uint64_t. */
static int read_whole(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    uint64_t v;
    Status st = o->kind == OPT_COUNT ? num_parse_count(arg, &v, &e) : num_parse_u64(arg, &v, &e);
    if (st) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    int wide = o->kind != OPT_U32;
    double hi = o->hi > 0 ? o->hi : wide ? (double)UINT64_MAX : (double)UINT32_MAX;
    if ((double)v < o->lo || ((!wide || o->hi > 0) && (double)v > hi)) /* a 64-bit one unbounded: any */
        return cli_opt_range(p, o, arg, (double)v, o->lo, hi, 1);
    if (wide)
        *(uint64_t *)t = v;
    else
        *(uint32_t *)t = (uint32_t)v;
    return 0;
}

static int read_real(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    Err e;
    double v;
    if (num_parse_double(arg, NUM_FINITE_ONLY, &v, &e)) return cli_usage(p->cmd, "--%s: %s", o->name, e.msg);
    if (v < o->lo || v > o->hi) return cli_opt_range(p, o, arg, v, o->lo, o->hi, 0);
    if (o->kind == OPT_F32)
        *(float *)t = (float)v;
    else
        *(double *)t = v;
    return 0;
}

static int read_choice(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    int n = 0;
    for (; o->words[n]; n++)
        if (!strcmp(arg, o->words[n])) return *(int *)t = n, 0;
    char known[256] = "";
    for (int i = 0; i < n; i++) /* "a, b or c" */
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                 i == 0       ? ""
                 : i == n - 1 ? " or "
                              : ", ",
                 o->words[i]);
    return cli_usage(p->cmd, "--%s: '%s' is not %s", o->name, arg, known);
}

int cli_opts_read(const CliParse *p, const CliOpt *o, const char *arg, void *t)
{
    switch (o->kind) {
    case OPT_FLAG: *(int *)t = o->set; return 0;
    case OPT_STR: *(const char **)t = arg; return 0;
    case OPT_U32:
    case OPT_U64:
    case OPT_COUNT: return read_whole(p, o, arg, t);
    case OPT_F64:
    case OPT_F32: return read_real(p, o, arg, t);
    case OPT_CHOICE: return read_choice(p, o, arg, t);
    case OPT_FN: return o->fn(p, o, arg, t);
    default: return cli_bad_option(p->cmd);
    }
}

static int takes_arg(const CliOpt *o) { return o->kind == OPT_FN ? o->has_arg : o->kind != OPT_FLAG; }

/* getopt_long's array and short string for the flattened rows: a long flag returns 256 + its index. */
static void build(const Flat *f, struct option *lo, char *shorts)
{
    int s = 0;
    shorts[s++] = 'h';
    for (int i = 0; i < f->n; i++) {
        const CliOpt *o = &f->row[i];
        lo[i] = (struct option){o->name, takes_arg(o) ? required_argument : no_argument, NULL, 256 + i};
        if (o->short_name) {
            shorts[s++] = o->short_name;
            if (takes_arg(o)) shorts[s++] = ':';
        }
    }
    lo[f->n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[f->n + 1] = (struct option){NULL, 0, NULL, 0};
    shorts[s] = '\0';
}

static int row_of(const Flat *f, int c)
{
    if (c >= 256 && c < 256 + f->n) return c - 256;
    for (int i = 0; c > 0 && c < 256 && i < f->n; i++)
        if (f->row[i].short_name == c) return i;
    return -1;
}

static void print_help(const CliParse *p)
{
    char buf[16384];
    cli_help(p->help_tail ? cli_opts_usage(p, p->help, p->help_tail, buf, sizeof buf) : p->help);
}

int cli_opts_parse(const CliParse *p, int argc, char **argv, void *base)
{
    Flat f = {.n = 0};
    flatten(p->opts, 0, &f);
    if (f.bad) { /* a defect of the command's table, not of the command line */
        Err e;
        err_set(&e, ST_SOFTWARE, "option table: --%s is not in its shared table, or past %d rows", f.bad, MAX_ROWS);
        return cli_fail(p->cmd, &e);
    }
    struct option lo[MAX_ROWS + 2];
    char shorts[2 * MAX_ROWS + 2];
    build(&f, lo, shorts);
    cli_getopt_reset(argc, argv);
    int c;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == 'h') return print_help(p), -1;
        int i = row_of(&f, c);
        if (i < 0) return cli_bad_option(p->cmd);
        const CliOpt *o = &f.row[i];
        if (o->need && !(p->mask & o->need)) return cli_usage(p->cmd, "--%s does not apply here", o->name);
        char *at = (char *)base + f.off[i];
        int rc = cli_opts_read(p, o, optarg, at + o->off);
        if (rc) return rc;
        if (o->mark) *(int *)(at + o->mark - 1) = 1;
        if (o->given && p->given_off) *(unsigned *)((char *)base + p->given_off - 1) |= o->given;
    }
    return p->operands ? 0 : cli_no_operands(p->cmd, argc, argv);
}

/* One row's help: "  --name ARG" padded to the help column (or a line of its own when longer). */
static size_t help_row(const CliParse *p, const CliOpt *o, char *buf, size_t cap)
{
    if (o->kind == OPT_TEXT) return (size_t)snprintf(buf, cap, "%s\n", o->help);
    char head[96];
    int n = snprintf(head, sizeof head, "  %s%s%s%s", o->short_name ? "-" : "--",
                     o->short_name ? (char[2]){o->short_name, 0} : o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    int col = p->help_col > 0 ? p->help_col : 23;
    if (n >= col) return (size_t)snprintf(buf, cap, "%s %s\n", head, o->help);
    return (size_t)snprintf(buf, cap, "%-*s%s\n", col, head, o->help);
}

static size_t help_rows(const CliParse *p, const CliOpt *opts, char *buf, size_t cap, size_t n)
{
    for (const CliOpt *o = opts; o->kind != OPT_END && n + 1 < cap; o++) {
        if ((o->need && !(p->mask & o->need)) || (p->mask & o->hide)) continue;
        if (o->kind == OPT_BLOCK) {
            n = help_rows(p, o->block, buf, cap, n);
        } else if (o->kind == OPT_USE) {
            Flat f = {.n = 0};
            use(o, 0, &f);
            if (f.n && f.row[0].help && *f.row[0].help) n += help_row(p, &f.row[0], buf + n, cap - n);
        } else if (o->help && *o->help) {
            n += help_row(p, o, buf + n, cap - n);
        }
        if (n >= cap) n = cap - 1;
    }
    return n;
}

const char *cli_opts_help(const CliParse *p, char *buf, size_t cap)
{
    if (!cap) return buf;
    buf[0] = '\0';
    help_rows(p, p->opts, buf, cap, 0);
    return buf;
}

const char *cli_opts_usage(const CliParse *p, const char *head, const char *tail, char *buf, size_t cap)
{
    if (!cap) return buf;
    snprintf(buf, cap, "%s", head);
    size_t n = strlen(buf); /* < cap: each piece is cut to what is left */
    cli_opts_help(p, buf + n, cap - n);
    n += strlen(buf + n);
    snprintf(buf + n, cap - n, "%s", tail);
    return buf;
}
