/* tests/unit/test_text.c — input hygiene: UTF-8 validation (RFC 3629's table), escaping for messages,
 * JSON that stays valid UTF-8, and the shared CSV reader's rules (control bytes and invalid UTF-8 in
 * cells, a byte-order mark, the row limit enforced while reading). */
#include <stdlib.h>
#include <time.h>

#include "catalog/csv_table.h"
#include "reports/table.h"
#include "test.h"
#include "util/text.h"

static void test_utf8_sequences(void)
{
    CHECK_EQ_INT(utf8_seq_len("A", 1), 1);
    CHECK_EQ_INT(utf8_seq_len("\xC3\xA9", 2), 2);         /* é U+00E9 */
    CHECK_EQ_INT(utf8_seq_len("\xE2\x80\x94", 3), 3);     /* — U+2014 */
    CHECK_EQ_INT(utf8_seq_len("\xF0\x9F\x98\x80", 4), 4); /* U+1F600 */
    CHECK_EQ_INT(utf8_seq_len("\xF4\x8F\xBF\xBF", 4), 4); /* U+10FFFF, the last code point */
    CHECK_EQ_INT(utf8_seq_len("\x80", 1), 0);             /* a lone continuation byte */
    CHECK_EQ_INT(utf8_seq_len("\xC0\xAF", 2), 0);         /* overlong '/' */
    CHECK_EQ_INT(utf8_seq_len("\xC1\xBF", 2), 0);         /* overlong */
    CHECK_EQ_INT(utf8_seq_len("\xE0\x80\xAF", 3), 0);     /* overlong 3-byte */
    CHECK_EQ_INT(utf8_seq_len("\xED\xA0\x80", 3), 0);     /* U+D800, a surrogate */
    CHECK_EQ_INT(utf8_seq_len("\xF4\x90\x80\x80", 4), 0); /* U+110000, past the end */
    CHECK_EQ_INT(utf8_seq_len("\xF5\x80\x80\x80", 4), 0);
    CHECK_EQ_INT(utf8_seq_len("\xE2\x80", 2), 0);     /* cut short */
    CHECK_EQ_INT(utf8_seq_len("\xE2\x28\xA1", 3), 0); /* a bad second byte */
    CHECK_EQ_INT(utf8_seq_len("\xFF", 1), 0);
}

static void test_bad_bytes_and_escaping(void)
{
    CHECK_EQ_U64(text_bad_byte("plain text, caf\xC3\xA9", 17), 17);
    CHECK_EQ_U64(text_bad_byte("plain text, caf\xC3\xA9", 16), 15); /* cut inside é */
    CHECK_EQ_U64(text_bad_byte("3\0 2", 4), 1);                     /* the NUL */
    CHECK_EQ_U64(text_bad_byte("ab\tc", 4), 2);                     /* a tab is a control byte too */
    CHECK_EQ_U64(text_bad_byte("ab\x7F", 3), 2);                    /* DEL */
    CHECK_EQ_U64(text_bad_byte("ok\xC3(", 4), 2);                   /* invalid UTF-8 */
    CHECK_EQ_U64(text_bad_byte("\xE2\x80\x94x", 4), 4);
    char out[64];
    CHECK_STR(text_escape("\x1B[31mred", out, sizeof out, 0), "\\x1B[31mred");
    CHECK_STR(text_escape("caf\xC3\xA9 \xFF", out, sizeof out, 0), "caf\xC3\xA9 \\xFF");
    CHECK_STR(text_escape("a\\b", out, sizeof out, 1), "a\\\\b");
    CHECK_STR(text_escape("a\\b", out, sizeof out, 0), "a\\b");
    CHECK_STR(text_escape_n("3\0 2", 4, out, sizeof out, 0), "3\\x00 2");
    CHECK_STR(text_escape("\x01\x02\x03", out, 9, 0), "\\x01\\x02");   /* cut before what does not fit */
    CHECK_STR(text_escape("\xC3\xA9\xC3\xA9", out, 4, 0), "\xC3\xA9"); /* never half a character */
}

static void test_json_is_valid_utf8(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    json_put_str(f, "ok \xC3\xA9 \xFF\xC3( \x1B \x7F \"q\" \\");
    fclose(f);
    CHECK_STR(buf, "\"ok \xC3\xA9 \\ufffd\\ufffd( \\u001b \\u007f \\\"q\\\" \\\\\"");
    CHECK_EQ_U64(text_bad_byte(buf, len), len);
    free(buf);
}

static void test_csv_cells_hold_text(void)
{
    CsvTable t;
    Err e;
    static const char nul[] = "name,layers\nm,3\0 2\n";
    CHECK(csv_table_parse(nul, sizeof nul - 1, "m.csv", &t, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "m.csv: row 2, column layers: control byte 0x00 at byte 2 of '3\\x00 2'");
    csv_table_free(&t);
    static const char esc[] = "name,source\nm,\"see \x1B[2J here\"\n";
    CHECK(csv_table_parse(esc, sizeof esc - 1, "m.csv", &t, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "row 2, column source: control byte 0x1B");
    CHECK_CONTAINS(e.msg, "'see \\x1B[2J here'");
    csv_table_free(&t);
    static const char utf[] = "name,source\nm,bad \xE9t\xE9\n"; /* Latin-1, not UTF-8 */
    CHECK(csv_table_parse(utf, sizeof utf - 1, "m.csv", &t, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "invalid UTF-8 byte 0xE9 at byte 5");
    csv_table_free(&t);
    static const char head[] = "na\x01me,x\nm,1\n"; /* the header is checked too */
    CHECK(csv_table_parse(head, sizeof head - 1, "m.csv", &t, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "row 1, column 1");
    csv_table_free(&t);
    static const char good[] = "\xEF\xBB\xBFname,source\r\nm,\"caf\xC3\xA9, \xE2\x80\x94\"\r\n"; /* BOM, CRLF */
    CHECK(csv_table_parse(good, sizeof good - 1, "m.csv", &t, &e) == ST_OK);
    CHECK_STR(t.head[0], "name");
    CHECK_STR(csv_table_cell(&t, 0, "source"), "caf\xC3\xA9, \xE2\x80\x94");
    csv_table_free(&t);
}

/* A header naming a column twice is refused naming it, even when the name is one the reader expects (taking
 * either cell silently would read the row wrong): "name,x,x" against the columns name and x. Each expected
 * column once passes; one missing is named. */
static void test_csv_header_names_each_column_once(void)
{
    CsvTable t;
    Err e = {0};
    static const char twice[] = "name,x,x\nm,1,2\n";
    CHECK(csv_table_parse(twice, sizeof twice - 1, "d.csv", &t, &e) == ST_OK);
    CHECK(csv_table_expect(&t, "name,x", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "d.csv: row 1: column 'x' appears twice");
    csv_table_free(&t);
    static const char once[] = "x,name\nm,1\n";
    CHECK(csv_table_parse(once, sizeof once - 1, "d.csv", &t, &e) == ST_OK);
    CHECK(csv_table_expect(&t, "name,x", &e) == ST_OK);
    CHECK(csv_table_expect(&t, "name,x,y", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "'y'");
    csv_table_free(&t);
}

/* A byte-order mark counts only within the given length: the whole of "\xEF\xBB\xBF" (3 of 3 bytes) is one,
 * its first 2 bytes are not (even with the third in memory after them), and "\xEF\xBB\xBFx" starts with one. */
static void test_bom_within_length(void)
{
    static const char bom[] = "\xEF\xBB\xBFx";
    CHECK_EQ_U64(utf8_bom_len(bom, 3), 3);
    CHECK_EQ_U64(utf8_bom_len(bom, 4), 3);
    CHECK_EQ_U64(utf8_bom_len(bom, 2), 0);
    CHECK_EQ_U64(utf8_bom_len(bom, 0), 0);
    CHECK_EQ_U64(utf8_bom_len("x\xEF\xBB\xBF", 4), 0);
}

static void test_row_limit_while_reading(void)
{
    enum { ROWS = 200000 };
    size_t cap = 32 + (size_t)ROWS * 16, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "name,x\n");
    for (int i = 0; i < ROWS; i++) n += (size_t)snprintf(text + n, cap - n, "m%d,%d\n", i, i);
    CsvTable t;
    Err e;
    clock_t c0 = clock();
    CHECK(csv_table_parse_max(text, n, "big.csv", 256, &t, &e) == ST_DATA);
    double s = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK_CONTAINS(e.msg, "big.csv: more than 256 data rows");
    CHECK_CONTAINS(e.msg, "stopped at row 258"); /* header = row 1, data rows 2..257, 258 is one too many */
    CHECKF(s < 0.5, "stopping at 256 of 200,000 rows took %.3f s", s);
    csv_table_free(&t);
    CHECK(csv_table_parse_max(text, n, "big.csv", ROWS, &t, &e) == ST_OK); /* exactly at the limit is fine */
    CHECK_EQ_INT(t.nrows, ROWS);
    csv_table_free(&t);
    free(text);
    /* too many columns */
    size_t wide_n = (size_t)CSV_TABLE_MAX_COLS * 2 + 8;
    char *wide = malloc(wide_n);
    size_t k = 0;
    for (int i = 0; i <= CSV_TABLE_MAX_COLS; i++) wide[k++] = 'a', wide[k++] = ',';
    wide[k - 1] = '\n';
    CHECK(csv_table_parse(wide, k, "wide.csv", &t, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "more than 1024 fields");
    csv_table_free(&t);
    free(wide);
}

int main(void)
{
    RUN(test_utf8_sequences);
    RUN(test_bad_bytes_and_escaping);
    RUN(test_json_is_valid_utf8);
    RUN(test_csv_cells_hold_text);
    RUN(test_csv_header_names_each_column_once);
    RUN(test_bom_within_length);
    RUN(test_row_limit_while_reading);
    return test_summary();
}
