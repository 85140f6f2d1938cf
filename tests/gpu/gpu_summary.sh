#!/bin/sh
# tests/gpu/gpu_summary.sh RESULTS_DIR [SECONDS] — the short report of a GPU check,
# from the CSVs gpu_check.sh left in RESULTS_DIR (any of them may be missing:
# a stage that failed or ran out of time is reported as such).
#
# MFU is taken against the GPU's dense BF16 and FP8 peaks from models/gpus.csv,
# matched by the device name nvidia-smi reports (H200, H100 SXM/PCIe, H800,
# L40S, B200); an unmatched device says "unknown" instead of a number.
set -u
D=$1
SECS=${2:-?}
root=$(cd "$(dirname "$0")/../.." && pwd)
env=$D/env.tmp
gpu=$(head -n 1 "$env" 2>/dev/null | cut -d, -f1)
case "$gpu" in
*H200*) row=h200 ;;
*H800*) row=h800 ;;
*H100*PCIe*) row=h100-pcie ;;
*H100*) row=h100-sxm ;;
*L40S*) row=l40s ;;
*B200*) row=b200 ;;
*) row="" ;;
esac
peaks=$([ -n "$row" ] && awk -F, -v r="$row" '$1 == r { print $5, $6 }' "$root/models/gpus.csv" 2>/dev/null)
PBF=${peaks% *}
PF8=${peaks#* }
[ -z "$peaks" ] && PBF="" && PF8=""

echo "GPU check: ${gpu:-unknown GPU}, $(date -u +%Y-%m-%dT%H:%MZ), ${SECS} s, results in $D"
sed -n '1,8p' "$env" 2>/dev/null | sed 's/^/  /'
if [ -n "$PBF" ]; then
    echo "  peaks (models/gpus.csv row $row): BF16 $PBF, FP8 $PF8 TFLOP/s dense"
else
    echo "  peaks: unknown for this device (no models/gpus.csv row matches its name): no MFU"
fi

echo
if [ "$(awk 'NR > 1' "$D/checks.csv" 2>/dev/null | wc -l)" -gt 0 ]; then
    awk -F, 'NR > 1 { n[$NF]++ } END { printf "checks (kernels vs CPU reference, tiny-model losses): %d passed, %d failed\n", n["pass"], n["FAIL"] }' "$D/checks.csv"
    awk -F, 'NR > 1 && $NF == "FAIL" && k++ < 12 { printf "  FAIL %s | %s | %s: max err %s, norm err %s, %s bad\n", $1, $2, $3, $6, $7, $11 }' "$D/checks.csv"
else
    echo "checks: no results (see log.txt)"
fi

echo
if [ -f "$D/gemm.csv" ]; then
    echo "GEMMs, median TFLOP/s (ours: cuBLASLt through the backend; torch: mm / _scaled_mm, same run)"
    awk -F, -v T="$D/torch.csv" '
        BEGIN {
            while ((getline line < T) > 0) {
                split(line, c, ",")
                if (c[1] == "gemm") tt[c[2] "|" (c[4] == "bf16" ? "bf16" : "fp8")] = c[8]
            }
        }
        NR == 1 { next }
        {
            key = $1 "." $2; p = ($6 == "bf16") ? "bf16" : "fp8"
            tf[key "|" p] = $12; ms[key "|" p] = $9
            if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        }
        END {
            printf "  %-18s %8s %8s %8s %8s %8s\n", "gemm", "bf16", "fp8", "fp8/bf16", "torch16", "torch8"
            for (i = 1; i <= n; i++) {
                k = order[i]; b = tf[k "|bf16"]; q = tf[k "|fp8"]
                r = (b > 0 && q > 0) ? sprintf("%.2fx", q / b) : "-"
                t16 = ((k "|bf16") in tt) ? tt[k "|bf16"] : "-"
                t8 = ((k "|fp8") in tt) ? tt[k "|fp8"] : "-"
                printf "  %-18s %8s %8s %8s %8s %8s\n", k, b, q, r, t16, t8
                if (k ~ /^gpt13b/) { sb += ms[k "|bf16"]; sq += ms[k "|fp8"] }
            }
            b = tf["cube8192.fprop|bf16"]; q = tf["cube8192.fprop|fp8"]
            if (b > 0 && q > 0) {
                verdict = (q / b >= 1.6) ? "met" : "NOT met"
                printf "  8192^3: FP8 %.2fx BF16 (target >= 1.6: %s)\n", q / b, verdict
            }
            if (sb > 0 && sq > 0) printf "  one GPT-13B layer, 12 GEMMs: BF16 %.2f ms, FP8 %.2f ms, %.2fx\n", sb, sq, sb / sq
        }' "$D/gemm.csv"
else
    echo "GEMMs: no results (see log.txt)"
fi

if [ -f "$D/membound.csv" ]; then
    ceil=$(awk -F, '$1 == "copy" { print $9 }' "$D/torch.csv" 2>/dev/null)
    echo
    echo "memory-bound kernels (GB/s over the fewest bytes; device copy ceiling ${ceil:-not measured} GB/s)"
    awk -F, 'NR > 1 { printf "  %-20s %-26s %8s ms %8s GB/s %6s TFLOP/s\n", $1, $2, $3, $7, $8 }' "$D/membound.csv"
fi

echo
if [ -s "$D/steps.csv" ]; then
    echo "training steps (GPT-13B layers, median of timed steps; MFU = model TFLOP/s over the peak)"
    awk -F, -v pb="$PBF" -v pf="$PF8" -v T="$D/torch.csv" '
        BEGIN {
            while ((getline line < T) > 0) { split(line, c, ","); if (c[1] == "stack") tm[c[2]] = c[5] }
        }
        NR == 1 { next }
        $6 == "" { printf "  %-14s failed (see log.txt)\n", $1; next }
        {
            ms[$1] = $6
            m16 = (pb > 0) ? sprintf("%.1f%%", 100 * $10 / pb) : "unknown"
            m8 = (pf > 0) ? sprintf("%.1f%%", 100 * $10 / pf) : "unknown"
            printf "  %-14s %8.2f ms %8.0f tok/s %7.1f TFLOP/s  MFU %s of BF16, %s of FP8\n", $1, $6, $9, $10, m16, m8
            printf "  %-14s device time: GEMM %.1f, other kernels %.1f, optimizer %.1f, comm %.1f ms; arena %.2f GiB, device +%.2f GiB\n", \
                "", $15, $16, $17, $18, $19 / 1073741824, ($22 - $20) / 1073741824
        }
        END {
            if (ms["megatron-bf16"] > 0 && ms["te-fp8"] > 0) {
                x = ms["megatron-bf16"] / ms["te-fp8"]
                verdict = (x >= 1.3) ? "met" : "NOT met"
                printf "  te-fp8 vs megatron-bf16: %.2fx (target >= 1.3: %s)\n", x, verdict
            }
            for (k in tm) if (tm[k] > 0 && ms["te-fp8"] > 0) {
                x = tm[k] / ms["te-fp8"]
                verdict = (k ~ /flash/) ? ((x >= 1.2) ? "target >= 1.2: met" : "target >= 1.2: NOT met") : "materialized attention, as ours"
                printf "  te-fp8 vs torch %s (BF16 AMP, %.2f ms): %.2fx (%s)\n", k, tm[k], x, verdict
            }
        }' "$D/steps.csv"
else
    echo "training steps: no gpu_train timings (fp8plan run measured them, or the stage failed)"
    awk -F, '$1 == "stack" { printf "  torch %s: %s ms, %s tok/s, %s TFLOP/s\n", $2, $5, $10, $8 }' "$D/torch.csv" 2>/dev/null
fi

# Last: fp8plan run's plan-versus-measured rows, one block per recipe (run.csv
# holds "# recipe R" and then that run's CSV: section,term,category,
# planned_bytes,measured_bytes,planned_s,measured_s,spread_pct,planned_value,
# measured_value,unit,rel_err_pct,check,verdict).
if [ -s "$D/run.csv" ]; then
    echo
    echo "fp8plan run: plan versus measured per term (run.csv; medians over the steps after the first)"
    awk -F, '
        function verdict(   v, i) { v = $14; for (i = 15; i <= NF; i++) v = v "," $i; gsub(/"/, "", v); return substr(v, 1, 48) }
        function bytes(b) {
            if (b == "") return "-"
            if (b >= 1073741824) return sprintf("%.2f GiB", b / 1073741824)
            if (b >= 1048576) return sprintf("%.1f MiB", b / 1048576)
            return sprintf("%.0f B", b)
        }
        function ms(s) { return s == "" ? "-" : sprintf("%.4g ms", 1e3 * s) }
        function val(v, u) { return v == "" ? "-" : (u == "tok/s" ? sprintf("%.0f %s", v, u) : sprintf("%.4g %s", v, u)) }
        function line(term, p, m, sp, rel, v) {
            printf "  %-14s %-22s %15s %15s %7s %8s  %s\n", rec, term, p, m, sp, rel, v
        }
        function done() { if (nex) line("exact terms", "", "", "", "", sprintf("%d of %d equal the plan byte for byte", okex, nex)) }
        BEGIN { printf "  %-14s %-22s %15s %15s %7s %8s  %s\n", "recipe", "term", "planned", "measured", "spread", "rel err", "verdict" }
        /^# recipe / { if (rec != "") done(); rec = substr($0, 10); nex = okex = 0; next }
        $1 == "section" { next }
        {
            sp = $8 == "" ? "" : sprintf("%.1f%%", $8); rel = $12 == "" ? "" : sprintf("%+.1f%%", $12)
            if ($13 == "exact") { nex++; okex += $14 == "ok" }
            if ($1 == "memory" && ($3 == "device" || $2 ~ /^total_/)) line($2, bytes($4), bytes($5), sp, rel, verdict())
            else if ($1 == "time") line($2, ms($6), ms($7), sp, rel, verdict())
            else if ($1 == "rate") line($2, val($9, $11), val($10, $11), sp, rel, verdict())
        }
        END { if (rec != "") done() }
    ' "$D/run.csv"
fi

# The plan's expected step for the steps stage (gpu_plan, made before the
# steps ran) beside the step fp8plan run measured for each recipe.
if [ -s "$D/expect.tmp" ]; then
    echo
    self=$(case "$gpu" in selftest*) echo 1 ;; *) echo 0 ;; esac)
    awk -F, -v R="$D/run.csv" -v self="$self" '
        BEGIN {
            while ((getline line < R) > 0) {
                if (line ~ /^# recipe /) { rec = substr(line, 10); continue }
                split(line, c, ",")
                if (c[1] == "time" && c[2] == "step" && c[7] != "") meas[rec] = 1e3 * c[7]
            }
        }
        NR == 1 { next }
        NR == 2 {
            printf "expected step (the plan for %s, %s layers of %s, %s tokens/step) beside the measured one%s\n", $2, $4, $3, $5,
                self ? " (selftest: measured is a small model on the CPU, not comparable)" : ""
            printf "  %-14s %12s %12s %8s\n", "recipe", "expected", "measured", "meas/exp"
        }
        {
            m = ($1 in meas) ? sprintf("%.2f ms", meas[$1]) : "-"
            r = ($1 in meas && $6 > 0 && !self) ? sprintf("%.2fx", meas[$1] / $6) : "-"
            printf "  %-14s %9.2f ms %12s %8s\n", $1, $6, m, r
        }' "$D/expect.tmp"
fi
