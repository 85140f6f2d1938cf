/* cli/commands.h — the subcommand table: X(name, function, one-line summary).
 * One line per subcommand, in the order `fp8plan --help` lists them. Each
 * function is defined in cli/cmd_*.c. */
#ifndef FP8PLAN_CLI_COMMANDS_H
#define FP8PLAN_CLI_COMMANDS_H

#define FP8PLAN_COMMANDS(X)                                                                        \
    X("version", cmd_version, "print the version")                                                 \
    X("formats", cmd_formats, "FP8 Formats Table 1 and Table 9 ranges, computed from the codecs")  \
    X("cast", cmd_cast, "numbers on stdin -> FP8 / E8M0 codes (CSV)")                              \
    X("scales", cmd_scales, "Table 1b: payload + scale bytes per scale granularity")               \
    X("scaling", cmd_scaling, "delayed scaling step by step: scales, flush and saturation bounds") \
    X("quant-error", cmd_quant_error, "round-trip error per FP8 format and scale granularity")

#endif
