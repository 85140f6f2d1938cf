/* tests/unit/test_granularity.c — scale counts (the seed's Table 1b) and dtype names. */
#include "fp8/dtype.h"
#include "fp8/granularity.h"
#include "test.h"

static void test_table_1b_4096(void)
{
    /* the seed: per-tensor 4 B, per-channel 16,384 B, 1x32 E8M0 524,288 B */
    static const struct {
        Granularity g;
        uint64_t n, bytes;
    } want[] = {
        {GRAN_TENSOR, 1, 4},          {GRAN_CHANNEL, 4096, 16384}, {GRAN_1X32, 524288, 524288},
        {GRAN_1X128, 131072, 524288}, {GRAN_128X128, 1024, 4096},
    };
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t n, b;
        Err e;
        CHECK(gran_scale_count(want[i].g, 4096, 4096, &n, &b, &e) == ST_OK);
        CHECK_EQ_U64(n, want[i].n);
        CHECK_EQ_U64(b, want[i].bytes);
    }
}

static void test_partial_blocks_round_up(void)
{
    uint64_t n, b;
    Err e;
    CHECK(gran_scale_count(GRAN_1X32, 3, 33, &n, &b, &e) == ST_OK);
    CHECK_EQ_U64(n, 6); /* 3 rows x ceil(33/32) */
    CHECK(gran_scale_count(GRAN_128X128, 129, 1, &n, &b, &e) == ST_OK);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(b, 8);
    CHECK(gran_scale_count(GRAN_TENSOR, 0, 5, &n, &b, &e) == ST_USAGE);
    CHECK(gran_scale_count(GRAN_CHANNEL, UINT64_MAX, 1, &n, &b, &e) == ST_OVERFLOW);
}

static void test_names_round_trip(void)
{
    for (int i = 0; i < GRAN_COUNT_; i++) {
        Granularity g;
        CHECK(gran_parse(gran_name((Granularity)i), &g) == 0 && g == (Granularity)i);
    }
    /* a value past the table (or a negative one, which wraps as unsigned) names nothing: "?" */
    CHECK_STR(gran_name(GRAN_COUNT_), "?");
    CHECK_STR(gran_name((Granularity)(GRAN_COUNT_ + 7)), "?");
    CHECK_STR(gran_name((Granularity)-1), "?");
    /* and has no scale type, no block and no scale count */
    for (int k = 0; k < 2; k++) {
        Granularity bad = k ? (Granularity)-1 : GRAN_COUNT_;
        uint64_t br = 7, bc = 7, n = 7, b = 7;
        Err e = {0};
        CHECK_EQ_INT(gran_scale_dtype(bad), DT_NONE);
        gran_block(bad, &br, &bc);
        CHECK_EQ_U64(br, 0);
        CHECK_EQ_U64(bc, 0);
        CHECK_EQ_INT(gran_scale_count(bad, 4, 4, &n, &b, &e), ST_SOFTWARE);
        CHECK_CONTAINS(e.msg, "unknown granularity");
    }
    CHECK_STR(dtype_name(DT_COUNT_), "?");
    CHECK_STR(dtype_name((Dtype)-1), "?");
    for (int i = 0; i < DT_COUNT_; i++) {
        Dtype t;
        CHECK(dtype_parse(dtype_name((Dtype)i), &t) == 0 && t == (Dtype)i);
    }
    Dtype t;
    CHECK(dtype_parse("fp64", &t) == -1);
    CHECK_EQ_INT(dtype_bytes(DT_BF16), 2);
    CHECK_EQ_INT(dtype_bytes(DT_E8M0), 1);
    CHECK_EQ_INT(dtype_bytes(DT_NONE), 0);
}

int main(void)
{
    RUN(test_table_1b_4096);
    RUN(test_partial_blocks_round_up);
    RUN(test_names_round_trip);
    return test_summary();
}
