/* tests/unit/test_model_tables.c — model_create makes the host's decoding tables
 * (exec/backend/elem.h) itself, before it touches the backend.
 *
 * The host rounds through them whatever the backend: FP8-LM's FP16 master is
 * initialized as fp16(w · scale) and read back through elem_fp16_table
 * (model_init.c, master16_piece). Only the CPU backend and the MPI
 * communicator made them, so fp8lm on the CUDA backend died of SIGSEGV there
 * on its first GPU run (an H200, 2026-12-04). This program never creates the
 * CPU backend: a stub whose every allocation fails stands in, so model_create
 * stops at its first allocation (the arena) — the tables must exist by then. */
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm.h"
#include "exec/backend/elem.h"
#include "exec/model/model.h"
#include "support/exec_fixtures.h"
#include "test.h"

static int allocs;

static Status stub_alloc(Backend *bk, uint64_t bytes, void **out, Err *e)
{
    (void)bk;
    *out = NULL;
    allocs++;
    return err_set(e, ST_NOMEM, "stub: no memory for %llu bytes", (unsigned long long)bytes);
}

static void stub_free(Backend *bk, void *p) { (void)bk, (void)p; }

static void test_tables_before_the_backend(void)
{
    CHECK(elem_fp16_table == NULL); /* nothing in this process has made them yet */
    Backend bk;
    memset(&bk, 0, sizeof bk);
    bk.name = "stub";
    bk.alloc = stub_alloc;
    bk.free = stub_free;
    ModelSpec s = fx_gpt();
    Recipe r = fx_recipe("fp8lm");
    Comm *c = NULL;
    Model *m = NULL;
    Err e = {0};
    CHECK_EQ_INT(comm_single_create(&c, &e), ST_OK);
    if (!c) return;
    CHECK_EQ_INT(fx_model(&s, &r, 2, 1, NULL, &bk, c, &m, &e), ST_NOMEM);
    CHECK(m == NULL);
    CHECK_EQ_INT(allocs, 1); /* it got as far as the arena */
    CHECK(elem_fp16_table != NULL);
    if (elem_fp16_table) { /* and they are the codec's: FP16 0x3C00 = 1, 0xC000 = -2, 0x7BFF = 65504 */
        CHECK(elem_fp16_table[0x3C00] == 1.0f);
        CHECK(elem_fp16_table[0xC000] == -2.0f);
        CHECK(elem_fp16_table[0x7BFF] == 65504.0f);
    }
    c->destroy(c);
}

int main(void)
{
    RUN(test_tables_before_the_backend);
    return test_summary();
}
