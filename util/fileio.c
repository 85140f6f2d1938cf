/* util/fileio.c — whole-file reads (the writer is util/outfile.c). */
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FIFO_WAIT_MS = 10000 }; /* as long as the writer waits for a FIFO's reader (util/outfile.c) */

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

double file_clock_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A FIFO (a named pipe, or `--trace <(cmd)`'s /dev/fd/N): opened without blocking, then wait up to
 * FIFO_WAIT_MS for a writer. With no data yet, a non-blocking read says which: EAGAIN = a writer holds
 * the pipe open, 0 = none does. A byte that arrives while we look is pushed back. */
static Status open_fifo(const char *path, FILE **out, Err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return err_set(e, ST_NOINPUT, "cannot open %s: %s", path, strerror(errno));
    unsigned char c;
    ssize_t got = 0;
    const double start = file_clock_ms(); /* the wait by the clock: on a loaded machine each 10 ms sleep takes longer */
    for (;;) {
        got = read(fd, &c, 1);
        if (got != 0 || file_clock_ms() - start >= FIFO_WAIT_MS) break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    int err = errno;
    if (got < 0 && err != EAGAIN) {
        close(fd);
        return err_set(e, ST_IO, "cannot read %s: %s", path, strerror(err));
    }
    if (got == 0) {
        close(fd);
        return err_set(e, ST_NOINPUT, "cannot read %s: no process is writing to this FIFO (waited %d s)", path,
                       FIFO_WAIT_MS / 1000);
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ? NULL : fdopen(fd, "rb");
    if (!f) {
        err = errno;
        close(fd);
        return err_set(e, ST_IO, "cannot read %s: %s", path, strerror(err));
    }
    if (got == 1) ungetc(c, f);
    *out = f;
    return ST_OK;
}

Status file_open_read(const char *path, FILE **out, Err *e)
{
    struct stat st;
    if (!stat(path, &st) && S_ISFIFO(st.st_mode)) return open_fifo(path, out, e);
    *out = fopen(path, "rb");
    return *out ? ST_OK : err_set(e, ST_NOINPUT, "cannot open %s: %s", path, strerror(errno));
}

static Status read_file(const char *path, size_t max, int text, char **buf, size_t *len, Err *e)
{
    if (!path || !strcmp(path, "-")) return read_stream(stdin, "stdin", max, text, buf, len, e);
    FILE *f;
    Status st = file_open_read(path, &f, e);
    if (st) return st;
    st = read_stream(f, path, max, text, buf, len, e);
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
