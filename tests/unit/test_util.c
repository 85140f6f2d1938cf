/* tests/unit/test_util.c — strict parsing, atomic output, table rendering. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reports/table.h"
#include "test.h"
#include "util/cache.h"
#include "util/fileio.h"
#include "util/num.h"

static void test_parse_u64_rejects_what_strtoull_accepts(void)
{
    uint64_t v;
    Err e;
    CHECK(num_parse_u64("42", &v, &e) == ST_OK && v == 42);
    CHECK(num_parse_u64("18446744073709551615", &v, &e) == ST_OK && v == UINT64_MAX);
    CHECK(num_parse_u64("18446744073709551616", &v, &e) == ST_OVERFLOW);
    CHECK(num_parse_u64("-1", &v, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "'-1'");
    CHECK(num_parse_u64("42abc", &v, &e) == ST_USAGE);
    CHECK(num_parse_u64("", &v, &e) == ST_USAGE);
    CHECK(num_parse_u64(" 4", &v, &e) == ST_USAGE);
}

static void test_parse_count_scientific(void)
{
    uint64_t v;
    Err e;
    CHECK(num_parse_count("175e9", &v, &e) == ST_OK && v == 175000000000ull);
    CHECK(num_parse_count("1.5e9", &v, &e) == ST_OK && v == 1500000000ull);
    CHECK(num_parse_count("1.5", &v, &e) == ST_USAGE);
    CHECK(num_parse_count("1e20", &v, &e) == ST_OVERFLOW);
    CHECK(num_parse_count("-5", &v, &e) == ST_USAGE);
    CHECK(num_parse_count("nan", &v, &e) == ST_USAGE);
    CHECK(num_parse_count("1e400", &v, &e) == ST_USAGE);
}

static void test_parse_double_strict(void)
{
    double d;
    Err e;
    CHECK(num_parse_double("0.001395089319", NUM_FINITE_ONLY, &d, &e) == ST_OK && d == 0.001395089319);
    CHECK(num_parse_double("-2.5e-3", NUM_FINITE_ONLY, &d, &e) == ST_OK && d == -2.5e-3);
    CHECK(num_parse_double(".5", NUM_FINITE_ONLY, &d, &e) == ST_OK && d == 0.5);
    CHECK(num_parse_double("nan", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("nan", NUM_ALLOW_NONFINITE, &d, &e) == ST_OK && isnan(d));
    CHECK(num_parse_double("-inf", NUM_ALLOW_NONFINITE, &d, &e) == ST_OK && isinf(d) && d < 0);
    CHECK(num_parse_double("1e400", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("1e-400", NUM_FINITE_ONLY, &d, &e) == ST_OK && d == 0.0);
    CHECK(num_parse_double("0x1p3", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("1,5", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("abc", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("1.", NUM_FINITE_ONLY, &d, &e) == ST_OK && d == 1.0);
    CHECK(num_parse_double(".", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
    CHECK(num_parse_double("1e", NUM_FINITE_ONLY, &d, &e) == ST_USAGE);
}

static void test_parse_shape(void)
{
    uint64_t r, c;
    Err e;
    CHECK(num_parse_shape("4096x4096", &r, &c, &e) == ST_OK && r == 4096 && c == 4096);
    CHECK(num_parse_shape("1X7", &r, &c, &e) == ST_OK && r == 1 && c == 7);
    CHECK(num_parse_shape("0x5", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("4096", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("x4", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("4x", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("4x4x4", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("-4x4", &r, &c, &e) == ST_USAGE);
    CHECK(num_parse_shape("4294967296x4294967296", &r, &c, &e) == ST_OVERFLOW);
}

static void test_grouped(void)
{
    char b[32];
    CHECK_STR(num_fmt_grouped(16777216, b, sizeof b), "16,777,216");
    CHECK_STR(num_fmt_grouped(999, b, sizeof b), "999");
    CHECK_STR(num_fmt_grouped(1000, b, sizeof b), "1,000");
    CHECK_STR(num_fmt_grouped(0, b, sizeof b), "0");
    CHECK_STR(num_fmt_grouped(UINT64_MAX, b, sizeof b), "18,446,744,073,709,551,615");
}

static char *render(const Table *t, TableFormat fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Err e;
    CHECK(table_write(t, fmt, f, &e) == ST_OK);
    fclose(f);
    return buf;
}

static void test_table_renderings(void)
{
    static const TableCol cols[] = {
        {"name", "name", NULL, TC_STR, 0, 0},
        {"payload_bytes", "payload", "B", TC_U64, 0, TF_GROUP},
        {"saving_pct", "saving", "%", TC_F64, 3, 0},
    };
    Table *t = table_new(cols, 3);
    table_row(t);
    table_str(t, 0, "FP8, per-tensor");
    table_u64(t, 1, 16777216);
    table_f64(t, 2, 49.99998807907104);
    table_rule(t);
    table_row(t);
    table_str(t, 0, "say \"hi\"");
    CHECK_EQ_INT(table_rows(t), 2);

    char *csv = render(t, TABLE_CSV);
    CHECK_STR(csv, "name,payload_bytes,saving_pct\n\"FP8, per-tensor\",16777216,49.9999880791\n\"say \"\"hi\"\"\",,\n");
    free(csv);

    char *json = render(t, TABLE_JSON);
    CHECK_CONTAINS(json, "{\"name\": \"FP8, per-tensor\", \"payload_bytes\": 16777216, \"saving_pct\": 49.9999880791}");
    CHECK_CONTAINS(json, "\"name\": \"say \\\"hi\\\"\", \"payload_bytes\": null");
    free(json);

    char *text = render(t, TABLE_TEXT);
    CHECK_CONTAINS(text, "16,777,216");
    CHECK_CONTAINS(text, "50.000");
    CHECK_CONTAINS(text, "   B       %"); /* units row, right-aligned under numbers */
    free(text);
    table_free(t);
}

/* Text lines end at their last visible character: a left-aligned last column, an
 * empty last unit and a title with blanks at its end leave no trailing blanks. */
static void test_table_text_has_no_trailing_blanks(void)
{
    static const TableCol cols[] = {
        {"n", NULL, "B", TC_U64, 0, TF_GROUP},
        {"note", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, 2);
    table_set_title(t, "T  ");
    table_row(t);
    table_u64(t, 0, 1);
    table_str(t, 1, "a");
    table_row(t);
    table_u64(t, 0, 1000);
    table_str(t, 1, "longer note");
    table_row(t);
    table_u64(t, 0, 2);
    char *text = render(t, TABLE_TEXT);
    CHECK_STR(text, "T\n"
                    "    n  note\n"
                    "    B\n"
                    "------------------\n"
                    "    1  a\n"
                    "1,000  longer note\n"
                    "    2  -\n");
    free(text);
    table_free(t);
}

static void test_table_type_misuse_is_reported(void)
{
    static const TableCol cols[] = {{"n", NULL, NULL, TC_U64, 0, 0}};
    Table *t = table_new(cols, 1);
    table_row(t);
    table_str(t, 0, "oops");
    Err e;
    FILE *f = fopen("/dev/null", "w");
    CHECK(table_write(t, TABLE_CSV, f, &e) == ST_SOFTWARE);
    fclose(f);
    table_free(t);
}

static void test_outfile_is_atomic(void)
{
    char dir[] = "/tmp/fp8plan-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    Err e;
    OutFile o;
    CHECK(outfile_open(&o, path, &e) == ST_OK);
    fputs("partial", o.f);
    CHECK(access(path, F_OK) != 0); /* nothing at the target before commit */
    outfile_abort(&o);
    CHECK(access(path, F_OK) != 0); /* and nothing after an abort */
    CHECK(outfile_open(&o, path, &e) == ST_OK);
    fputs("done\n", o.f);
    CHECK(outfile_commit(&o, &e) == ST_OK);
    char *buf;
    size_t len;
    CHECK(file_read_all(path, &buf, &len, &e) == ST_OK);
    CHECK_STR(buf, "done\n");
    free(buf);
    unlink(path);
    CHECK(rmdir(dir) == 0); /* no temporary file left behind */
    CHECK(outfile_open(&o, "/nonexistent-dir/x.csv", &e) == ST_CANTCREAT);
    CHECK_CONTAINS(e.msg, "/nonexistent-dir/x.csv");
}

/* One sysfs-like file dir/indexI/name holding text. */
static void put_cache_file(const char *dir, int i, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/index%d", dir, i);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/index%d/%s", dir, i, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

static void rm_cache_dir(const char *dir, int n)
{
    static const char *const names[] = {"level", "type", "size"};
    char path[512];
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) snprintf(path, sizeof path, "%s/index%d/%s", dir, i, names[k]), unlink(path);
        snprintf(path, sizeof path, "%s/index%d", dir, i), rmdir(path);
    }
    rmdir(dir);
}

/* The last-level cache as Linux lists a CPU's caches (an EPYC VM's: 32K L1d, 32K L1i, 1024K L2, 32768K L3): the
 * highest level's size, instruction caches left out, sizes in K, M or bytes; 0 where nothing can be read. */
static void test_llc_bytes(void)
{
    char dir[] = "/tmp/fp8plan-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const char *const rows[4][3] = {{"1\n", "Data\n", "32K\n"},
                                           {"1\n", "Instruction\n", "32K\n"},
                                           {"2\n", "Unified\n", "1024K\n"},
                                           {"3\n", "Unified\n", "32768K\n"}};
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 0); /* no indexN */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) put_cache_file(dir, i, k == 0 ? "level" : k == 1 ? "type" : "size", rows[i][k]);
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 1048576); /* 1024 x 1024: L2 the last so far */
    for (int k = 0; k < 3; k++) put_cache_file(dir, 3, k == 0 ? "level" : k == 1 ? "type" : "size", rows[3][k]);
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 33554432); /* 32768 x 1024 */
    put_cache_file(dir, 3, "size", "2M\n");
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 2097152);
    put_cache_file(dir, 3, "type", "Instruction\n"); /* an instruction L3 is no data cache: L2 again */
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 1048576);
    put_cache_file(dir, 3, "type", "Unified\n");
    put_cache_file(dir, 3, "size", "32X\n"); /* not a size: L2 again */
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 1048576);
    put_cache_file(dir, 3, "size", "4096\n"); /* plain bytes */
    CHECK_EQ_U64(cache_llc_bytes_at(dir), 4096);
    CHECK_EQ_U64(cache_llc_bytes_at(NULL), 0);
    rm_cache_dir(dir, 4);
}

int main(void)
{
    RUN(test_parse_u64_rejects_what_strtoull_accepts);
    RUN(test_parse_count_scientific);
    RUN(test_parse_double_strict);
    RUN(test_parse_shape);
    RUN(test_grouped);
    RUN(test_table_renderings);
    RUN(test_table_text_has_no_trailing_blanks);
    RUN(test_table_type_misuse_is_reported);
    RUN(test_outfile_is_atomic);
    RUN(test_llc_bytes);
    return test_summary();
}
