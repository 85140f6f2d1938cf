# tests/cli/fp8_tables.sh — `formats` and `scales`: the seed's tables, computed.
. "$FP8PLAN_ROOT/tests/lib.sh"

# ---- scales: Table 1b for 4096x4096 (the seed's figures) ----
run scales --shape 4096x4096
expect_rc "scales 4096x4096 exits 0" 0
fp8_row() { awk -v g="$1" '$1 == "fp8" && $2 == g' "$TMP/out"; }
expect_eq "BF16 row: 33,554,432 B" "$(awk '$1 == "bf16" {print $5}' "$TMP/out")" "33,554,432"
expect_eq "per-tensor: payload 16,777,216 B = 50.000 %, scale 4 B" \
    "$(fp8_row tensor | awk '{print $5, $6, $8}')" "16,777,216 4 50.000"
expect_eq "per-channel: 16,384 B of scales" "$(fp8_row channel | awk '{print $6}')" "16,384"
expect_eq "1x32 E8M0: 524,288 B = 3.125 % of payload, saving 48.438 %" \
    "$(fp8_row 1x32 | awk '{print $3, $6, $9, $10}')" "e8m0 524,288 3.125 48.438"
expect_eq "per-tensor saving rounds to 50.000 %" "$(fp8_row tensor | awk '{print $NF}')" "50.000"

run scales --shape 4096x4096 --format csv
expect_rc "scales csv exits 0" 0
expect_eq "csv header" "$(head -n 1 "$TMP/out")" \
    "format,granularity,scale_dtype,scale_count,payload_bytes,scale_bytes,total_bytes,payload_of_bf16_pct,scale_of_payload_pct,saving_vs_bf16_pct"
expect_out "csv 1x32 row, exact" "fp8,1x32,e8m0,524288,16777216,524288,17301504,50,3.125,48.4375"
expect_out "csv 128x128 row: 1,024 FP32 scales" "fp8,128x128,fp32,1024,16777216,4096,16781312,50,"

run scales --shape 33x33 --format csv
expect_out "partial blocks get their own scale (33x33 1x32: 66 scales)" "fp8,1x32,e8m0,66,1089,66,1155,"

run scales --shape 4096x1 --format csv
expect_out "scales can outweigh the saving (4096x1 per-channel: -150 %)" "fp8,channel,fp32,4096,4096,16384,20480,50,400,-150"

run scales --shape 4096x4096 --format json
expect_out "json has the 1x32 object" '"format": "fp8", "granularity": "1x32", "scale_dtype": "e8m0"'

run scales --shape 4096x
expect_rc "bad shape is a usage error" 64
expect_err "bad shape is quoted" "'4096x'"
expect_no_out "bad shape prints no data"
run scales
expect_rc "missing --shape is a usage error" 64
expect_err "missing --shape is named" "--shape"
run scales --shape 4294967296x4294967296
expect_rc "a shape past 2^64 bytes is bad data" 65
run scales --shape 4x4 --bogus
expect_rc "unknown flag is a usage error" 64
run scales --shape 4x4 --format xml
expect_rc "bad --format is a usage error" 64

# -o writes atomically and nothing on stdout
run scales --shape 4096x4096 --format csv -o "$TMP/t1b.csv"
expect_rc "-o exits 0" 0
expect_no_out "-o leaves stdout empty"
expect_eq "-o file holds the csv" "$(sed -n 5p "$TMP/t1b.csv" | cut -d, -f2,6)" "1x32,524288"

# ---- formats: Table 1 and Table 9 from the codecs ----
run formats
expect_rc "formats exits 0" 0
expect_out "E4M3 max normal" "S.1111.110 = 1.75 * 2^8 = 448"
expect_out "E5M2 max normal" "S.11110.11 = 1.75 * 2^15 = 57344"
expect_out "E4M3 min subnormal" "S.0000.001 = 2^-9 = 0.001953125"
expect_out "E5M2 NaN patterns" "S.11111.{01, 10, 11}"
expect_out "E4M3 covers 18 binades" "18 (15 + 3)"
expect_out "Table 9 title" "FP8-LM Table 9"
expect_out "INT8 is fixed point" "fixed point"

run formats --table ranges --format csv
expect_rc "formats ranges csv exits 0" 0
expect_out "FP32 normal range" "FP32,32,8,23,1.1754943508222875e-38,3.4028234663852886e+38,254,"
expect_out "FP16 normal range" "FP16,16,5,10,6.103515625e-05,65504,30,"
expect_out "BF16 normal range" "BF16,16,8,7,1.1754943508222875e-38,3.3895313892515355e+38,254,"
expect_out "E4M3 normal range" "E4M3,8,4,3,0.015625,448,15,"
expect_out "E5M2 normal range" "E5M2,8,5,2,6.103515625e-05,57344,30,"

run formats --table fp8 --format csv
expect_out "Table 1 csv bias row" "exponent bias,7,15"
run formats --format csv
expect_rc "csv without --table is a usage error" 64
expect_err "the error says what to add" "--table"
run formats --table int4
expect_rc "unknown table is a usage error" 64

finish
