#include "import_fixtures.h"

#include <stdio.h>

const char *fx_import_flags(const ImportResult *r)
{
    static char buf[2048];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->argc && n + 1 < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", r->argv[i]);
    return buf;
}
