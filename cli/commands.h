/* cli/commands.h — the subcommand table: X(name, function, one-line summary).
 * One line per subcommand, in the order `fp8plan --help` lists them. Each
 * function is defined in cli/cmd_*.c. */
#ifndef FP8PLAN_CLI_COMMANDS_H
#define FP8PLAN_CLI_COMMANDS_H

#define FP8PLAN_COMMANDS(X) X("version", cmd_version, "print the version")

#endif
