#!/bin/sh
# tests/bench/dp_bucket_ab.sh — a measurement, not a test: two fp8plan binaries (A, B) run the same DP 2 step
# against one 2-rank host profile, REPS repetitions interleaved A B A B..., and rank 0's DP gradient collectives
# (dp_grad_allreduce, or with AB_FLAGS="--zero 1" the distributed optimizer's dp_grad_reducescatter and
# dp_param_allgather: calls, planned and measured seconds a step) and step rows printed with the load before and
# after each run. docs/calibrate.md, "The DP gradient all-reduce in buckets" and "The distributed optimizer's
# collectives in buckets", used it to compare one call per tensor (A) with one call per bucket (B).
# Usage: dp_bucket_ab.sh FP8PLAN_A FP8PLAN_B [RECIPE] — settings: FP8PLAN_ROOT (the repository, default this
# script's), AB_REPS (3), AB_STEPS (12), AB_PRIO (1: each command at autogroup nice -19 in a session of its own,
# as TIME_SURVEY_PRIO in time_survey.sh; root or CAP_SYS_NICE), AB_MODEL (the model flags, default the time
# survey's GPT-2 demo), AB_FLAGS (more run flags, default none). The profile is made by binary B.
# Exit status 0, 64 bad usage, 69 no binary or no mpirun, 70 a command failed.
set -u
[ $# -ge 2 ] || { echo "usage: dp_bucket_ab.sh FP8PLAN_A FP8PLAN_B [RECIPE]" >&2; exit 64; }
A=$1 B=$2 RECIPE=${3:-megatron-bf16}
for b in "$A" "$B"; do [ -x "$b" ] || { echo "dp_bucket_ab: $b: no fp8plan binary there" >&2; exit 69; }; done
MPI=$(command -v mpirun) || { echo "dp_bucket_ab: mpirun not found (install openmpi-bin)" >&2; exit 69; }
ROOT=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
REPS=${AB_REPS:-3} STEPS=${AB_STEPS:-12} PRIO=${AB_PRIO:-0}
G=${AB_MODEL:-"--model gpt2-124m --layers 2 --hidden 256 --heads 4 --seq 64 --vocab 1024 --mbs 2"}
FLAGS=${AB_FLAGS:-}
export FP8PLAN_CATALOG="$ROOT/models" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d "${TMPDIR:-/tmp}/dp_bucket_ab.XXXXXX") || exit 73
trap 'rm -rf "$W"' EXIT
printf '#!/bin/sh\necho -19 >/proc/self/autogroup || exit 77\nexec "$@"\n' >"$W/prio" && chmod +x "$W/prio"
load() { cut -d' ' -f1 /proc/loadavg; }
run2() { # BIN ARGS...
    bin=$1
    shift
    set -- "$MPI" --oversubscribe -np 2 "$bin" "$@"
    [ "$PRIO" = 1 ] && set -- setsid -w "$W/prio" "$@"
    timeout -k 5 300 "$@" >"$W/out" 2>&1
}
run2 "$B" calibrate $G --gbs 4 -o "$W/cat" --allow-noisy || { tail -5 "$W/out" >&2; exit 70; }
echo "binary,rep,load_before,load_after,row,planned,measured"
rep=1
while [ "$rep" -le "$REPS" ]; do
    for side in A B; do
        bin=$A
        [ "$side" = B ] && bin=$B
        l0=$(load)
        # shellcheck disable=SC2086 # FLAGS: words
        run2 "$bin" run $G --gbs 4 --dp 2 --recipe "$RECIPE" --catalog "$W/cat" --gpu host --steps "$STEPS" $FLAGS \
            -o "$W/run.csv"
        r=$?
        l1=$(load)
        [ "$r" -le 1 ] && [ -s "$W/run.csv" ] || { tail -5 "$W/out" >&2; exit 70; }
        awk -F, -v s="$side" -v k="$rep" -v l0="$l0" -v l1="$l1" '
            NR == 1 { o = ($1 == "rank"); next }
            o && $1 != 0 { next }
            $(2+o) ~ /^dp_(grad_allreduce|grad_reducescatter|param_allgather)\.calls$/ {
                printf "%s,%d,%s,%s,%s,%s,%s\n", s, k, l0, l1, $(2+o), $(9+o), $(10+o) }
            $(2+o) ~ /^dp_(grad_allreduce|grad_reducescatter|param_allgather)\.time$/ || $(2+o) == "step" ||
            $(2+o) == "communication" {
                printf "%s,%d,%s,%s,%s,%s,%s\n", s, k, l0, l1, $(2+o), $(6+o), $(7+o) }
            ' "$W/run.csv"
        rm -f "$W/run.csv"
    done
    rep=$((rep + 1))
done
