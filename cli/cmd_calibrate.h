/* cli/cmd_calibrate.h — what `fp8plan calibrate` prints of a measurement (cli/cmd_calibrate_tables.c). */
#ifndef FP8PLAN_CLI_CMD_CALIBRATE_H
#define FP8PLAN_CLI_CMD_CALIBRATE_H

#include "exec/measure/calibrate.h"

/* The measured tables on stdout: the GEMMs per path (and a MoE model's grouped expert GEMMs with their cost per
 * group), the memory-bound kernels, the launch floor, the collectives' sweeps and fits. */
void cal_print_tables(const Calibration *c);

#endif
