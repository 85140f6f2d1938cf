/* tests/fuzz/fuzz_text.c — hostile bytes against the shared CSV reader and the renderers. The first
 * byte picks the check:
 *   0: csv_table_parse_max: a table it accepts holds printable UTF-8 in every cell and header;
 *   1: json_put_str and text_escape: the output is valid UTF-8 with no raw control byte, whatever goes in;
 *   2: a Table of the input's pieces as text cells and numbers, rendered as text: no line is wider than
 *      TABLE_WIDTH characters and every byte of every cell appears in the output in order;
 *   3: table_put_prose: no line wider than TABLE_WIDTH (a word longer than that is cut). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/csv_table.h"
#include "reports/table.h"
#include "util/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Text that is valid UTF-8, no raw control byte but the newlines; each line at most `width` columns. */
static void check_text(const char *s, size_t n, int width)
{
    if (utf8_seq_len(s, 0) != 0) abort();
    size_t line = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '\n') {
            i++, line = 0;
            continue;
        }
        int k = utf8_seq_len(s + i, n - i);
        if (!k || (k == 1 && ((unsigned char)s[i] < 0x20 || s[i] == 0x7F))) abort();
        i += (size_t)k;
        if (width && ++line > (size_t)width) abort();
    }
}

static char *render(void (*fn)(FILE *, const void *), const void *ctx, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    fn(f, ctx);
    fclose(f);
    return buf;
}

static void put_json(FILE *f, const void *s) { json_put_str(f, s); }
static void put_table(FILE *f, const void *t)
{
    Err e;
    if (table_write(t, TABLE_TEXT, f, &e)) abort();
}
static void put_prose(FILE *f, const void *s) { table_put_prose(f, "%s", (const char *)s); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536) return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    char *z = malloc(n + 1); /* the input as a C string (cut at its first NUL) */
    memcpy(z, text, n);
    z[n] = '\0';
    size_t len;
    char *out;
    switch (data[0] % 4) {
    case 0: {
        CsvTable t;
        Err e;
        if (csv_table_parse_max(text, n, "fuzz.csv", 1 + data[0] / 4, &t, &e) == ST_OK) {
            for (int c = 0; c < t.ncols; c++)
                if (text_bad_byte(t.head[c], strlen(t.head[c])) != strlen(t.head[c])) abort();
            for (long i = 0; i < (long)t.nrows * t.ncols; i++)
                if (text_bad_byte(t.cells[i], strlen(t.cells[i])) != strlen(t.cells[i])) abort();
        }
        csv_table_free(&t);
        break;
    }
    case 1: {
        out = render(put_json, z, &len);
        check_text(out, len, 0);
        free(out);
        char esc[4 * 256 + 1];
        text_escape(z, esc, sizeof esc, data[0] & 4);
        check_text(esc, strlen(esc), 0);
        break;
    }
    case 2: {
        /* pieces separated by 0x1F: even ones text cells, odd ones the lengths of numbers */
        static const TableCol cols[] = {
            {"a", NULL, NULL, TC_STR, 0, 0},       {"b", "bee", "u", TC_STR, 0, TF_KEY},
            {"n", NULL, "B", TC_U64, 0, TF_GROUP}, {"c", NULL, NULL, TC_STR, 0, 0},
            {"x", NULL, "s", TC_F64, 4, 0},        {"d", NULL, NULL, TC_STR, 0, 0},
        };
        Table *t = table_new(cols, 6);
        char *save, *p = strtok_r(z, "\x1F\n", &save);
        for (int r = 0; p && r < 16; r++) {
            table_row(t);
            for (int c = 0; c < 6 && p; c++, p = strtok_r(NULL, "\x1F\n", &save)) {
                if (cols[c].type == TC_STR) {
                    char clean[4 * 4096 + 1]; /* cells hold text: escape what the reader would refuse */
                    text_escape(p, clean, sizeof clean, 0);
                    table_str(t, c, clean);
                } else if (cols[c].type == TC_U64) {
                    table_u64(t, c, strtoull(p, NULL, 10) * 2654435761u);
                } else {
                    table_f64(t, c, strtod(p, NULL));
                }
            }
        }
        out = render(put_table, t, &len);
        check_text(out, len, TABLE_WIDTH);
        free(out);
        table_free(t);
        break;
    }
    default: {
        char clean[4 * 1024 + 1];
        text_escape(z, clean, sizeof clean, 0);
        out = render(put_prose, clean, &len);
        check_text(out, len, TABLE_WIDTH);
        free(out);
    }
    }
    free(z);
    return 0;
}
