# tests/cli/main.sh — the dispatcher: help, version, unknown subcommands.
. "$FP8PLAN_ROOT/tests/lib.sh"

run --version
expect_rc "--version exits 0" 0
expect_out "--version prints the version" "fp8plan "
v=$(cat "$TMP/out")
run version
expect_rc "version exits 0" 0
expect_eq "version prints what --version prints" "$(cat "$TMP/out")" "$v"
run version extra
expect_rc "version with an argument exits 64" 64
expect_err "the argument named" "fp8plan version: takes no arguments ('extra' given)"
expect_no_out "version with an argument prints nothing on stdout"

run --version extra
expect_rc "--version with an argument exits 64, as version does" 64
expect_err "--version names the argument" "fp8plan version: takes no arguments ('extra' given)"
expect_no_out "--version with an argument prints nothing on stdout"
run --version --help
expect_rc "--version --help exits 0" 0
expect_out "--version --help is version's help" "usage: fp8plan version"

run --help
expect_rc "--help exits 0" 0
expect_out "--help lists subcommands" "Subcommands:"
run help plan
expect_rc "help plan exits 0" 0
expect_out "help plan prints plan's usage" "usage: fp8plan plan"
run --help plan
expect_rc "--help plan exits 0" 0
expect_out "--help plan prints plan's usage, as help plan does" "usage: fp8plan plan"
run --help frobnicate
expect_rc "--help of an unknown subcommand exits 64" 64
expect_err "--help names the unknown subcommand" "unknown subcommand 'frobnicate'"

run
expect_rc "no subcommand is a usage error" 64
expect_err "no subcommand prints usage on stderr" "usage: fp8plan"
expect_no_out "no subcommand prints nothing on stdout"

run frobnicate
expect_rc "unknown subcommand exits 64" 64
expect_err "unknown subcommand is named" "unknown subcommand 'frobnicate'"

# every listed subcommand answers --help with exit 0 and text on stdout
for c in $("$FP8PLAN" --help | awk '/^Subcommands:/{on=1;next} on&&/^  [a-z]/{print $1} /^$/{if(on)exit}'); do
    run "$c" --help
    expect_rc "$c --help exits 0" 0
    if [ -s "$TMP/out" ]; then pass "$c --help prints on stdout"; else fail "$c --help prints on stdout"; fi
    # an unknown option stops the subcommand before it does anything: exit 64, the option named, nothing on
    # stdout (a parser that went on would run the subcommand with its defaults)
    run "$c" --no-such-option
    expect_rc "$c --no-such-option exits 64" 64
    expect_err "$c --no-such-option is named" "fp8plan $c: unrecognized option '--no-such-option'"
    expect_no_out "$c --no-such-option prints nothing on stdout"
done

finish
