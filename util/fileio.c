/* util/fileio.c — whole-file reads (the writer is util/outfile.c). */
#include "util/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

Status stream_read_all(FILE *f, const char *name, char **buf, size_t *len, Err *e)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) return err_set(e, ST_NOMEM, "out of memory reading %s", name);
    for (;;) {
        if (cap - n < 2) {
            char *nb = cap > ((size_t)1 << 40) ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return err_set(e, ST_NOMEM, "out of memory reading %s", name);
            }
            b = nb, cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        free(b);
        return err_set(e, ST_IO, "read error on %s", name);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return ST_OK;
}

Status file_read_all(const char *path, char **buf, size_t *len, Err *e)
{
    if (!path || !strcmp(path, "-")) return stream_read_all(stdin, "stdin", buf, len, e);
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(e, ST_NOINPUT, "cannot open %s: %s", path, strerror(errno));
    Status st = stream_read_all(f, path, buf, len, e);
    fclose(f);
    return st;
}
