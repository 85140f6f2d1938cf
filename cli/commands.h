/* cli/commands.h — the subcommand table: X(name, function, one-line summary).
 * One line per subcommand, in the order `fp8plan --help` lists them. Each
 * function is defined in cli/cmd_*.c. */
#ifndef FP8PLAN_CLI_COMMANDS_H
#define FP8PLAN_CLI_COMMANDS_H

/* Not aligned by clang-format: one space before each backslash, so adding a subcommand is a
 * one-line diff (aligned backslashes move every line when a longer one arrives). */
// clang-format off
#define FP8PLAN_COMMANDS(X) \
    X("plan", cmd_plan, "per-GPU memory, collectives and step time of one training run") \
    X("compare", cmd_compare, "several recipes side by side with their deltas") \
    X("tui", cmd_tui, "interactive what-if screens: plan, compare, Table 1b, delayed scaling, formats") \
    X("sweep", cmd_sweep, "every layout and recipe for N GPUs, ranked by predicted throughput") \
    X("check-log", cmd_check_log, "a training log (Megatron, torchtitan, golden values) beside the plan of its --from config") \
    X("run", cmd_run, "train a GPT model with a recipe; measured versus planned memory, term by term") \
    X("calibrate", cmd_calibrate, "measure this machine (GEMM, memory, launch, MPI link) as a catalog device row") \
    X("bytes-per-param", cmd_bytes_per_param, "bytes per parameter of each training state (Table 1a)") \
    X("report", cmd_report, "the seed's tables (1a, 1b, 1c, FP8-LM Table 5) as CSV or HTML; report html: a what-if page") \
    X("models", cmd_models, "list the models in models.csv") \
    X("gpus", cmd_gpus, "list the GPUs in gpus.csv") \
    X("recipes", cmd_recipes, "list the precision recipes in recipes.csv") \
    X("stacks", cmd_stacks, "list the training software stacks in stacks.csv") \
    X("formats", cmd_formats, "FP8 Formats Table 1 and Table 9 ranges, computed from the codecs") \
    X("cast", cmd_cast, "numbers on stdin -> FP8 / E8M0 codes (CSV)") \
    X("scales", cmd_scales, "Table 1b: payload + scale bytes per scale granularity") \
    X("scaling", cmd_scaling, "delayed scaling step by step: scales, flush and saturation bounds") \
    X("quant-error", cmd_quant_error, "round-trip error per FP8 format and scale granularity") \
    X("version", cmd_version, "print the version")
// clang-format on

#endif
