# tests/cli/hostile_qerror.sh — quant-error on hostile --input values: NaN and Inf inputs are left out of
# every figure and of the scales (the finite values get the figures they get alone; percentages are of the
# finite inputs), and a finite input whose round trip is NaN or Inf (an E8M0 block scale whose dequantized
# value passes FLT_MAX) counts as an infinite error: the row says how many, the figures are n/a, a warning.
. "$FP8PLAN_ROOT/tests/lib.sh"

export LC_ALL=C
f32() { # file values...: raw little-endian float32
    local out=$1
    shift
    python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<%df" % (len(sys.argv) - 2), *map(float, sys.argv[2:])))' "$out" "$@"
}
row() { awk -F, -v g="$1" -v c="$2" '$2 == g {print $c}' "$TMP/out"; } # granularity column (1-based)

# --- worked by hand: [nan, 448, inf, 2^-20] x 32 as 4x32, E4M3, current scaling.
# The finite values are 448 and 2^-20 = 9.5367431640625e-07 (64 of each). Per tensor: amax 448 (the Inf
# is not a value), scale = 448 / 448 = 1; 448 is E4M3's max, exact; 2^-20 is below half the least
# subnormal (2^-10) and flushes to 0. So over the 128 finite inputs: flushed 64/128 = 50 %, saturated 0 %,
# mean rel (0 + 1) / 2 = 50 %, max abs err 2^-20, rel RMS sqrt(2^-40 / (448^2 + 2^-40)) = 2^-20 / 448
# = 2.1287e-9 = 2.1287e-7 %. (With the Inf in the amax the scale was 0: every value flushed, and the
# percentages were over 128 + 64 NaN/Inf = 25 % saturated.)
vals=""
for i in $(seq 32); do vals="$vals nan 448 inf 9.5367431640625e-07"; done
f32 "$TMP/qb.bin" $vals
vals=""
for i in $(seq 32); do vals="$vals 0 448 0 9.5367431640625e-07"; done
f32 "$TMP/q0.bin" $vals
run quant-error --shape 4x32 --fp8 e4m3 --format csv --input "$TMP/qb.bin"
expect_rc "NaN/Inf inputs: exit 0" 0
expect_err "NaN/Inf inputs are counted and warned about" "holds 32 NaN and 32 Inf values of 128; the figures are over the finite values only"
expect_eq "per tensor: flushed 50 % of the finite inputs" "$(row tensor 8)" 50
expect_eq "per tensor: saturated 0 % (the Inf is not in the amax)" "$(row tensor 9)" 0
expect_eq "per tensor: mean rel 50 %" "$(row tensor 7)" 50
expect_eq "per tensor: max abs err 2^-20" "$(row tensor 10)" 9.53674316406e-07
expect_eq "per tensor: rel RMS 2^-20/448 = 2.1287e-7 %" "$(row tensor 5 | cut -c1-6)" 2.1287
expect_eq "1x32 E8M0: amax 448, scale 2^0: the same 50 % flushed" "$(row 1x32 8)" 50
expect_eq "no finite input came back NaN/Inf" "$(awk -F, 'NR > 1 {print $11}' "$TMP/out" | sort -u)" 0
# the finite values alone (NaN/Inf as 0, which neither flushes nor saturates) give the same figures
"$FP8PLAN" quant-error --shape 4x32 --fp8 e4m3 --format csv --input "$TMP/q0.bin" >"$TMP/zero.csv" 2>&1
awk -F, 'NR > 1 {print $2, $5, $6, $10}' "$TMP/out" >"$TMP/a"
awk -F, 'NR > 1 {print $2, $5, $6, $10}' "$TMP/zero.csv" >"$TMP/b"
expect_eq "error figures equal those of the finite values alone" "$(cat "$TMP/a")" "$(cat "$TMP/b")"

# --- a finite input whose round trip is Inf: [1, 3.4e38] x 2048. 1x32 E8M0 ceil: amax 3.4e38, scale
# 2^ceil(log2(3.4e38 / 448)) = 2^120; 3.4e38 / 2^120 = 255.8 rounds to E4M3 256, and 256 x 2^120 = 2^128
# passes FLT_MAX: Inf. Its error is infinite: rel RMS, SNR and max abs err are n/a (empty in CSV), the row
# counts 2048 (it reported rel RMS 100 %, SNR 0 dB, max abs err 1, the Infs dropped).
vals=""
for i in $(seq 2048); do vals="$vals 1 3.4e38"; done
f32 "$TMP/qa.bin" $vals
run quant-error --shape 64x64 --fp8 e4m3 --format csv --input "$TMP/qa.bin"
expect_rc "finite inputs that come back Inf: exit 0" 0
expect_eq "1x32: 2048 outputs NaN/Inf" "$(row 1x32 11)" 2048
expect_eq "1x32: rel RMS, SNR, mean rel and max abs err are n/a" "$(row 1x32 5)|$(row 1x32 6)|$(row 1x32 7)|$(row 1x32 10)" "|||"
expect_err "a warning names the row and the count" "warning: e4m3 1x32: 2048 finite inputs came back NaN or Inf"
expect_eq "per tensor: no NaN/Inf out" "$(row tensor 11)" 0
run quant-error --shape 64x64 --fp8 e4m3 --format json --input "$TMP/qa.bin"
expect_out "JSON: the count and null figures" '"rel_rms_pct": null, "snr_db": null'
expect_out "JSON: nonfinite_out 2048" '"nonfinite_out": 2048'
run quant-error --shape 64x64 --fp8 e4m3 --input "$TMP/qa.bin"
expect_out "text: the NaN/Inf out column" "NaN/Inf"
finish
