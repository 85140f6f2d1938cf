# tests/bench/time_survey.sh — issue 47's timing targets, measured end to end on this machine: a
# measurement, not a test (make time-survey; not in make test). docs/calibrate.md, "The time survey".
#
# usage: sh tests/bench/time_survey.sh [CSV]      (or make time-survey TIME_SURVEY_CSV=CSV)
#
# The GPT-2 demo G = --model gpt2-124m --layers 2 --hidden 256 --heads 4 --seq 64 --vocab 1024 --mbs 2:
#  1. five successive one-rank profiles, fp8plan calibrate $G --gbs 2 -o DIR --allow-noisy: each judged
#     figure's spread around the five's median (target +-10 %), and how many the judge refused;
#  2. REPS repetitions, interleaved (every configuration once per repetition), each run against a
#     profile measured just before it: one rank, fp8plan run $G --gbs 2 --recipe R --gpu host --steps
#     STEPS for R = megatron-bf16, te-fp8, te-fp8-current, fp8lm; mpirun -np 2 with --dp 2 (gbs 4),
#     --tp 2 (gbs 2), --pp 2 (gbs 4); mpirun -np 4 --tp 2 --dp 2 (gbs 4); a profile of the run's ranks
#     before each run. Rank 0's checked time rows: forward, backward,
#     optimizer, step (kind part) and every planned collective (kind collective). Error = measured /
#     planned - 1 per repetition; the row's verdict is its median error against the target: +-15 %,
#     +-25 % at 4 ranks.
# One table on stdout and, with CSV (argument or TIME_SURVEY_CSV), the same rows as CSV (written whole
# at the end). The 1-minute load average (/proc/loadavg) before and after each command is in its row
# (the range over the repetitions). Settings: FP8PLAN (the binary, default build/fp8plan), FP8PLAN_ROOT
# (the repository, default this script's), TIME_SURVEY_REPS (3), TIME_SURVEY_STEPS (12),
# TIME_SURVEY_TIMEOUT (seconds a command may take, 300), TIME_SURVEY_RANKS (the run groups by their ranks,
# "1 2 4"; without mpirun only 1), TIME_SURVEY_PRIO (1: each command in a session of its own whose scheduling
# group has nice -19 — Linux autogroups: a nice value counts only inside its group — so other users' processes
# yield the cores to it; not a quiet machine, they still share the caches and the memory bus; root or
# CAP_SYS_NICE; default 0), TIME_SURVEY_KEEP (an existing directory: every command's output kept there as
# NNN.log, its command line first, and each run's CSV as NNN.csv). Exit status 0 when every command ran (targets
# met or not), 70 when one failed or timed out (its row says which), 64 bad settings, 66 no catalog,
# 69 no fp8plan binary, 73 the CSV cannot be created.
set -u
ROOT=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${FP8PLAN:-$ROOT/build/fp8plan}
CSV=${1:-${TIME_SURVEY_CSV:-}}
REPS=${TIME_SURVEY_REPS:-3}
STEPS=${TIME_SURVEY_STEPS:-12}
TMO=${TIME_SURVEY_TIMEOUT:-300}
RANKS=${TIME_SURVEY_RANKS:-1 2 4}
G="--model gpt2-124m --layers 2 --hidden 256 --heads 4 --seq 64 --vocab 1024 --mbs 2"

die() {
    echo "time_survey: $2" >&2
    exit "$1"
}
for k in $RANKS; do case $k in 1 | 2 | 4) ;; *) die 64 "TIME_SURVEY_RANKS=$RANKS: give 1, 2 and/or 4" ;; esac; done
has() { case " $RANKS " in *" $1 "*) return 0 ;; esac; return 1; }
for v in "TIME_SURVEY_REPS=$REPS" "TIME_SURVEY_STEPS=$STEPS" "TIME_SURVEY_TIMEOUT=$TMO"; do
    case ${v#*=} in '' | *[!0-9]* | 0*) die 64 "$v: not a whole number above 0" ;; esac
done
[ -x "$BIN" ] || die 69 "FP8PLAN=$BIN: no fp8plan binary there (make, or set FP8PLAN)"
[ -f "$ROOT/models/models.csv" ] || die 66 "FP8PLAN_ROOT=$ROOT: no models/models.csv (the catalog) there"
KEEP=${TIME_SURVEY_KEEP:-}
if [ -n "$KEEP" ] && { [ ! -d "$KEEP" ] || [ ! -w "$KEEP" ]; }; then
    die 73 "TIME_SURVEY_KEEP=$KEEP: not a writable directory"
fi
if [ -n "$CSV" ]; then
    d=$(dirname "$CSV")
    [ -d "$d" ] && [ -w "$d" ] || die 73 "CSV $CSV: its directory $d does not exist or is not writable"
    [ ! -d "$CSV" ] || die 73 "CSV $CSV: is a directory"
fi
export FP8PLAN_CATALOG="$ROOT/models"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mktemp -d "${TMPDIR:-/tmp}/time_survey.XXXXXX") || die 73 "cannot create a work directory"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
: >"$W/raw"  # section|config|row|kind|bound|rep|planned|measured|l0|l1 (one line per measured value)
: >"$W/fail" # commands that failed
MPI=$(command -v mpirun || true)
T0=$(date +%s)

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo -; }
log() { printf '%s  load %s  %s\n' "$(date +%H:%M:%S)" "$(load)" "$*" >&2; }

# cmd NP LOGFILE ARGS...: fp8plan ARGS (under mpirun -np NP when NP > 1), bounded by TMO; its status. With
# TIME_SURVEY_PRIO=1 in a session of its own whose scheduling group has nice -19 (Linux autogroups: a nice value
# counts only inside its group), so other users' processes yield the cores to it — not a quiet machine (they
# still share the caches and the memory bus); needs root or CAP_SYS_NICE.
PRIO=${TIME_SURVEY_PRIO:-0}
case $PRIO in 0 | 1) ;; *) die 64 "TIME_SURVEY_PRIO=$PRIO: give 0 or 1" ;; esac
printf '#!/bin/sh\necho -19 >/proc/self/autogroup || exit 77\nexec "$@"\n' >"$W/prio" && chmod +x "$W/prio"
SEQ=0
cmd() {
    np=$1 out=$2
    shift 2
    SEQ=$((SEQ + 1))
    if [ "$np" -gt 1 ]; then set -- "$MPI" --oversubscribe -np "$np" "$BIN" "$@"; else set -- "$BIN" "$@"; fi
    [ "$PRIO" = 1 ] && set -- setsid -w "$W/prio" "$@"
    echo "$*" >"$out"
    timeout -k 5 "$TMO" "$@" >>"$out" 2>&1
    r=$?
    [ -z "$KEEP" ] || cp "$out" "$KEEP/$(printf %03d "$SEQ").log"
    return $r
}

# profile NP DIR TAG: a profile of NP ranks into DIR (written NOISY when the judge refuses it)
profile() {
    log "calibrate, $1 rank(s) ($3)"
    cmd "$1" "$W/cal.out" calibrate $G --gbs $((2 * $1)) -o "$2" --allow-noisy
    r=$?
    [ "$r" -eq 0 ] || echo "calibrate -np $1 ($3): exit $r: $(tail -c 300 "$W/cal.out" | tr '\n' ' ')" >>"$W/fail"
    return $r
}

# ---- 1. five successive one-rank profiles -------------------------------------------------------
for i in 1 2 3 4 5; do
    l0=$(load)
    profile 1 "$W/p$i" "successive $i/5"
    r=$?
    l1=$(load)
    [ "$r" -eq 0 ] || continue
    # the judge's table: "  NAME UNIT PROFILE IQR% AGAIN DRIFT% VERDICT"
    awk -v i="$i" -v l0="$l0" -v l1="$l1" '
        /^  figure +unit/ { on = 1; next }
        on && /^  load average/ { on = 0 }
        on && NF >= 7 && $(NF-3) ~ /%$/ {
            name = $1; for (k = 2; k <= NF - 6; k++) name = name " " $k
            printf "profiles|successive|%s (%s)|figure|10|%d|-|%s|%s|%s\n", name, $(NF-5), i, $(NF-4), l0, l1 }
        ' "$W/cal.out" >>"$W/raw"
    refused=0
    if grep -q 'NOISY PROFILE' "$W/cal.out"; then
        refused=1
        log "  refused: $(sed -n 's/.*NOISY PROFILE (past its bounds: \([^;]*\).*/\1/p' "$W/cal.out" | head -n 1)"
    fi
    echo "profiles|successive|refused by the judge (of 5)|count|0|$i|-|$refused|$l0|$l1" >>"$W/raw"
done

# run_rows NP SECTION CONFIG BOUND REP L0 L1 RUNCSV: rank 0's checked time rows of a run's -o CSV
run_rows() {
    awk -F, -v np="$1" -v sec="$2" -v cfg="$3" -v bound="$4" -v rep="$5" -v l0="$6" -v l1="$7" '
        NR == 1 { o = ($1 == "rank"); next }
        o && $1 != 0 { next }
        $(1+o) == "time" && $(13+o) ~ /^\+-/ && $(6+o) > 0 {
            t = $(2+o); kind = "part"
            if (t ~ /\.time$/) { sub(/\.time$/, "", t); kind = "collective" }
            printf "%s|%s|%s|%s|%s|%d|%s|%s|%s|%s\n", sec, cfg, t, kind, bound, rep, $(6+o), $(7+o), l0, l1 }
        ' "$8" >>"$W/raw"
}

# one NP SECTION CONFIG BOUND REP CATALOG GBS FLAGS...: one run against CATALOG's host profile
one() {
    np=$1 sec=$2 cfg=$3 bound=$4 rep=$5 cat=$6 gbs=$7
    shift 7
    log "run $cfg (repetition $rep/$REPS)"
    l0=$(load)
    cmd "$np" "$W/run.out" run $G --gbs "$gbs" "$@" --catalog "$cat" --gpu host --steps "$STEPS" -o "$W/run.csv"
    r=$?
    l1=$(load)
    # 0: every check within its bound; 1: a verdict OUTSIDE (a measurement here, not a failure)
    if [ "$r" -gt 1 ] || [ ! -s "$W/run.csv" ]; then
        echo "$cfg, repetition $rep: exit $r: $(tail -c 300 "$W/run.out" | tr '\n' ' ')" >>"$W/fail"
        return
    fi
    run_rows "$np" "$sec" "$cfg" "$bound" "$rep" "$l0" "$l1" "$W/run.csv"
    [ -z "$KEEP" ] || cp "$W/run.csv" "$KEEP/$(printf %03d "$SEQ").csv"
    rm -f "$W/run.csv"
}

# ---- 2. the runs, REPS repetitions interleaved ---------------------------------------------------
rep=1
while [ "$rep" -le "$REPS" ]; do
    has 1 && for recipe in megatron-bf16 te-fp8 te-fp8-current fp8lm; do
        profile 1 "$W/c1" "before $recipe, repetition $rep" &&
            one 1 "one rank" "$recipe" 15 "$rep" "$W/c1" 2 --recipe "$recipe"
        rm -rf "$W/c1"
    done
    if [ -n "$MPI" ] && has 2; then
        for lay in "DP 2:4:--dp" "TP 2:2:--tp" "PP 2:4:--pp"; do
            cfg=${lay%%:*} gbs=${lay#*:}
            flag=${gbs#*:} gbs=${gbs%%:*}
            profile 2 "$W/c2" "before $cfg, repetition $rep" &&
                one 2 "mpirun -np 2" "$cfg" 15 "$rep" "$W/c2" "$gbs" --recipe megatron-bf16 "$flag" 2
            rm -rf "$W/c2"
        done
    fi
    if [ -n "$MPI" ] && has 4; then
        profile 4 "$W/c4" "before TP 2 x DP 2, repetition $rep" &&
            one 4 "mpirun -np 4" "TP 2 x DP 2" 25 "$rep" "$W/c4" 4 --recipe megatron-bf16 --tp 2 --dp 2
        rm -rf "$W/c4"
    fi
    rep=$((rep + 1))
done

# ---- the table ------------------------------------------------------------------------------------
# per (section, config, row): figures — the five's median, each one's deviation from it, how many
# within the bound; runs — median planned and measured seconds, the error per repetition (median,
# range), how many within; a count row — the sum
# rows in the order they were first measured, a row's values by repetition
awk -F'|' '{ k = $1 "|" $2 "|" $3; if (!(k in o)) o[k] = ++n; print o[k] "|" $0 }' "$W/raw" |
    sort -t'|' -k1,1n -k7,7n | cut -d'|' -f2- | awk -F'|' '
    function flush(   i, j, t, a, b, med, pm, mm, em, lo, hi, within, verdict, n2) {
        if (!n) return
        if (kind == "count") {
            s = 0; for (i = 1; i <= n; i++) s += m[i]
            printf "%s|%s|%s|%s|-|-|%d|-|-|-|-|-|%s|%s\n", sec, cfg, row, kind, s, l0r, l1r
            n = 0; return }
        # medians by sorting copies
        for (i = 1; i <= n; i++) { a[i] = m[i]; b[i] = p[i] }
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
        for (i = 2; i <= n; i++) for (j = i; j > 1 && b[j-1] > b[j]; j--) { t = b[j]; b[j] = b[j-1]; b[j-1] = t }
        mm = n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
        pm = n % 2 ? b[(n+1)/2] : (b[n/2] + b[n/2+1]) / 2
        within = 0; n2 = 0
        for (i = 1; i <= n; i++) {
            e[i] = kind == "figure" ? (mm > 0 ? 100 * (m[i] / mm - 1) : 0) : 100 * (m[i] / p[i] - 1)
            if (e[i] <= bound && e[i] >= -bound) within++
        }
        for (i = 2; i <= n; i++) for (j = i; j > 1 && e[j-1] > e[j]; j--) { t = e[j]; e[j] = e[j-1]; e[j-1] = t }
        lo = e[1]; hi = e[n]
        em = n % 2 ? e[(n+1)/2] : (e[n/2] + e[n/2+1]) / 2
        if (kind == "figure") verdict = within == n ? "met" : "missed"
        else verdict = (em <= bound && em >= -bound) ? "ok" : "OUTSIDE"
        printf "%s|%s|%s|%s|%s|%s|%.6g|%s|%+.1f|%+.1f|%d/%d|%s|%s|%s\n", sec, cfg, row, kind, bound,
            kind == "figure" ? "-" : sprintf("%.6g", pm), mm, kind == "figure" ? "-" : sprintf("%+.1f", em), lo, hi,
            within, n, verdict, l0r, l1r
        n = 0
    }
    function range(lo, hi) { return lo == hi ? lo : lo "-" hi }
    { key = $1 "|" $2 "|" $3 }
    key != last { flush(); last = key; sec = $1; cfg = $2; row = $3; kind = $4; bound = $5
                  l0lo = l0hi = $9; l1lo = l1hi = $10 }
    { n++; p[n] = $7; m[n] = $8
      if ($9 + 0 < l0lo + 0) l0lo = $9; if ($9 + 0 > l0hi + 0) l0hi = $9
      if ($10 + 0 < l1lo + 0) l1lo = $10; if ($10 + 0 > l1hi + 0) l1hi = $10
      l0r = range(l0lo, l0hi); l1r = range(l1lo, l1hi) }
    END { flush() }' >"$W/rows"

# section|config|row|kind|bound|planned (median)|measured (median)|err median|err lo|err hi|within|verdict|l0|l1
{
    printf '%-13s %-15s %-26s %-10s %5s %11s %11s %8s %17s %6s %-7s %-11s %-11s\n' section config row kind bound \
        "planned s" "measured" "err med" "err range" within verdict "load before" "load after"
    awk -F'|' '{
        b = $5 == "-" ? "-" : "+-" $5 "%"
        rg = $9 == "-" ? "-" : $9 "..." $10 "%"
        printf "%-13s %-15s %-26s %-10s %5s %11s %11s %8s %17s %6s %-7s %-11s %-11s\n", $1, $2, $3, $4, b, $6, $7,
            $8 == "-" ? "-" : $8 "%", rg, $11, $12, $13, $14 }' "$W/rows"
    echo "repetitions $REPS, $STEPS steps a run; the figures: the profile's value (median of the five) and each one's"
    echo "deviation from it; the runs: rank 0's medians over the repetitions and the error of each (measured / planned - 1)"
    [ -n "$MPI" ] || echo "mpirun not found: the 2- and 4-rank runs were not measured (install openmpi-bin)"
    [ "$PRIO" = 0 ] || echo "TIME_SURVEY_PRIO=1: every command ran at autogroup nice -19 (the other processes yielded the cores; the caches and the memory bus were still shared)"
    echo "took $(($(date +%s) - T0)) s"
} | tee "$W/table"
if [ -s "$W/fail" ]; then
    echo "commands that failed (not measured):"
    sed 's/^/  /' "$W/fail"
fi
if [ -n "$CSV" ]; then
    {
        echo "section,config,row,kind,bound_pct,planned_s,measured,err_median_pct,err_min_pct,err_max_pct,within,verdict,load_before,load_after"
        tr '|' , <"$W/rows"
    } >"$W/csv" && mv "$W/csv" "$CSV" || die 73 "CSV $CSV: cannot be written"
    echo "CSV written to $CSV"
fi
[ -s "$W/fail" ] && exit 70
exit 0
