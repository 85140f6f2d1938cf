# tests/cli/fp8_stdin.sh — `cast` and `scaling`: the seed's worked example,
# stdin and CSV-trace input, and bad input with line numbers.
. "$FP8PLAN_ROOT/tests/lib.sh"

# ---- scaling: a 640 spike makes the next E4M3 scale 448/640 = 0.70 ----
run_in '1
640
2
' scaling --history 4 --algo max
expect_rc "scaling exits 0" 0
expect_eq "step 3 casts with scale 0.7" "$(awk '$1 == 3 {print $3}' "$TMP/out")" "0.7"
expect_eq "step 2 (the spike) saturates at scale 448" "$(awk '$1 == 2 {print $3, $4}' "$TMP/out")" "448 saturates"
expect_eq "step 3 flushes below ~0.00140, min subnormal below ~0.00279" \
    "$(awk '$1 == 3 {print $8, $9}' "$TMP/out")" "0.001395 0.00279"

run_in '1
640
2
3
4
5
0
nan
7
' scaling --history 4 --algo max --format csv
expect_rc "scaling csv exits 0" 0
expect_eq "numerics.md 2.4 trace (max): next scales" "$(awk -F, 'NR > 1 {printf "%s ", $5}' "$TMP/out")" \
    "448 0.69999998807907104 0.69999998807907104 0.69999998807907104 0.69999998807907104 89.599998474121094 89.599998474121094 89.599998474121094 64 "
expect_eq "amax 0 and nan keep the scale (max ignores NaN)" "$(awk -F, 'NR == 8 || NR == 9 {printf "%s;", $7}' "$TMP/out")" \
    "ok;ok;"
run_in '1
640
2
3
4
5
0
nan
7
' scaling --history 4 --algo most_recent --format csv
expect_eq "numerics.md 2.4 trace (most_recent): next scales" "$(awk -F, 'NR > 1 {printf "%.6g ", $5}' "$TMP/out")" \
    "448 0.7 224 149.333 112 89.6 89.6 89.6 64 "
expect_eq "most_recent keeps the scale on 0 and nan" "$(awk -F, 'NR == 8 || NR == 9 {printf "%s;", $7}' "$TMP/out")" \
    "kept: zero;kept: nan;"

run_in '1e-40
' scaling --history 1 --algo most_recent --format csv
expect_eq "tiny amax gives FLT_MAX" "$(awk -F, 'NR == 2 {print $5, $7}' "$TMP/out")" "3.4028234663852886e+38 tiny: FLT_MAX"

run_in '1
640
' scaling --history 4 --algo max --format e5m2 --margin 1 --format csv
expect_eq "e5m2 with margin 1: 57344 / 640 / 2" "$(awk -F, 'NR == 3 {print $5}' "$TMP/out")" "44.799999237060547"

printf 'step,amax,note\n1,1,warmup\n2,640,spike\n3,2,\n' >"$TMP/trace.csv"
run scaling --history 4 --algo max --trace "$TMP/trace.csv" --format csv
expect_rc "--trace csv exits 0" 0
expect_eq "--trace gives the same scales" "$(awk -F, 'NR == 4 {print $3}' "$TMP/out")" "0.69999998807907104"

printf 'step,amx\n1,1\n' >"$TMP/nocol.csv"
run scaling --history 4 --algo max --trace "$TMP/nocol.csv"
expect_rc "trace without an amax column is bad data" 65
expect_err "missing column named with file and row" "nocol.csv:1: no 'amax' column"
printf 'step,amax\n1,1\n2,big\n' >"$TMP/bad.csv"
run scaling --history 4 --algo max --trace "$TMP/bad.csv"
expect_rc "bad trace cell is bad data" 65
expect_err "bad cell named with row and column" "bad.csv:3: column amax: 'big' is not a number"
printf 'step,amax\n1,1\n2\n' >"$TMP/ragged.csv"
run scaling --history 4 --algo max --trace "$TMP/ragged.csv"
expect_rc "ragged trace is bad data" 65
expect_err "ragged row named" "ragged.csv:3: 1 fields, the header has 2"
run scaling --history 4 --algo max --trace "$TMP/missing.csv"
expect_rc "missing trace file exits 66" 66

run_in '1
640
abc
' scaling --history 4 --algo max
expect_rc "non-numeric amax line exits 65" 65
expect_err "the line number and text are named" "stdin:3: 'abc' is not a number"
expect_no_out "nothing printed on bad input"
run_in '-1
' scaling --history 4 --algo max
expect_rc "negative amax exits 65" 65
expect_err "negative amax is named" "stdin:1: amax '-1' is negative"
run_in '' scaling --history 4 --algo max
expect_rc "empty input is bad data" 65
run_in '1
' scaling --algo max
expect_rc "missing --history is a usage error" 64
run_in '1
' scaling --history 0 --algo max
expect_rc "--history 0 is a usage error" 64
run_in '1
' scaling --history 4 --algo mean
expect_rc "unknown --algo is a usage error" 64
run_in '1
' scaling --history 4 --algo max --format e3m4
expect_rc "unknown --format is a usage error" 64

# ---- cast: the worked example at scale 0.7 ----
run_in '0.001395089319
0.001395089435
' cast --format e4m3 --scale 0.7
expect_rc "cast exits 0" 0
expect_eq "cast header" "$(head -n 1 "$TMP/out")" "input,code,decoded"
expect_eq "0.001395089319 flushes to 0x00" "$(sed -n 2p "$TMP/out")" "0.001395089319,0x00,0"
expect_eq "0.001395089435 becomes 0x01" "$(sed -n 3p "$TMP/out" | cut -d, -f1,2)" "0.001395089435,0x01"
case $(sed -n 3p "$TMP/out" | cut -d, -f3) in
0.0027901786*) pass "decoded = value(0x01) / 0.7 = 0.0027901786..." ;;
*) fail "decoded = value(0x01) / 0.7 = 0.0027901786..." "got $(sed -n 3p "$TMP/out")" ;;
esac

run_in '448
464
465
-inf
nan
1e39
0.0009765625
' cast --format e4m3
expect_eq "saturating e4m3 edges" "$(cut -d, -f2 "$TMP/out" | tr '\n' ' ')" "code 0x7E 0x7E 0x7E 0xFE 0x7F 0x7E 0x00 "
run_in '465
inf
61440
' cast --format e5m2 --nosat
expect_eq "e5m2 --nosat overflows to Inf" "$(cut -d, -f2,3 "$TMP/out" | tail -n 3 | tr '\n' ' ')" "0x5F,448 0x7C,inf 0x7C,inf "
run_in '465
' cast --format e4m3 --nosat
expect_eq "e4m3 --nosat overflows to NaN" "$(sed -n 2p "$TMP/out")" "465,0x7F,nan"
run_in '3
1
0
' cast --format e8m0
expect_eq "e8m0 rounds up by default" "$(cut -d, -f2,3 "$TMP/out" | tail -n 3 | tr '\n' ' ')" "0x81,4 0x7F,1 0x00,5.8774717541114375e-39 "
run_in '3
' cast --format e8m0 --round floor
expect_eq "e8m0 --round floor" "$(sed -n 2p "$TMP/out")" "3,0x80,2"
run_in '1.0625000009313226
' cast --format e4m3 --from f64
expect_eq "--from f64 rounds once from double" "$(sed -n 2p "$TMP/out" | cut -d, -f2)" "0x39"
run_in '1.0625000009313226
' cast --format e4m3
expect_eq "the default f32 path sees the fp32 value 1.0625" "$(sed -n 2p "$TMP/out" | cut -d, -f2)" "0x38"

run_in '1
2
x1
' cast --format e4m3
expect_rc "non-numeric cast line exits 65" 65
expect_err "line number and text named" "stdin:3: 'x1' is not a number"
expect_no_out "no partial output on bad input"
run_in '0x1p3
' cast
expect_rc "hex floats are rejected" 65
run_in '1
' cast --format e4m3 --scale 0
expect_rc "--scale 0 is a usage error" 64
run_in '1
' cast --format e4m3 --scale abc
expect_rc "--scale abc is a usage error" 64
expect_err "--scale value quoted" "'abc'"
run_in '1
' cast --format fp16
expect_rc "unknown cast --format is a usage error" 64
run_in '1
' cast --format e4m3 --round floor
expect_rc "--round without e8m0 is a usage error" 64
run_in '1
bad
' cast -o "$TMP/cast.csv"
expect_rc "-o with bad input exits 65" 65
if [ -e "$TMP/cast.csv" ]; then fail "-o with bad input leaves no file"; else pass "-o with bad input leaves no file"; fi

finish
