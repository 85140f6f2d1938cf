/* tests/unit/test_table_text.c — text tables fit 100 columns: prose cells wrap at blanks, a table too
 * wide even then splits into groups of columns led by its key columns, numbers too long for fixed
 * notation switch to %g, titles and prose wrap, widths count characters rather than bytes. */
#include <stdlib.h>

#include "reports/table.h"
#include "test.h"

static char *render(const Table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Err e;
    CHECK(table_write(t, TABLE_TEXT, f, &e) == ST_OK);
    fclose(f);
    return buf;
}

/* The widest line in characters (UTF-8 continuation bytes do not count). */
static int widest(const char *s)
{
    int w = 0, max = 0;
    for (; *s; s++) {
        if (*s == '\n') {
            if (w > max) max = w;
            w = 0;
        } else if (((unsigned char)*s & 0xC0) != 0x80) {
            w++;
        }
    }
    return w > max ? w : max;
}

static void test_prose_cells_wrap(void)
{
    static const TableCol cols[] = {
        {"name", NULL, NULL, TC_STR, 0, 0},
        {"params", NULL, NULL, TC_U64, 0, TF_GROUP},
        {"source", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, 3);
    table_row(t);
    table_str(t, 0, "m");
    table_u64(t, 1, 1000);
    /* 30 words of 4 letters: 149 characters */
    table_str(t, 2,
              "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss "
              "tttt uuuu vvvv wwww xxxx yyyy zzzz 1111 2222 3333 4444");
    char *s = render(t);
    CHECK(widest(s) <= TABLE_WIDTH);
    /* name (4) + 2 + params (6) + 2 = 14 columns before the source, which gets 86: "aaaa ... qqqq" is 17
     * words = 84 characters, the 18th word would make 89 */
    CHECK_CONTAINS(
        s, "m      1,000  aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq\n"
           "              rrrr ssss tttt uuuu vvvv wwww xxxx yyyy zzzz 1111 2222 3333 4444\n");
    free(s);
    table_free(t);
}

static void test_wide_tables_split_into_groups(void)
{
    TableCol cols[13];
    char names[13][16];
    cols[0] = (TableCol){"model", NULL, NULL, TC_STR, 0, 0};
    for (int i = 1; i < 13; i++) {
        snprintf(names[i], sizeof names[i], "column_%02d", i); /* 9 characters each */
        cols[i] = (TableCol){names[i], NULL, NULL, TC_U64, 0, 0};
    }
    Table *t = table_new(cols, 13);
    table_row(t);
    table_str(t, 0, "gpt-7b");
    for (int i = 1; i < 13; i++) table_u64(t, i, (uint64_t)i);
    char *s = render(t);
    /* 6 + 12 x (2 + 9) = 138 > 100: model + 8 columns = 6 + 88 = 94; the rest after a blank line, led by
     * model again */
    CHECK(widest(s) <= TABLE_WIDTH);
    CHECK_CONTAINS(s, "model   column_01  column_02");
    CHECK_CONTAINS(s, "column_08\n");
    CHECK_CONTAINS(s, "\n\nmodel   column_09  column_10  column_11  column_12\n");
    CHECK_CONTAINS(s, "gpt-7b          9         10         11         12\n");
    free(s);
    table_free(t);
}

static void test_key_columns_lead_each_group(void)
{
    TableCol cols[12];
    char names[12][16];
    cols[0] = (TableCol){"id", NULL, NULL, TC_U64, 0, 0};
    cols[1] = (TableCol){"recipe", NULL, NULL, TC_STR, 0, TF_KEY};
    cols[2] = (TableCol){"metric", NULL, NULL, TC_STR, 0, TF_KEY};
    for (int i = 3; i < 12; i++) {
        snprintf(names[i], sizeof names[i], "value_%02d__", i); /* 10 characters */
        cols[i] = (TableCol){names[i], NULL, NULL, TC_U64, 0, 0};
    }
    Table *t = table_new(cols, 12);
    table_row(t);
    table_u64(t, 0, 1);
    table_str(t, 1, "fp8lm");
    table_str(t, 2, "memory");
    for (int i = 3; i < 12; i++) table_u64(t, i, (uint64_t)i);
    char *s = render(t);
    CHECK(widest(s) <= TABLE_WIDTH);
    /* the two TF_KEY columns first in every group, wherever they stand */
    CHECK_CONTAINS(s, "recipe  metric  id  value_03__");
    CHECK_CONTAINS(s, "\n\nrecipe  metric  value_");
    free(s);
    table_free(t);
}

static void test_long_numbers_and_titles(void)
{
    static const TableCol cols[] = {{"item", NULL, NULL, TC_STR, 0, 0}, {"seconds", NULL, "s", TC_F64, 4, 0}};
    Table *t = table_new(cols, 2);
    char title[300];
    memset(title, 0, sizeof title);
    for (int i = 0; i < 60; i++) memcpy(title + 5 * i, "word ", 5); /* 300 characters of prose */
    title[299] = '\0';
    table_set_title(t, title);
    table_row(t);
    table_str(t, 0, "gemm");
    table_f64(t, 1, 8.4587908706738861e124); /* a GEMM at an efficiency of 1e-300 */
    table_row(t);
    table_str(t, 0, "optimizer");
    table_f64(t, 1, 0.0696);
    char *s = render(t);
    CHECK(widest(s) <= TABLE_WIDTH);
    CHECK_CONTAINS(s, "gemm       8.459e+124\n"); /* %.4g: fixed notation would take 130 characters */
    CHECK_CONTAINS(s, "optimizer      0.0696\n");
    CHECK_CONTAINS(s, "word word\n  word"); /* the title wrapped at a blank, no trailing blank, indented 2 */
    free(s);
    table_free(t);
}

static void test_widths_count_characters(void)
{
    static const TableCol cols[] = {{"name", NULL, NULL, TC_STR, 0, 0}, {"n", NULL, NULL, TC_U64, 0, 0}};
    Table *t = table_new(cols, 2);
    table_row(t);
    table_str(t, 0, "caf\xC3\xA9"); /* 4 characters, 5 bytes */
    table_u64(t, 1, 1);
    table_row(t);
    table_str(t, 0, "tea");
    table_u64(t, 1, 22);
    char *s = render(t);
    CHECK_CONTAINS(s, "caf\xC3\xA9   1\ntea   22\n"); /* "café" pads like "tea " */
    free(s);
    table_free(t);
}

static void test_prose(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char text[400] = "";
    for (int i = 0; i < 40; i++) strcat(text, "prose is ");
    table_put_prose(f, "  - %s\nnext line\n\n", text);
    fclose(f);
    CHECK(widest(buf) <= TABLE_WIDTH);
    CHECK(strncmp(buf, "  - prose is", 12) == 0);
    CHECK_CONTAINS(buf, "\n    prose is"); /* continuation: the line's indent + 2 */
    CHECK_CONTAINS(buf, "\nnext line\n\n");
    free(buf);
}

static void test_select_columns(void)
{
    static const TableCol cols[] = {{"name", NULL, NULL, TC_STR, 0, 0},
                                    {"hbm_bytes", "memory", "B", TC_U64, 0, TF_GROUP},
                                    {"source", NULL, NULL, TC_STR, 0, 0}};
    Table *t = table_new(cols, 3);
    table_row(t);
    table_str(t, 0, "h100");
    table_u64(t, 1, 80000000000ull);
    table_str(t, 2, "a datasheet");
    Err e;
    Table *s = table_select(t, "source,name", &e);
    CHECK(s != NULL);
    char *out = render(s);
    CHECK_STR(out, "source       name\n-----------------\na datasheet  h100\n");
    free(out);
    table_free(s);
    CHECK(table_select(t, "name,nope", &e) == NULL);
    CHECK_CONTAINS(e.msg, "no column 'nope' (known: name, hbm_bytes, source)");
    CHECK(table_select(t, "name,name", &e) == NULL);
    CHECK_CONTAINS(e.msg, "'name' is named twice");
    CHECK(table_select(t, "", &e) == NULL);
    table_free(t);
}

/* table_set_width: a column at least that wide whatever its cells (a measured column keeps one layout from
 * run to run); a wider cell still widens it; --columns keeps it; a column out of range is a programming
 * error table_write reports. */
static void test_set_width(void)
{
    static const TableCol cols[] = {{"term", NULL, NULL, TC_STR, 0, 0},
                                    {"measured_s", "measured", "s", TC_F64, 6, 0},
                                    {"note", NULL, NULL, TC_STR, 0, 0}};
    const double secs[2] = {8.692874, 49.463589}; /* "8.692874" (8 characters), "49.463589" (9) */
    char *out[2];
    for (int i = 0; i < 2; i++) {
        Table *t = table_new(cols, 3);
        table_set_width(t, 1, 10);
        table_row(t);
        table_str(t, 0, "step");
        table_f64(t, 1, secs[i]);
        table_str(t, 2, "x");
        out[i] = render(t);
        table_free(t);
    }
    /* term 4 + 2 + 10 + 2: the note at column 18 both times; the 8 and 9 characters right-aligned in 10 */
    CHECK_STR(out[0], "term    measured  note\n"
                      "               s\n"
                      "----------------------\n"
                      "step    8.692874  x\n");
    CHECK_STR(out[1], "term    measured  note\n"
                      "               s\n"
                      "----------------------\n"
                      "step   49.463589  x\n");
    free(out[0]);
    free(out[1]);
    Table *t = table_new(cols, 3);
    table_set_width(t, 1, 4);
    table_row(t);
    table_str(t, 0, "step");
    table_f64(t, 1, 12345.5); /* "12345.500000": 12 characters, wider than 4 and than the label */
    table_str(t, 2, "x");
    char *s = render(t);
    CHECK_CONTAINS(s, "step  12345.500000  x\n");
    free(s);
    table_set_width(t, 1, 14);
    Err e;
    Table *sel = table_select(t, "note,measured_s", &e);
    CHECK(sel != NULL);
    if (sel) {
        s = render(sel);
        /* note 4 + 2 + 14 = 20: "12345.500000" (12) after 2 + 2 blanks */
        CHECK_CONTAINS(s, "x       12345.500000\n");
        free(s);
        table_free(sel);
    }
    table_set_width(t, 3, 8);
    FILE *f = fopen("/dev/null", "w");
    CHECK(f && table_write(t, TABLE_TEXT, f, &e) == ST_SOFTWARE);
    if (f) fclose(f);
    table_free(t);
}

int main(void)
{
    RUN(test_prose_cells_wrap);
    RUN(test_wide_tables_split_into_groups);
    RUN(test_key_columns_lead_each_group);
    RUN(test_long_numbers_and_titles);
    RUN(test_widths_count_characters);
    RUN(test_prose);
    RUN(test_select_columns);
    RUN(test_set_width);
    return test_summary();
}
