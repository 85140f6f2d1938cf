/* exec/cpu/cpu_strided.c — the CPU reference of strided_copy (StridedCopyDesc in exec/backend/backend_desc.h):
 * latent attention's q/k/v assembly from its projections' outputs and the copy of kv_down's latent
 * columns. Rows are independent (tasks of COPY_ROWS rows); a summed element adds its blocks in FP32 in
 * block order and is rounded once, so the result never depends on the thread count. */
#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"

enum { COPY_ROWS = 64 }; /* rows per task */

static void copy_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    (void)worker;
    const StridedCopyDesc *d = ctx;
    for (uint64_t i = r0; i < r1; i++) {
        const uint64_t s0 = i * d->src_ld, d0 = i * d->dst_ld;
        if (d->dst_step) { /* block b to its own place */
            for (uint64_t b = 0; b < d->reps; b++)
                for (uint64_t j = 0; j < d->cols; j++) {
                    uint64_t o = d0 + b * d->dst_step + j;
                    float v = elem_load(d->src, d->dtype, s0 + b * d->src_step + j);
                    elem_store(d->dst, d->dtype, o, d->accumulate ? elem_load(d->dst, d->dtype, o) + v : v);
                }
            continue;
        }
        for (uint64_t j = 0; j < d->cols; j++) { /* every block summed into one */
            float acc = d->accumulate ? elem_load(d->dst, d->dtype, d0 + j) : 0.0f;
            for (uint64_t b = 0; b < d->reps; b++) acc += elem_load(d->src, d->dtype, s0 + b * d->src_step + j);
            elem_store(d->dst, d->dtype, d0 + j, acc);
        }
    }
}

Status cpu_strided_copy(Backend *bk, const StridedCopyDesc *d, Err *e)
{
    (void)bk, (void)e;
    par_chunks(d->rows, COPY_ROWS, copy_rows, (void *)d);
    return ST_OK;
}
