# tests/cli/hostile_catalog.sh — what the catalog and the fidelity report take from the user: a
# --holdout list whose items name no source (or nothing) is a usage error listing the known source ids,
# not a 0 % error over 0 runs; a model row whose parameter count passes 2^64 is refused where the
# catalog is read (file, row, column), as plan refuses it, not listed with 0 parameters; an empty
# --catalog is a usage error.
. "$FP8PLAN_ROOT/tests/lib.sh"

export LC_ALL=C

# --- report fidelity --holdout
for h in nosuch "nemo-2407,nosuch" "llm-foundry@nosuch-gpu"; do
    run report fidelity --holdout "$h" -o "$TMP/fid"
    expect_rc "--holdout '$h' exits 64 (it reported 'hold-out 0.0 % over 0')" 64
    expect_err "--holdout '$h': the unknown item is named" "--holdout: unknown source '${h##*,}'"
    expect_err "--holdout '$h': the known ids are listed" "(known source ids: nemo-2407, mbridge-2511,"
done
for h in "" "nemo-2407," ",nemo-2407"; do
    run report fidelity --holdout "$h" -o "$TMP/fid"
    expect_rc "--holdout '$h' exits 64" 64
    expect_err "--holdout '$h': an empty id is named" "--holdout '$h': an empty source id (known source ids: nemo-2407"
done
if [ -e "$TMP/fid" ]; then fail "nothing written on a bad --holdout"; else pass "nothing written on a bad --holdout"; fi
run report fidelity --holdout "nemo-2407,llm-foundry@a100-sxm" --format html -o "$TMP/fid.html"
expect_rc "known ids (and SOURCE@GPU) are taken" 0
# --- a model row whose parameter count passes 2^64 (each cell in range): refused where the catalog is read
mkdir "$TMP/p3" && cp "$FP8PLAN_ROOT"/models/*.csv "$TMP/p3"/
echo 'p3,65536,16777216,67108864,65536,65536,256,50257,2048,layernorm,gelu,learned,yes,yes,,,,,,,,,,,,,,,,src' \
    >>"$TMP/p3/models.csv"
row=$(wc -l <"$TMP/p3/models.csv")
run models --catalog "$TMP/p3"
expect_rc "models with a 2^64-parameter row exits 65 (it listed 0 parameters, exit 0)" 65
expect_err "file, row and column are named" "$TMP/p3/models.csv: row $row, column hidden: '16777216': the parameter count passes 2^64"
expect_no_out "no listing with 0 parameters"
run plan --catalog "$TMP/p3" --model gpt-7b --gpu h100-sxm --recipe bf16
expect_rc "plan reads the same catalog the same way" 65

# --- an empty --catalog
run models --catalog ''
expect_rc "--catalog '' exits 64 (it read /models.csv)" 64
expect_err "--catalog '' says so" "--catalog: empty"
finish
