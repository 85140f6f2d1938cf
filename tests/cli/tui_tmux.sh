# tests/cli/tui_tmux.sh — `fp8plan tui` end to end in a real terminal: tmux
# gives it a pty with TERM=xterm-256color; the test sends keys, reads the pane,
# resizes the window below the minimum and back, quits, and checks the terminal
# settings (stty -g) and the normal screen are back. Then the same under SIGTERM
# and Ctrl-C (SIGINT), which must restore the terminal too.
. "$FP8PLAN_ROOT/tests/lib.sh"

if ! command -v tmux >/dev/null 2>&1; then
    skip tui_tmux "tmux is not installed; the Makefile installs it: make test as root, or apt-get install tmux"
    finish
    exit
fi

# one tmux server per session, ours alone, its socket inside $TMP (removed on exit; -L would leave one
# per session in the system's tmux folder), killed when done
n=0
T() { tmux -S "$TMP/tmux-$n" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1; rm -rf "$TMP"' EXIT

# The pane runs this: remember the tty settings, run the TUI, record how it ended.
cat >"$TMP/pane.sh" <<EOF
trap 'true' INT
stty -g >"$TMP/stty.before"
TERM=xterm-256color LC_ALL=C.UTF-8 "$FP8PLAN" tui "\$@" </dev/tty &
pid=\$!
echo \$pid >"$TMP/pid"
while :; do wait \$pid; rc=\$?; kill -0 \$pid 2>/dev/null || break; done
echo "rc=\$rc" >"$TMP/rc"
stty -g >"$TMP/stty.after"
echo "SHELL-IS-BACK"
sleep 120
EOF

wait_for() { # text: poll the pane for up to 15 s
    i=0
    while [ $i -lt 150 ]; do
        T capture-pane -p -t t >"$TMP/pane" 2>/dev/null
        grep -qF -- "$1" "$TMP/pane" && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
check() { # name text
    if wait_for "$2"; then pass "$1"; else fail "$1" "pane lacks: $2" "$(cat "$TMP/pane")"; fi
}
restored() { # name expected-rc
    check "$1: the shell is back" "SHELL-IS-BACK"
    expect_eq "$1: exit status" "$(cat "$TMP/rc" 2>/dev/null)" "rc=$2"
    expect_eq "$1: terminal settings restored (stty -g)" "$(cat "$TMP/stty.after" 2>/dev/null)" \
        "$(cat "$TMP/stty.before" 2>/dev/null)"
    if grep -qF "Memory per GPU" "$TMP/pane"; then
        fail "$1: the normal screen is back (the TUI's screen is gone)" "$(cat "$TMP/pane")"
    else
        pass "$1: the normal screen is back (the TUI's screen is gone)"
    fi
}
start() {
    rm -f "$TMP/rc" "$TMP/stty.after" "$TMP/pid"
    T kill-server >/dev/null 2>&1
    n=$((n + 1))
    T new-session -d -s t -x 100 -y 30 "sh $TMP/pane.sh $*"
}

# --- change a value, resize below the minimum and back, quit
start
check "opens on the Plan screen" "Memory per GPU, stage 0/4"
check "uses Unicode blocks under UTF-8" "█"
T send-keys -t t Down Down Down Right
check "Right doubles TP (8 -> 16)" "< 16 >"
check "the plan follows (TP 16: 256 GPUs)" "Step "
T resize-window -t t -x 60 -y 15
check "60x15 shows the too-small screen" "too small: have 60×15, need 80×24"
T resize-window -t t -x 100 -y 30
check "back at 100x30 the plan returns with TP 16" "< 16 >"
T send-keys -t t Enter 3 2 Enter
check "Enter types a value (TP 32)" "< 32 >"
T send-keys -t t / x y z Escape
check "Esc closes the find prompt" "cancelled"
T send-keys -t t 2
check "2 goes to Compare" "megatron-bf16 *"
T send-keys -t t q
restored "quit with q" 0

# --- SIGTERM restores the terminal and exits 128+15
start
check "second session opens" "Memory per GPU"
kill -TERM "$(cat "$TMP/pid")"
restored "SIGTERM" 143

# --- Ctrl-C (SIGINT through the tty: cbreak keeps ISIG) exits 128+2
start
check "third session opens" "Memory per GPU"
T send-keys -t t C-c
restored "Ctrl-C" 130

# --- a plan the planner rejects opens with its message
start --tp 128
check "--tp 128 opens with the planner's message" "96 heads"
T send-keys -t t F10
restored "quit with F10" 0
finish
