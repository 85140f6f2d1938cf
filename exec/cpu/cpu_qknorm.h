/* exec/cpu/cpu_qknorm.h — the q/k norms of the CPU rope operation (cpu_qknorm.c):
 * the forward before the rotation, the backward after the inverse rotation
 * (RopeDesc's qnorm_w ... in exec/backend/backend_desc.h). Internal to exec/cpu/. */
#ifndef FP8PLAN_EXEC_CPU_CPU_QKNORM_H
#define FP8PLAN_EXEC_CPU_CPU_QKNORM_H

#include "exec/backend/backend.h"

Status cpu_qknorm_fwd(Backend *bk, const RopeDesc *d, Err *e);
Status cpu_qknorm_bwd(Backend *bk, const RopeDesc *d, Err *e);

#endif
