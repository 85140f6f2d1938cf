# tests/cli/html_browser.sh — every HTML report rendered in headless Chromium (html_browser.py):
# no overflow at 1280 px, every chart laid out with its texts inside it, bars as long as their values
# as rendered, each chart's pixels drawn, dark and print styles applied. Chromium and python3 come
# from Debian (make test and make test-full install them as root); where they are missing the suite says so and skips.
# tier: full (make test-full, which .ci/run runs): headless Chromium
. "$FP8PLAN_ROOT/tests/lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - browser rendering (no python3: sudo apt-get install -y python3)"
else
    out=${HTML_PNG_DIR:-$TMP}
    mkdir -p "$out"
    python3 "$FP8PLAN_ROOT/tests/cli/html_browser.py" "$out" >"$TMP/browser.out" 2>"$TMP/browser.err"
    status=$?
    cat "$TMP/browser.out"
    sed 's/^/  /' "$TMP/browser.err" >&2
    passed=$((passed + $(grep -c '^ok - ' "$TMP/browser.out")))
    failed=$((failed + $(grep -c '^FAIL - ' "$TMP/browser.out")))
    if [ "$status" -ne 0 ]; then fail "html_browser.py ran to the end (exit $status)" "$(tail -n 5 "$TMP/browser.err")"; fi
    if ! grep -q '^skip - ' "$TMP/browser.out" && [ "$(grep -c '^ok - ' "$TMP/browser.out")" -lt 100 ]; then
        fail "html_browser.py ran all its checks"
    fi
fi
finish
