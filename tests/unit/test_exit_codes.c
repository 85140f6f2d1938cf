/* tests/unit/test_exit_codes.c — docs/cli.md's list of exit codes names every code a Status maps to
 * (run --hidden 65536 once exited 71, which the list lacked). */
#include <regex.h>
#include <stdlib.h>

#include "test.h"
#include "util/fileio.h"
#include "util/status.h"

static void test_docs_list_every_exit_code(void)
{
    const char *root = getenv("FP8PLAN_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/cli.md", root ? root : ".");
    char *text = NULL;
    size_t len;
    Err e;
    CHECK(file_read_all(path, &text, &len, &e) == ST_OK);
    if (!text) return;
    char *list = strstr(text, "Exit codes (sysexits):");
    CHECK(list != NULL);
    if (!list) return free(text);
    char *end = strstr(list, "\n\n");
    if (end) *end = '\0';
    for (int st = 0; st < ST_COUNT_; st++) {
        int code = status_exit_code((Status)st);
        char pat[64];
        snprintf(pat, sizeof pat, "(^|[ ,(])%d [a-z]", code); /* "71 out of memory" */
        regex_t re;
        CHECK(regcomp(&re, pat, REG_EXTENDED | REG_NEWLINE) == 0);
        CHECKF(regexec(&re, list, 0, NULL, 0) == 0, "exit code %d (%s) is not in docs/cli.md's list", code,
               status_str((Status)st));
        regfree(&re);
    }
    free(text);
}

int main(void)
{
    RUN(test_docs_list_every_exit_code);
    return test_summary();
}
