# tests/cli/hostile_output.sh — where -o, --dump, --save and the TUI's export can point: regular files
# keep their mode (new ones follow the umask), symbolic links are followed (the link stays), devices and
# FIFOs are written in place and never replaced, directories and block devices are refused, and every
# write failure (a full device, a full stdout) is an error with its reason, exit 74.
. "$FP8PLAN_ROOT/tests/lib.sh"

export TERM=dumb LC_ALL=C
P="plan --model gpt-7b --gpu h100-sxm --recipe bf16"

is_char() { # name path
    if [ -c "$2" ]; then pass "$1"; else fail "$1" "$(ls -l "$2" 2>&1)"; fi
}
mode_of() { stat -c %a "$1"; }
leftovers() { # name dir: no temporary file beside the target
    n=$(find "$2" -name '*.tmp.*' | wc -l)
    expect_eq "$1" "$n" 0
}

# --- devices: /dev/null accepts, /dev/full fails with the reason, both stay devices
run $P -o /dev/null
expect_rc "-o /dev/null exits 0" 0
is_char "/dev/null is still a character device" /dev/null
run $P -o /dev/full
expect_rc "-o /dev/full exits 74" 74
expect_err "-o /dev/full names the device and the reason" "cannot write /dev/full: No space left on device"
is_char "/dev/full is still a character device" /dev/full
"$FP8PLAN" $P >/dev/full 2>"$TMP/err"
rc=$?
expect_rc "stdout on /dev/full exits 74" 74
expect_err "stdout on /dev/full says so" "cannot write standard output: No space left on device"
"$FP8PLAN" gpus --format csv >/dev/full 2>"$TMP/err"
rc=$?
expect_rc "a catalog listing to a full stdout exits 74" 74
"$FP8PLAN" scaling --history 2 --algo max <<EOF >/dev/full 2>"$TMP/err"
1
2
EOF
rc=$?
expect_rc "scaling to a full stdout exits 74" 74
printf '1\n' | "$FP8PLAN" cast --format e4m3 -o /dev/full 2>"$TMP/err"
rc=$?
expect_rc "cast -o /dev/full exits 74" 74
run formats -o /dev/full
expect_rc "formats -o /dev/full exits 74" 74
expect_err "formats -o /dev/full gives the reason" "No space left on device"

# --- regular files: the mode of an existing file is kept, a new one follows the umask
mkdir "$TMP/d"
(umask 027 && "$FP8PLAN" gpus -o "$TMP/d/new.txt")
expect_eq "a new file is 0666 & ~umask (027 -> 640)" "$(mode_of "$TMP/d/new.txt")" 640
echo old >"$TMP/d/old.txt"
chmod 604 "$TMP/d/old.txt"
(umask 077 && "$FP8PLAN" gpus -o "$TMP/d/old.txt")
expect_eq "an existing file keeps its mode (604)" "$(mode_of "$TMP/d/old.txt")" 604
if grep -q h100-sxm "$TMP/d/old.txt"; then pass "the existing file holds the new output"; else fail "old.txt replaced"; fi
leftovers "no temporary file left beside the outputs" "$TMP/d"

# --- symbolic links: the target is replaced, the link stays a link
echo old >"$TMP/d/real.csv"
ln -s real.csv "$TMP/d/link.csv"
run gpus --format csv -o "$TMP/d/link.csv"
expect_rc "-o through a symbolic link exits 0" 0
if [ -L "$TMP/d/link.csv" ]; then pass "the link is still a link"; else fail "the link was replaced"; fi
if grep -q '^name,' "$TMP/d/real.csv"; then pass "the link's target holds the output"; else fail "target not written"; fi
ln -s made.csv "$TMP/d/dangling.csv"
run gpus --format csv -o "$TMP/d/dangling.csv"
if [ -L "$TMP/d/dangling.csv" ] && [ -f "$TMP/d/made.csv" ]; then pass "a dangling link: its target is created"; else
    fail "a dangling link: its target is created" "$(ls -l "$TMP/d")"; fi

# --- a FIFO is written in place (a reader gets the data) and stays a FIFO
mkfifo "$TMP/d/pipe"
(timeout 20 cat "$TMP/d/pipe" >"$TMP/fromfifo") &
reader=$!
run gpus --format csv -o "$TMP/d/pipe"
wait "$reader"
expect_rc "-o FIFO exits 0" 0
if grep -q '^name,' "$TMP/fromfifo"; then pass "the FIFO's reader got the CSV"; else fail "the FIFO's reader got the CSV"; fi
if [ -p "$TMP/d/pipe" ]; then pass "the FIFO is still a FIFO"; else fail "the FIFO was replaced"; fi
# the reader comes second (the usual `fp8plan -o p & cat p` race): the writer waits for it
(timeout 30 "$FP8PLAN" gpus --format csv -o "$TMP/d/pipe" >"$TMP/late.out" 2>&1; echo $? >"$TMP/late.rc") &
writer=$!
sleep 1
timeout 20 cat "$TMP/d/pipe" >"$TMP/fromfifo2"
wait "$writer"
expect_eq "a FIFO whose reader comes a second later: exit 0" "$(cat "$TMP/late.rc")" 0
if grep -q '^name,' "$TMP/fromfifo2"; then pass "the late reader got the CSV"; else fail "the late reader got the CSV"; fi
# nobody ever reads: an error after 10 s, not a hang (the wait's length a timing check: once more when it is off,
# then a skip naming the load on a machine busier than its cores)
unread() {
    start=$(date +%s)
    timeout 30 "$FP8PLAN" gpus --format csv -o "$TMP/d/pipe" >"$TMP/out" 2>"$TMP/err" # a hang would be 124
    rc=$?
    took=$(($(date +%s) - start))
}
timed_twice unread 9 15
expect_rc "a FIFO nobody reads: exit 73" 73
expect_err "a FIFO nobody reads: said so" "no process is reading this FIFO (waited 10 s)"
judge_took "it waited about 10 s" 9 15

# --- refusals: a directory, a missing directory, a block device (root only: mknod)
run gpus -o "$TMP/d"
expect_rc "-o DIR exits 73" 73
expect_err "-o DIR says it is a directory" "is a directory"
run gpus -o "$TMP/nope/x.csv"
expect_rc "-o in a missing directory exits 73" 73
expect_err "-o in a missing directory names it" "$TMP/nope"
echo file >"$TMP/notdir"
run report seed -o "$TMP/notdir"
expect_rc "report seed -o FILE (not a directory) fails" 73
run report fidelity -o "$TMP/notdir"
expect_rc "report fidelity -o FILE (not a directory) fails (and frees what it did not write)" 73
# a report's CSV files land as one set: one that cannot be written (its name taken by a directory) leaves none
# of the others behind (report seed wrote table1a and table1b before failing on table1c, fidelity 2 of 4)
for case in "seed table1c_precision_map.csv table1a_bytes_per_param.csv" "fidelity fidelity_pairs.csv fidelity_runs.csv"; do
    set -- $case
    rm -rf "$TMP/set" && mkdir -p "$TMP/set/$2"
    run report "$1" -o "$TMP/set"
    expect_rc "report $1 -o DIR with $2 a directory fails" 73
    expect_eq "report $1: none of its other files left behind ($3 was)" "$(ls -A "$TMP/set")" "$2"
done
if [ "$(id -u)" = 0 ]; then
    mknod "$TMP/blk" b 7 0
    run gpus -o "$TMP/blk"
    expect_rc "-o block device exits 73" 73
    expect_err "-o block device says why" "block device"
    # the issue's case: a device node for the full device, written by the TUI's export and by --dump
    mknod "$TMP/full" c 1 7
    run tui --headless --size 80x24 --keys "e<C-u>$TMP/full<Enter>" --dump "$TMP/screen"
    expect_rc "TUI export to a full device: the session still ends normally" 0
    if grep -qF "export failed: cannot write $TMP/full: No space left on device" "$TMP/screen"; then
        pass "TUI export to a full device says it failed"
    else
        fail "TUI export to a full device says it failed" "$(grep -i export "$TMP/screen")"
    fi
    is_char "the device node is still a character device after the TUI's export" "$TMP/full"
    run tui --headless --size 80x24 --keys "q" --dump "$TMP/full"
    expect_rc "tui --dump to a full device exits 74" 74
    is_char "the device node is still a character device after --dump" "$TMP/full"
else
    echo "skip - mknod needs root (block device and device-node cases)"
fi
run tui --headless --size 80x24 --keys "e<C-u>$TMP/d/pipe<Enter>" --dump "$TMP/screen"
expect_rc "TUI export to a FIFO nobody reads: the session goes on" 0
if grep -qF "no process is reading" "$TMP/screen"; then pass "TUI export to an unread FIFO says so"; else
    fail "TUI export to an unread FIFO says so" "$(grep -i export "$TMP/screen")"; fi
run tui --headless --size 80x24 --keys "e<C-u>/dev/full<Enter>" --dump "$TMP/screen"
if grep -qF "export failed: cannot write /dev/full" "$TMP/screen"; then pass "TUI export to /dev/full says it failed"; else
    fail "TUI export to /dev/full says it failed" "$(grep -i export "$TMP/screen")"; fi
is_char "/dev/full is still a character device after the TUI's export" /dev/full
finish
