/* catalog/routing.h — a run's measured routing (`fp8plan run --routing-log FILE`) read back for the planner.
 *
 * The file is CSV with the header step,layer,rank,expert,token_copies: per step taken, per MoE layer, per
 * rank and expert, the token copies that rank routed to that expert. Every (step, layer, rank, expert) of
 * the steps, layers, ranks 0 .. R - 1 and experts 0 .. E - 1 it names must appear exactly once; numbers are
 * decimal (util/num.h). Summed over the steps and layers it is the planner's MoeRouting (plan_routed.h) with
 * calls = steps x layers x the plan's micro-batches. Errors name the file, row and column and quote the
 * value (ST_DATA). */
#ifndef FP8PLAN_CATALOG_ROUTING_H
#define FP8PLAN_CATALOG_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

enum { ROUTING_MAX_RANKS = 4096, ROUTING_MAX_EXPERTS = 4096, ROUTING_MAX_LAYERS = 1024 };

typedef struct {
    uint32_t steps, layers, ranks, experts;
    uint64_t *rows;       /* (ranks, experts): token copies summed over the steps and layers */
    uint64_t *layer_rows; /* (layers, ranks, experts): summed over the steps alone (pipeline stages: a stage's
                             ranks route its own layers) */
    uint32_t *layer_ids;  /* (layers) the log's layer indices, ascending */
} RoutingLog;

/* Parse text (fname names it in errors) into *out (routing_log_free it, also after an error). */
Status routing_log_parse(const char *text, size_t len, const char *fname, RoutingLog *out, Err *e);
/* Read and parse the file at path. */
Status routing_log_load(const char *path, RoutingLog *out, Err *e);
void routing_log_free(RoutingLog *r);

#endif
