/* check/fidelity_input.h — a published measured run (catalog/measured.h, models/measured.csv) as the
 * planner's input. */
#ifndef FP8PLAN_CHECK_FIDELITY_INPUT_H
#define FP8PLAN_CHECK_FIDELITY_INPUT_H

#include "catalog/measured.h"
#include "planner/plan.h"

/* A PlanInput for the run: its stack's row, model, GPU, recipe and layout. */
void measured_plan_input(const MeasuredRun *r, PlanInput *in);

#endif
