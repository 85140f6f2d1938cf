# tests/cli/fp8_quant.sh — `quant-error`: the seed's outlier argument, measured,
# plus raw float32 input and bad input.
. "$FP8PLAN_ROOT/tests/lib.sh"

run quant-error --dist outliers --fp8 e4m3 --format csv
expect_rc "quant-error outliers exits 0" 0
col() { awk -F, -v g="$1" -v c="$2" '$2 == g {print $c}' "$TMP/out"; }
# columns: format,granularity,scale,scale_bytes,rel_rms_pct,snr_db,mean_rel_pct,flushed_pct,saturated_pct,max_abs_err
t=$(col tensor 7) b32=$(col 1x32 7) b128=$(col 1x128 7)
if awk -v t="$t" -v a="$b32" -v b="$b128" 'BEGIN { exit !(t > 1.05 * a && t > 1.05 * b) }'; then
    pass "per-tensor mean rel error ($t %) loses to 1x32 ($b32 %) and 1x128 ($b128 %)"
else
    fail "per-tensor mean rel error loses to 1x32 and 1x128" "tensor $t, 1x32 $b32, 1x128 $b128"
fi
t=$(col tensor 8) b32=$(col 1x32 8) b128=$(col 1x128 8)
if awk -v t="$t" -v a="$b32" -v b="$b128" 'BEGIN { exit !(t > 20 * a && t > 20 * b) }'; then
    pass "per-tensor flushes far more ($t %) than 1x32 ($b32 %) and 1x128 ($b128 %)"
else
    fail "per-tensor flushes far more" "tensor $t, 1x32 $b32, 1x128 $b128"
fi
expect_eq "no saturation under current scaling" "$(awk -F, 'NR > 1 {print $9}' "$TMP/out" | sort -u)" "0"

run quant-error --dist normal --shape 256x512 --seed 3 --format csv
expect_rc "normal exits 0" 0
expect_eq "10 rows: 2 formats x 5 granularities" "$(($(wc -l <"$TMP/out") - 1))" "10"
# RNE with m mantissa bits errs by at most 2^-(m+1) relative in the normal range, so rel RMS stays
# below 6.25 % (E4M3) and 12.5 % (E5M2); one mantissa bit fewer doubles the step, so E5M2 ~ 2x E4M3
e4=$(awk -F, '$1 == "e4m3" && $2 == "tensor" {print $5}' "$TMP/out")
e5=$(awk -F, '$1 == "e5m2" && $2 == "tensor" {print $5}' "$TMP/out")
if awk -v a="$e4" -v b="$e5" 'BEGIN { exit !(a < 6.25 && b < 12.5 && b / a > 1.8 && b / a < 2.2) }'; then
    pass "N(0,1): e4m3 ${e4} %, e5m2 ${e5} % (one bit fewer, twice the error)"
else
    fail "N(0,1) rel RMS within the mantissa bounds" "e4m3 $e4, e5m2 $e5"
fi

# raw float32 input: 2x2 of 1.0 (0x3f800000 little-endian) quantizes exactly
printf '\000\000\200\077\000\000\200\077\000\000\200\077\000\000\200\077' >"$TMP/ones.f32"
run quant-error --input "$TMP/ones.f32" --shape 2x2 --format csv
expect_rc "--input exits 0" 0
expect_eq "ones round-trip exactly" "$(awk -F, 'NR > 1 {print $5}' "$TMP/out" | sort -u)" "0"
run quant-error --input "$TMP/ones.f32" --shape 2x3
expect_rc "wrong-size input is bad data" 65
expect_err "the sizes are named" "16 bytes, but --shape needs 6 float32 values = 24 bytes"
run quant-error --input "$TMP/none.f32" --shape 2x2
expect_rc "missing input exits 66" 66
run quant-error --input "$TMP/ones.f32" --shape 2x2 --dist normal
expect_rc "--input with --dist is a usage error" 64
run quant-error --shape 0x4
expect_rc "zero dimension is a usage error" 64
run quant-error --dist cauchy
expect_rc "unknown --dist is a usage error" 64
run quant-error --seed -1
expect_rc "negative --seed is a usage error" 64
run quant-error --shape 65536x65536
expect_rc "a shape too large to hold is a usage error" 64

finish
