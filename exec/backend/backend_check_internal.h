/* exec/backend/backend_check_internal.h — what the descriptor checks (backend_check.c, backend_check_moe.c,
 * backend_check_optim.c) share: their dtype test and their refusal. */
#ifndef FP8PLAN_EXEC_BACKEND_CHECK_INTERNAL_H
#define FP8PLAN_EXEC_BACKEND_CHECK_INTERNAL_H

#include "fp8/dtype.h"
#include "util/status.h"

/* A float dtype a layer computes in: FP32, FP16 or BF16. */
static inline int is_float(Dtype t) { return t == DT_FP32 || t == DT_FP16 || t == DT_BF16; }

/* ST_OK when ok, else ST_USAGE with "op: what". */
static inline Status need(int ok, Err *e, const char *op, const char *what)
{
    return ok ? ST_OK : err_set(e, ST_USAGE, "%s: %s", op, what);
}

#endif
