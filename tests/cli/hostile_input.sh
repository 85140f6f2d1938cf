# tests/cli/hostile_input.sh — hostile bytes in what fp8plan reads: catalog cells with NUL, control
# bytes or invalid UTF-8 (an error naming file, row, column and byte), 200,000 catalog rows (stopped
# at the limit while reading, at once), a byte-order mark accepted by every reader, control bytes from
# the input escaped in messages, JSON output that is valid UTF-8, endless or binary inputs stopped at
# the first NUL, and a checkpoint with a corrupted header reported as corruption.
. "$FP8PLAN_ROOT/tests/lib.sh"

export LC_ALL=C
cat_copy() { # dir: a copy of the shipped catalog
    mkdir -p "$1" && cp "$FP8PLAN_ROOT"/models/*.csv "$1"/
}
no_raw_escape() { # name file: no ESC byte reached the terminal
    if LC_ALL=C grep -q "$(printf '\033')" "$2"; then fail "$1" "raw ESC in: $(od -c "$2" | head -3)"; else pass "$1"; fi
}

# --- a NUL inside a number: '3\0 2' used to read as 3
cat_copy "$TMP/nul"
python3 - "$TMP/nul/models.csv" <<'PY' 2>/dev/null || sed -i '2s/,32,/,3\x00 2,/' "$TMP/nul/models.csv"
import sys
p = sys.argv[1]
b = open(p, 'rb').read().split(b'\n')
head = b[0].split(b',')
row = b[1].split(b',')
row[head.index(b'layers')] = b'3\x00 2'
b[1] = b','.join(row)
open(p, 'wb').write(b'\n'.join(b))
PY
run models --catalog "$TMP/nul"
expect_rc "a NUL in a catalog cell exits 65" 65
expect_err "the NUL is named with row, column and byte" "models.csv: row 2, column layers: control byte 0x00 at byte 2 of '3\\x00 2'"

# --- an escape sequence in a source cell: refused, and shown escaped
cat_copy "$TMP/esc"
printf 'zz-gpu,9.0,80000000000,3350,989,1979,67,450,50,8,"\033[2J\033[31mcleared"\n' >>"$TMP/esc/gpus.csv"
run gpus --catalog "$TMP/esc"
expect_rc "an ESC in a catalog cell exits 65" 65
expect_err "the ESC is shown as \\x1B" "control byte 0x1B at byte 1 of '\\x1B[2J\\x1B[31mcleared'"
no_raw_escape "no raw escape sequence reaches stderr" "$TMP/err"

# --- Latin-1 (invalid UTF-8) in a source cell
cat_copy "$TMP/latin"
printf 'zz-gpu,9.0,80000000000,3350,989,1979,67,450,50,8,Datenblatt f\374r H100\n' >>"$TMP/latin/gpus.csv"
run gpus --catalog "$TMP/latin"
expect_rc "invalid UTF-8 in a catalog cell exits 65" 65
expect_err "the bad byte is named" "invalid UTF-8 byte 0xFC"

# --- 200,000 rows (40 MB): refused at once; 20,000 rows (4 MB): stopped at the row limit while reading
cat_copy "$TMP/big"
rows() { # n: models.csv with n copies of its first row, renamed
    awk -v n="$1" 'NR == 2 { tail = $0; sub(/^[^,]*/, "", tail); for (i = 0; i < n; i++) print "m" i tail; next }
        { print }' "$FP8PLAN_ROOT/models/models.csv" >"$TMP/big/models.csv" # one sub(), not n: 71 s -> under 1
}
rows 200000
start=$(date +%s)
run models --catalog "$TMP/big"
took=$(($(date +%s) - start))
expect_rc "200,000 model rows exit 65" 65
expect_err "200,000 model rows: the file is too large for a catalog" "larger than 16777216 bytes"
if [ "$took" -le 2 ]; then pass "refused in ${took} s (it took 146 s)"; else fail "refused in ${took} s" "expected at once"; fi
rows 20000
run models --catalog "$TMP/big"
expect_rc "20,000 model rows exit 65" 65
expect_err "the row limit is named, found while reading" "more than 256 data rows (at most 256 are read; stopped at row 258)"

# --- a byte-order mark: accepted by the catalog, the trace reader and stdin alike
cat_copy "$TMP/bom"
for f in models gpus recipes; do printf '\357\273\277' | cat - "$FP8PLAN_ROOT/models/$f.csv" >"$TMP/bom/$f.csv"; done
run models --catalog "$TMP/bom"
expect_rc "catalog files with a BOM are read" 0
printf 'step,amax\n1,1\n2,640\n3,2\n' >"$TMP/trace.csv"
printf '\357\273\277' | cat - "$TMP/trace.csv" >"$TMP/trace_bom.csv"
"$FP8PLAN" scaling --history 4 --algo max --trace "$TMP/trace.csv" --format csv >"$TMP/plain.out" 2>&1
run scaling --history 4 --algo max --trace "$TMP/trace_bom.csv" --format csv
expect_rc "scaling --trace with a BOM is read" 0
expect_eq "scaling --trace: the same result with and without a BOM" "$(cat "$TMP/out")" "$(cat "$TMP/plain.out")"
run_in "$(printf '\357\273\2771\n640\n2\n')" scaling --history 4 --algo max --format csv
expect_eq "scaling on stdin: the same result with a BOM" "$(cat "$TMP/out")" "$(cat "$TMP/plain.out")"
run_in "$(printf '\357\273\2771\n')" cast --format e4m3
expect_rc "cast on stdin: a BOM is skipped" 0
expect_out "cast: 1 is 0x38" "1,0x38,1"
printf 'step,amax\n1,\0331\n' >"$TMP/trace_esc.csv"
run scaling --history 4 --algo max --trace "$TMP/trace_esc.csv"
expect_rc "scaling --trace: a control byte in a cell exits 65" 65
expect_err "scaling --trace: the same message as the catalog's" "column 2: control byte 0x1B at byte 1"

# --- endless or binary inputs stop at the first NUL, at once
start=$(date +%s)
run scaling --history 4 --algo max --trace /dev/zero
expect_rc "scaling --trace /dev/zero exits 65" 65
expect_err "scaling --trace /dev/zero: a NUL byte" "/dev/zero:1: NUL byte in the input"
"$FP8PLAN" cast --format e4m3 </dev/zero >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "cast < /dev/zero exits 65" 65
run quant-error --shape 4x4 --input /dev/zero
expect_rc "quant-error --input /dev/zero exits 65" 65
expect_err "quant-error --input /dev/zero: the size it needs" "more than 64 bytes"
took=$(($(date +%s) - start))
if [ "$took" -le 2 ]; then pass "the three endless inputs took ${took} s"; else fail "endless inputs took ${took} s"; fi

# --- NaN and Inf inputs to quant-error: counted, warned about, left out; all of them: n/a, not 0 %
printf '\000\000\300\177%.0s' $(seq 16) >"$TMP/nan.bin" # 16 x 0x7FC00000 (quiet NaN), little-endian
printf '\000\000\300\177\000\000\200\177%.0s' 1 >"$TMP/mix.bin" # NaN, +Inf
printf '\000\000\300\077%.0s' $(seq 14) >>"$TMP/mix.bin"             # 14 x 1.5
run quant-error --shape 4x4 --input "$TMP/nan.bin" --fp8 e4m3
expect_rc "quant-error on all-NaN input exits 0" 0
expect_err "all-NaN input: warned, with the count" "holds 16 NaN and 0 Inf values of 16"
prose=$(tr -s '\n ' '  ' <"$TMP/out") # the title wraps at 100 columns: join its lines
case "$prose" in
*"16 NaN and 0 Inf of 16 inputs left out: nothing to measure"*) pass "all-NaN input: the title says nothing is measured" ;;
*) fail "all-NaN input: the title says nothing is measured" "$prose" ;;
esac
if grep -E '^e4m3 +tensor' "$TMP/out" | grep -q 'n/a'; then pass "all-NaN input: the error is n/a, not 0 %"; else
    fail "all-NaN input: the error is n/a, not 0 %" "$(grep tensor "$TMP/out")"; fi
run quant-error --shape 4x4 --input "$TMP/mix.bin" --fp8 e4m3 --format csv
expect_rc "quant-error on NaN + Inf + finite input exits 0" 0
expect_err "mixed input: both kinds counted" "holds 1 NaN and 1 Inf values of 16; the figures are over the finite values only"

# --- messages escape control bytes that came from the command line
run plan --model "$(printf 'x\033[31mred')" --gpu h100-sxm --recipe bf16
expect_rc "an unknown model with an ESC exits 64" 64
expect_err "the model name is shown escaped" "unknown model 'x\\x1B[31mred'"
no_raw_escape "no raw ESC from --model reaches stderr" "$TMP/err"
run plan "--$(printf '\033[2J')"
expect_rc "an option name with an ESC exits 64" 64
no_raw_escape "no raw ESC from an option name reaches stderr" "$TMP/err"
"$FP8PLAN" "$(printf '\033[2Jx')" >"$TMP/out" 2>"$TMP/err"
no_raw_escape "no raw ESC from a subcommand name reaches stderr" "$TMP/err"

# --- JSON output is valid UTF-8 JSON
if command -v python3 >/dev/null 2>&1; then
    for c in models gpus recipes; do
        run $c --format json
        if python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$TMP/out" 2>"$TMP/pyerr"; then
            pass "$c --format json is valid UTF-8 JSON"
        else
            fail "$c --format json is valid UTF-8 JSON" "$(cat "$TMP/pyerr")"
        fi
    done
else
    echo "skip - python3 is not installed (JSON validity)"
fi

# --- a checkpoint with a corrupted header is corruption, not another recipe
TINY="--model gpt2-124m --recipe te-fp8 --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --steps 2 --quiet"
run run $TINY --save "$TMP/good.ckpt"
expect_rc "a tiny run saves a checkpoint" 0
cp "$TMP/good.ckpt" "$TMP/hdr.ckpt"
# byte 53: the first recipe field after magic (8), version (4), recipe name (32) and 8 more bytes
printf '\007' | dd of="$TMP/hdr.ckpt" bs=1 seek=52 conv=notrunc 2>/dev/null
run run $TINY --resume "$TMP/hdr.ckpt"
expect_rc "a corrupted header exits 65" 65
expect_err "a corrupted header is reported as corruption" "the file is corrupted"
if grep -q "recipe" "$TMP/err"; then fail "not as a recipe mismatch" "$(cat "$TMP/err")"; else pass "not as a recipe mismatch"; fi
run run $(echo "$TINY" | sed 's/te-fp8/fp8lm/') --resume "$TMP/good.ckpt"
expect_rc "an intact checkpoint of another recipe exits 65" 65
expect_err "an intact checkpoint of another recipe: the recipes are named" "checkpoint is from recipe 'te-fp8'"
finish
