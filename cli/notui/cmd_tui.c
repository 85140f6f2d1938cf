/* cli/notui/cmd_tui.c — `fp8plan tui` in a build without the TUI (make TUI=0,
 * which make gpu-build uses: a GPU machine's image may lack ncurses). */
#include <stdio.h>

#include "util/status.h"

int cmd_tui(int argc, char **argv);

int cmd_tui(int argc, char **argv)
{
    (void)argc, (void)argv;
    fprintf(stderr, "fp8plan tui: this fp8plan was built without the TUI (TUI=0, as make gpu-build builds it); "
                    "build it with make to get the TUI\n");
    return status_exit_code(ST_UNAVAILABLE);
}
