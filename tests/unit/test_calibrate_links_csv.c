/* tests/unit/test_calibrate_links_csv.c — links.csv, a host profile's per-collective fits: read into the host's row
 * and refused naming the row, column and value (catalog/catalog_links.c), and written by calibrate with how each
 * range was measured (exec/measure/calibrate_rows.c). The fits themselves and the plan made with them:
 * test_calibrate_links.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "exec/measure/calibrate_link.h"
#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

static const char links_head[] = "version,device,op,path,from_bytes,to_bytes,latency_us,bus_gbps,source\n";

/* gpus.csv with a measured host ("h") and a GPU ("gpu"), then links text parsed into it. */
static Status parse_links(Catalog *cat, const char *rows, Err *e)
{
    Calibration c;
    memset(&c, 0, sizeof c);
    c.reps = 3, c.ranks = 2, c.rate[CAL_PATH_BF16] = 1e11, c.rate[CAL_PATH_FP8] = 5e10, c.rate[CAL_PATH_FP32] = 1e11;
    c.mem_bw = 1e10, c.elem_bw = 1e9, c.link_bw = 1e9, c.link_lat = 1e-6, c.mem_bytes = 1 << 30;
    snprintf(c.backend, sizeof c.backend, "cpu");
    char gpus[16384], row[8192], text[8192];
    Status st = cal_gpu_row(&c, "h", row, sizeof row, e);
    if (st) return st;
    GpuSpec g = fx_gpu();
    snprintf(g.name, sizeof g.name, "gpu");
    g.sms = 132, g.mamf_bf16 = g.flops_bf16, g.mamf_fp8 = g.flops_fp8, g.sustained = 1;
    snprintf(g.source, sizeof g.source, "typed in");
    char grow[4096];
    if ((st = cal_gpu_row_of(&g, grow, sizeof grow, e))) return st;
    snprintf(gpus, sizeof gpus, "%s\n%s\n%s\n", cal_gpu_header, row, grow);
    if ((st = catalog_parse_gpus(cat, gpus, strlen(gpus), "gpus.csv", e))) return st;
    snprintf(text, sizeof text, "%s%s", links_head, rows);
    return catalog_parse_links(cat, text, strlen(text), "links.csv", e);
}

static void test_links_csv(void)
{
    Catalog *cat = calloc(1, sizeof *cat);
    CHECK(cat != NULL);
    if (!cat) return;
    Err e = {0};
    /* two ranges of the FP32 all-reduce and an all-gather: read into the host's row */
    Status st = parse_links(cat,
                            "1,h,all-reduce,fp32,0,4096,1.5,0.25,\"a\"\n"
                            "1,h,all-reduce,fp32,4096,,20,1.5,\"b\"\n"
                            "1,h,all-gather,bytes,0,,2,4,\"c\"\n",
                            &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    const GpuSpec *h = catalog_gpu(cat, "h");
    CHECK(h && h->nlink_fit == 3);
    if (h && h->nlink_fit == 3) {
        CHECK(h->link_fit[0].op == OP_ALL_REDUCE && h->link_fit[0].path == LINK_PATH_FP32);
        CHECK(h->link_fit[0].from == 0 && h->link_fit[0].to == 4096 && h->link_fit[1].to == 0);
        CHECK_REL(h->link_fit[0].lat, 1.5e-6, 1e-12);
        CHECK_REL(h->link_fit[0].bw, 0.25e9, 1e-12);
        CHECK(h->link_fit[2].op == OP_ALL_GATHER && h->link_fit[2].path == LINK_PATH_BYTES);
        /* written back in the same columns, the row reads the same */
        char row[1024];
        CHECK(cal_link_row_of(h, 1, row, sizeof row, &e) == ST_OK);
        CHECK_CONTAINS(row, "1,h,all-reduce,fp32,4096,,20,1.5,");
    }
    /* version 2: an all-to-all's per-message fits, beside a version 1 row of the same op (another path) */
    st = parse_links(cat,
                     "1,h,all-to-all,bytes,0,,0.5,1,\"a\"\n"
                     "2,h,all-to-all,eager,0,4032,1.25,2,\"b\"\n"
                     "2,h,all-to-all,rendezvous,4032,,3,8,\"c\"\n",
                     &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    h = catalog_gpu(cat, "h");
    CHECK(h && h->nlink_fit == 3);
    if (h && h->nlink_fit == 3) {
        CHECK(h->link_fit[1].path == LINK_PATH_EAGER && h->link_fit[1].to == 4032);
        CHECK(h->link_fit[2].path == LINK_PATH_RENDEZVOUS && h->link_fit[2].from == 4032);
        CHECK(plan_a2a_msg_fit(h, 4031) == &h->link_fit[1] && plan_a2a_msg_fit(h, 4032) == &h->link_fit[2]);
        char row[1024];
        CHECK(cal_link_row_of(h, 2, row, sizeof row, &e) == ST_OK);
        CHECK_CONTAINS(row, "2,h,all-to-all,rendezvous,4032,,3,8,");
    }
    /* the gradient sweeps' rows ("fp32 grad", "fp32 emb" from 4 KiB), beside the FP32 all-reduce's own of the same
     * range: the embedding's gradient at its own row where one holds the payload, else at the gradient's */
    st = parse_links(cat,
                     "1,h,all-reduce,fp32,0,,1.5,2,\"a\"\n"
                     "1,h,all-reduce,fp32 grad,0,,2.5,1.25,\"b\"\n"
                     "1,h,all-reduce,fp32 emb,4096,,3.5,1,\"c\"\n",
                     &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    h = catalog_gpu(cat, "h");
    CHECK(h && h->nlink_fit == 3);
    if (h && h->nlink_fit == 3) {
        CHECK(h->link_fit[1].op == OP_ALL_REDUCE && h->link_fit[1].path == LINK_PATH_FP32_GRAD);
        CHECK(h->link_fit[2].op == OP_ALL_REDUCE && h->link_fit[2].path == LINK_PATH_FP32_EMB);
        CHECK(plan_link_fit(h, OP_ALL_REDUCE, DT_FP32, 8) == &h->link_fit[0]);
        CHECK(plan_link_fit_grad(h, OP_ALL_REDUCE, DT_FP32, 8) == &h->link_fit[1]);
        CHECK(plan_link_fit_grad(h, OP_ALL_REDUCE, DT_FP32, 4096) == &h->link_fit[1]);
        CHECK(plan_link_fit_emb(h, OP_ALL_REDUCE, DT_FP32, 4095) == &h->link_fit[1]);
        CHECK(plan_link_fit_emb(h, OP_ALL_REDUCE, DT_FP32, 4096) == &h->link_fit[2]);
        /* a BF16 call is no gradient's: plan_link_fit's row (no BF16 row here: the op's FP32 one) */
        CHECK(plan_link_fit_emb(h, OP_ALL_REDUCE, DT_BF16, 4096) == &h->link_fit[0]);
        char row[1024];
        CHECK(cal_link_row_of(h, 1, row, sizeof row, &e) == ST_OK);
        CHECK_CONTAINS(row, "1,h,all-reduce,fp32 grad,0,,2.5,1.25,");
        CHECK(cal_link_row_of(h, 2, row, sizeof row, &e) == ST_OK);
        CHECK_CONTAINS(row, "1,h,all-reduce,fp32 emb,4096,,3.5,1,");
    }
    /* a profile of this calibrate: ten payload sweeps of five ranges each ([0, 64), [64, 4096), [4096, 65536),
     * [65536, 1 MiB), [1 MiB, no end)), 50 rows, and the two per-message fits: 52 rows, past the 32 a row held
     * before; each call is timed at its own range (an all-reduce of 100,000 B in BF16: the fourth, latency 4 us) */
    static const char *const ops[10][2] = {
        {"all-reduce", "fp32"},     {"all-reduce", "bf16"},    {"all-reduce", "fp8"},   {"reduce-scatter", "fp32"},
        {"reduce-scatter", "bf16"}, {"reduce-scatter", "fp8"}, {"all-gather", "bytes"}, {"send/recv", "bytes"},
        {"broadcast", "bytes"},     {"all-to-all", "bytes"}};
    static const char *const cuts[6] = {"0", "64", "4096", "65536", "1048576", ""};
    char many[4096];
    size_t k = 0;
    for (int o = 0; o < 10; o++)
        for (int r = 0; r < 5; r++)
            k += (size_t)snprintf(many + k, sizeof many - k, "1,h,%s,%s,%s,%s,%d,1,\"x\"\n", ops[o][0], ops[o][1],
                                  cuts[r], cuts[r + 1], r + 1);
    k += (size_t)snprintf(many + k, sizeof many - k,
                          "2,h,all-to-all,eager,0,4041,1,1,\"e\"\n2,h,all-to-all,rendezvous,4041,,2,2,\"r\"\n");
    CHECK(k < sizeof many);
    st = parse_links(cat, many, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    h = catalog_gpu(cat, "h");
    CHECK(h && h->nlink_fit == 52);
    if (h && h->nlink_fit == 52) {
        const LinkFit *f = plan_link_fit(h, OP_ALL_REDUCE, DT_BF16, 100000);
        CHECK(f == &h->link_fit[8] && f->from == 65536 && f->to == 1048576);
        CHECK_REL(f->lat, 4e-6, 1e-12);
    }
    /* seven ranges a sweep, 70 rows: the 65th is more than links.csv holds */
    static const char *const cuts7[8] = {"0", "64", "256", "1024", "4096", "65536", "1048576", ""};
    k = 0;
    for (int o = 0; o < 10; o++)
        for (int r = 0; r < 7; r++)
            k += (size_t)snprintf(many + k, sizeof many - k, "1,h,%s,%s,%s,%s,1,1,\"x\"\n", ops[o][0], ops[o][1],
                                  cuts7[r], cuts7[r + 1]);
    CHECK(k < sizeof many);
    memset(&e, 0, sizeof e);
    CHECK(parse_links(cat, many, &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "more than 64 fits");
    /* refused, naming the column and the value (exit 65 from the command) */
    static const struct {
        const char *row, *col, *what;
    } bad[] = {
        {"3,h,all-reduce,fp32,0,,1,1,\"x\"\n", "version", "measure the profile again with fp8plan calibrate"},
        {"2,h,all-reduce,fp32,0,,1,1,\"x\"\n", "path", "version 2 rows are an all-to-all's per-message fits"},
        {"1,h,all-to-all,eager,0,4000,1,1,\"x\"\n", "path", "version 1 rows the others"},
        {"2,h,all-gather,rendezvous,0,,1,1,\"x\"\n", "path", "per-message fits are an all-to-all's"},
        {"2,h,all-to-all,eager,0,4000,1,1,\"x\"\n2,h,all-to-all,eager,64,,1,1,\"y\"\n", "from_bytes", "overlaps"},
        {"1,nope,all-reduce,fp32,0,,1,1,\"x\"\n", "device", "'nope' is not a row of gpus.csv"},
        {"1,gpu,all-reduce,fp32,0,,1,1,\"x\"\n", "device", "a GPU's row"},
        {"1,h,gather,bytes,0,,1,1,\"x\"\n", "op", "'gather'"},
        {"1,h,all-gather,fp32,0,,1,1,\"x\"\n", "path", "the other operations bytes"},
        {"1,h,reduce-scatter,fp32 grad,0,,1,1,\"x\"\n", "path", "a gradient's fit is an all-reduce's"},
        {"1,h,all-reduce,fp16,0,,1,1,\"x\"\n", "path", "fp32 grad or fp32 emb"},
        {"1,h,all-gather,fp32 emb,0,,1,1,\"x\"\n", "path", "a gradient's fit is an all-reduce's"},
        {"1,h,all-reduce,fp32,4096,64,1,1,\"x\"\n", "to_bytes", "must be above from_bytes"},
        {"1,h,all-reduce,fp32,0,-1,1,1,\"x\"\n", "to_bytes", "'-1'"},
        {"1,h,all-reduce,fp32,0,,1,1,\"x\"\n1,h,all-reduce,fp32,64,,1,1,\"y\"\n", "from_bytes", "overlaps"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&e, 0, sizeof e);
        CHECKF(parse_links(cat, bad[i].row, &e) == ST_DATA, "row %u accepted", i);
        CHECK_CONTAINS(e.msg, bad[i].col);
        CHECK_CONTAINS(e.msg, bad[i].what);
        CHECK_CONTAINS(e.msg, "links.csv");
        CHECK(catalog_gpu(cat, "h") && catalog_gpu(cat, "h")->nlink_fit == 0); /* nothing half-read */
    }
    free(cat);
}

/* What calibrate writes for a fitted range: its columns and how it was measured (the compute before each call too). */
static void test_link_row(void)
{
    Calibration *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    if (!c) return;
    c->reps = 5, c->ranks = 2, c->nsweep = 1, c->nrange = 1;
    c->sweep[0].op = OP_REDUCE_SCATTER, c->sweep[0].dtype = DT_BF16, c->sweep[0].n = 3;
    const uint64_t S[] = {64, 1024, 65536};
    for (int i = 0; i < 3; i++) c->sweep[0].pt[i].payload = S[i];
    c->range[0] = (CalRange){
        .fit = {OP_REDUCE_SCATTER, LINK_PATH_BF16, 1024, 0, 2.5e-6, 0.75e9}, .first = 1, .count = 2, .max_err = 0.031};
    char row[1024];
    Err e = {0};
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "1,host,reduce-scatter,bf16,1024,,2.5,0.75,\"");
    CHECK_CONTAINS(row, "MPI reduce-scatter (bf16) over 2 ranks, 1 KiB-64 KiB (2 sizes, medians of 5), largest error "
                        "3.1 %");
    /* with the compute before each call (cal_coll_gap: 3 ms of forward / 2), the source says so, 1.5 ms */
    c->coll_gap_s = 1.5e-3;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "MPI reduce-scatter (bf16) over 2 ranks, each call after 1.5 ms of compute, as a layer's "
                        "collectives follow its GEMMs, 1 KiB-64 KiB (2 sizes");
    /* the gradient sweep's range: path fp32 grad, and the source says the payload and receive buffer were flushed */
    c->sweep[0].op = OP_ALL_REDUCE, c->sweep[0].dtype = DT_FP32, c->sweep[0].grad = 1;
    c->range[0].fit.op = OP_ALL_REDUCE, c->range[0].fit.path = LINK_PATH_FP32_GRAD;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "1,host,all-reduce,fp32 grad,1024,,2.5,0.75,\"");
    CHECK_CONTAINS(row,
                   "MPI all-reduce (fp32) over 2 ranks, each call after 1.5 ms of compute, its payload and receive "
                   "buffer then flushed (a gradient), 1 KiB-64 KiB (2 sizes");
    /* the tied embedding's gradient sweep: path fp32 emb, the even rank a layer's backward (4.5 ms) late */
    c->sweep[0].grad = 2, c->p2p_bwd_s = 4.5e-3;
    c->range[0].fit.path = LINK_PATH_FP32_EMB;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "1,host,all-reduce,fp32 emb,1024,,2.5,0.75,\"");
    CHECK_CONTAINS(row, "MPI all-reduce (fp32) over 2 ranks, each call after 1.5 ms of compute, each even rank 4.5 ms "
                        "later (a last stage waiting), buffers flushed, 1 KiB-64 KiB (2 sizes");
    /* a long one (16 ranks, 13 sizes from 64 B to 7.1 MiB, medians of 64, 5-digit gaps, largest error 100.0 %) fits the
     * catalog's 255 characters */
    c->ranks = 16, c->reps = 64, c->coll_gap_s = 12.345e-3, c->p2p_bwd_s = 19.876e-3;
    c->sweep[0].n = 13, c->sweep[0].pt[0].payload = 64, c->sweep[0].pt[12].payload = 7434240;
    c->range[0].first = 0, c->range[0].count = 13, c->range[0].max_err = 1.0;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    const char *q = strchr(row, '"');
    CHECKF(q && strlen(q) - 2 <= 255, "%zu characters: %s", q ? strlen(q) - 2 : 0, row);
    /* send/recv's ranges cut at MPI's eager limit (4,040 B: [0, 4041) and [4041, no end)) say their protocol; a range
     * of both (a profile without the limit) says neither */
    c->ranks = 2, c->reps = 7, c->p2p_fwd_s = 1.9e-3, c->p2p_bwd_s = 3.8e-3, c->eager_limit = 4040;
    c->sweep[0].op = OP_SEND_RECV, c->sweep[0].dtype = DT_BF16, c->sweep[0].grad = 0, c->sweep[0].n = 13;
    c->range[0].fit.op = OP_SEND_RECV, c->range[0].fit.path = LINK_PATH_BYTES;
    c->range[0].fit.from = 0, c->range[0].fit.to = 4041, c->range[0].count = 4;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "1,host,send/recv,bytes,0,4041,");
    CHECK_CONTAINS(row, "(a send after 1.9 ms of compute, or 5.7, then 1.9 on), eager (<= 4040 B), 64 B-");
    c->range[0].fit.from = 4041, c->range[0].fit.to = 0;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "1,host,send/recv,bytes,4041,,");
    CHECK_CONTAINS(row, "then 1.9 on), rendezvous (> 4040 B), 64 B-");
    c->range[0].fit.from = 0;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK(!strstr(row, "eager") && !strstr(row, "rendezvous"));
    /* the longest: 16 ranks, 20 ms gaps, a 7-digit limit, 13 sizes to 7.1 MiB at 64 calls, 100.0 % */
    c->ranks = 16, c->reps = 64, c->p2p_fwd_s = c->p2p_bwd_s = 20e-3, c->eager_limit = 1048575;
    c->range[0].fit.from = 1048576, c->range[0].first = 0, c->range[0].count = 13, c->range[0].max_err = 1.0;
    CHECKF(cal_link_row(c, 0, "host", row, sizeof row, &e) == ST_OK, "%s", e.msg);
    CHECK_CONTAINS(row, "rendezvous (> 1048575 B), 64 B-7.1 MiB (13 sizes, medians of 64), largest error 100.0 %");
    q = strchr(row, '"');
    CHECKF(q && strlen(q) - 2 <= 255, "%zu characters: %s", q ? strlen(q) - 2 : 0, row);
    free(c);
}

int main(void)
{
    RUN(test_links_csv);
    RUN(test_link_row);
    return test_summary();
}
