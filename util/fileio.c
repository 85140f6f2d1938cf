/* util/fileio.c — whole-file reads and atomic (temp + rename) writes. */
#include "util/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_stdout(const char *path) { return !path || !strcmp(path, "-"); }

Status outfile_open(OutFile *o, const char *path, Err *e)
{
    memset(o, 0, sizeof *o);
    if (is_stdout(path)) {
        o->f = stdout;
        snprintf(o->path, sizeof o->path, "-");
        return ST_OK;
    }
    if (!*path) return err_set(e, ST_USAGE, "empty output path");
    if (strlen(path) + 16 > sizeof o->tmp) return err_set(e, ST_USAGE, "output path too long: %s", path);
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int err = errno;
        o->tmp[0] = '\0';
        return err_set(e, ST_CANTCREAT, "cannot create %s: %s", path, strerror(err));
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int err = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return err_set(e, ST_CANTCREAT, "cannot open %s: %s", path, strerror(err));
    }
    return ST_OK;
}

Status outfile_commit(OutFile *o, Err *e)
{
    if (!o->f) return err_set(e, ST_SOFTWARE, "outfile_commit on a closed file");
    if (!o->tmp[0]) {
        int bad = fflush(o->f) != 0 || ferror(o->f);
        o->f = NULL;
        return bad ? err_set(e, ST_IO, "write to stdout failed") : ST_OK;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int err = errno;
    if (!bad && fsync(fileno(o->f)) != 0) bad = 1, err = errno;
    if (fclose(o->f) != 0 && !bad) bad = 1, err = errno;
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) bad = 1, err = errno;
    if (bad) {
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return err_set(e, ST_IO, "cannot write %s: %s", o->path, strerror(err));
    }
    o->tmp[0] = '\0';
    return ST_OK;
}

void outfile_abort(OutFile *o)
{
    if (o->f && o->tmp[0]) {
        fclose(o->f);
        unlink(o->tmp);
    } else if (o->f) {
        fflush(o->f);
    }
    o->f = NULL;
    o->tmp[0] = '\0';
}

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
