/* cli/cmd_report.h — the reports of `fp8plan report NAME`: seed (cli/cmd_plan_report.c) and html
 * (cli/cmd_report_html.c). */
#ifndef FP8PLAN_CLI_CMD_REPORT_H
#define FP8PLAN_CLI_CMD_REPORT_H

/* `fp8plan report html ...` with argv[0] = "html". Returns an exit code. */
int report_html(int argc, char **argv);

#endif
