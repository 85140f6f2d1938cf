/* import/runlog.h — what a training run measured, read from its log: Megatron-LM / Megatron-Bridge text logs
 * (the "iteration N/ M | ... elapsed time per iteration (ms): T | throughput per GPU (TFLOP/s/GPU): F"
 * lines and the "[Rank R] (after K iterations) memory (MB) | allocated: ... | max allocated: ... |
 * reserved: ... | max reserved: ..." lines), torchtitan logs ("step: N  loss: ...  memory: X GiB(P%)
 * tps: T  tflops: F  mfu: U%"), and Megatron-LM's functional-test golden values (JSON, read with libyaml:
 * "iteration-time", "mem-allocated-bytes", "mem-max-allocated-bytes", values per step).
 * Pure parsing: no plan, no verdict (cli/cmd_check_log.c puts the plan beside it). */
#ifndef FP8PLAN_IMPORT_RUNLOG_H
#define FP8PLAN_IMPORT_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef enum { RUNLOG_MEGATRON = 0, RUNLOG_TORCHTITAN, RUNLOG_GOLDEN, RUNLOG_KIND_COUNT_ } RunLogKind;

const char *runlog_kind_name(RunLogKind k); /* "megatron log", "torchtitan log", "megatron golden values" */

/* One logged step; a figure the line does not give is NaN. */
typedef struct {
    uint32_t step;
    double step_s; /* wall time of the step (Megatron: the interval's mean per iteration) */
    double tflops; /* the framework's own TFLOP/s per GPU (its FLOP count, not the planner's) */
    double tps;    /* torchtitan: tokens per second per GPU */
    int line;
} RunLogStep;

typedef struct {
    RunLogKind kind;
    RunLogStep *steps;
    size_t n, cap;
    /* peaks over the log (bytes; NaN when the log has none): torch.cuda max_memory_allocated /
     * max_memory_reserved (Megatron's memory lines take the largest over ranks; torchtitan's memory is the
     * reserved peak; golden values give the allocated peak per step) */
    double max_alloc_bytes, max_reserved_bytes;
    int alloc_line, reserved_line;
} RunLog;

/* Read `path` (kind told from the content). ST_NOINPUT when it cannot be read, ST_DATA naming the file
 * and line of a malformed figure, or "no iteration lines" when it holds none. */
Status runlog_read(const char *path, RunLog *l, Err *e);
void runlog_free(RunLog *l);
/* The same on text already read: text[len] must be '\0'; the lines are cut in place. */
Status runlog_parse(const char *path, char *text, size_t len, RunLog *l, Err *e);

/* The steps after the first `warmup` logged steps with a step time (the warm-up, whose times include
 * compilation, allocator growth and NCCL set-up): their median step time in *median_s and their count
 * in *used. ST_DATA when none is left. */
Status runlog_median_step(const RunLog *l, uint32_t warmup, double *median_s, size_t *used, Err *e);

#endif
