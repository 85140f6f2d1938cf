/* util/fileio.c — whole-file reads (the writer is util/outfile.c). */
#include "util/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* text: stop at the first NUL byte (the input is not text: fail now, not after reading 1 GiB of /dev/zero) */
static Status read_stream(FILE *f, const char *name, size_t max, int text, char **buf, size_t *len, Err *e)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) return err_set(e, ST_NOMEM, "out of memory reading %s", name);
    for (;;) {
        if (cap - n < 2) {
            size_t ncap = cap > max / 2 ? max + 2 : cap * 2; /* room for one byte past max, and the NUL */
            char *nb = ncap <= cap ? NULL : realloc(b, ncap);
            if (!nb) {
                free(b);
                return err_set(e, ST_NOMEM, "out of memory reading %s", name);
            }
            b = nb, cap = ncap;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        const char *nul = text ? memchr(b + n, '\0', got) : NULL;
        if (nul) {
            unsigned long line = 1;
            for (const char *p = b; p < nul; p++) line += *p == '\n';
            free(b);
            return err_set(e, ST_DATA, "%s:%lu: NUL byte in the input (text expected)", name, line);
        }
        n += got;
        if (n > max) {
            free(b);
            return err_set(e, ST_DATA, "%s: larger than %zu bytes, the most this input may hold", name, max);
        }
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

Status stream_read_max(FILE *f, const char *name, size_t max, char **buf, size_t *len, Err *e)
{
    return read_stream(f, name, max, 0, buf, len, e);
}

Status stream_read_all(FILE *f, const char *name, char **buf, size_t *len, Err *e)
{
    return read_stream(f, name, FILE_READ_MAX, 0, buf, len, e);
}

Status stream_read_text(FILE *f, const char *name, char **buf, size_t *len, Err *e)
{
    return read_stream(f, name, FILE_READ_MAX, 1, buf, len, e);
}

static Status read_file(const char *path, size_t max, int text, char **buf, size_t *len, Err *e)
{
    if (!path || !strcmp(path, "-")) return read_stream(stdin, "stdin", max, text, buf, len, e);
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(e, ST_NOINPUT, "cannot open %s: %s", path, strerror(errno));
    Status st = read_stream(f, path, max, text, buf, len, e);
    fclose(f);
    return st;
}

Status file_read_max(const char *path, size_t max, char **buf, size_t *len, Err *e)
{
    return read_file(path, max, 0, buf, len, e);
}

Status file_read_text(const char *path, size_t max, char **buf, size_t *len, Err *e)
{
    return read_file(path, max, 1, buf, len, e);
}

Status file_read_all(const char *path, char **buf, size_t *len, Err *e)
{
    return file_read_max(path, FILE_READ_MAX, buf, len, e);
}
