/* util/outfile.c — the one output writer (rules in fileio.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"

enum { MAX_LINKS = 40, PATH_CAP = 4096, MAX_LIVE = 16, FIFO_WAIT_MS = 10000 };

struct OutSink {
    int fd;
    int err;            /* first write error (errno), 0 if none */
    char tmp[PATH_CAP]; /* the temporary file to remove on a signal, "" if none */
};

static int is_stdout(const char *path) { return !path || !strcmp(path, "-"); }

/* ---- paths --------------------------------------------------------------------------------------------- */

/* The directory part of p: "a/b" -> "a", "b" -> ".", "/b" -> "/". */
static void dir_of(const char *p, char *d, size_t n)
{
    const char *slash = strrchr(p, '/');
    if (!slash)
        snprintf(d, n, ".");
    else if (slash == p)
        snprintf(d, n, "/");
    else
        snprintf(d, n, "%.*s", (int)(slash - p), p);
}

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Follow symbolic links from path to the file they finally name, which need not exist (a dangling link
 * names the file to create). *exists: whether it does; *st: its lstat when it does. */
static Status resolve(const char *path, char out[PATH_CAP], struct stat *st, int *exists, Err *e)
{
    char link[PATH_CAP], dir[PATH_CAP];
    if (strlen(path) >= PATH_CAP) return err_set(e, ST_CANTCREAT, "cannot write %.200s...: path too long", path);
    snprintf(out, PATH_CAP, "%s", path);
    for (int hops = 0;; hops++) {
        if (lstat(out, st) != 0) {
            if (errno != ENOENT) return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(errno));
            *exists = 0;
            return ST_OK;
        }
        if (!S_ISLNK(st->st_mode)) {
            *exists = 1;
            return ST_OK;
        }
        if (hops == MAX_LINKS) return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(ELOOP));
        ssize_t k = readlink(out, link, sizeof link - 1);
        if (k < 0) return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(errno));
        link[k] = '\0';
        char next[PATH_CAP];
        dir_of(out, dir, sizeof dir);
        int n = link[0] == '/' ? snprintf(next, PATH_CAP, "%s", link) : snprintf(next, PATH_CAP, "%s/%s", dir, link);
        if (n >= PATH_CAP) return err_set(e, ST_CANTCREAT, "cannot write %s: its link target's path is too long", path);
        /* a link whose text names nothing but which opens (the kernel's /proc/self/fd/1 -> "pipe:[123]" behind
         * /dev/stdout) is the object it opens: stat follows it, and a pipe or device is written in place */
        struct stat real;
        if (lstat(next, &real) != 0 && errno == ENOENT && stat(out, &real) == 0) {
            *st = real;
            *exists = 1;
            return ST_OK;
        }
        memcpy(out, next, PATH_CAP);
    }
}

static const char *kind_word(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* Decide how path is written (o->kind, o->target); st/exists describe the target. Nothing is created. */
static Status plan_write(OutFile *o, const char *path, struct stat *st, int *exists, Err *e)
{
    if (!*path) return err_set(e, ST_USAGE, "empty output path");
    snprintf(o->path, sizeof o->path, "%s", path);
    Status s = resolve(path, o->target, st, exists, e);
    if (s) return s;
    if (!*exists) {
        size_t n = strlen(o->target);
        if (o->target[n - 1] == '/') return err_set(e, ST_CANTCREAT, "cannot write %s: it names a directory", path);
        o->kind = OUT_RENAME;
        return ST_OK;
    }
    if (S_ISREG(st->st_mode)) {
        o->kind = OUT_RENAME;
        if (access(o->target, W_OK) != 0) return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(errno));
        return ST_OK;
    }
    if (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) {
        o->kind = OUT_INPLACE;
        return ST_OK;
    }
    return err_set(e, ST_CANTCREAT,
                   "cannot write %s: it is %s (outputs go to regular files, character devices or FIFOs)", path,
                   kind_word(st->st_mode));
}

Status outfile_check(const char *path, Err *e)
{
    if (is_stdout(path)) return ST_OK;
    OutFile o; /* only its path fields are used */
    struct stat st;
    int exists;
    Status s = plan_write(&o, path, &st, &exists, e);
    if (s) return s;
    if (o.kind == OUT_INPLACE) {
        if (access(o.target, W_OK) != 0) return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(errno));
        return ST_OK;
    }
    char dir[PATH_CAP];
    struct stat ds;
    dir_of(o.target, dir, sizeof dir);
    if (stat(dir, &ds) != 0) return err_set(e, ST_CANTCREAT, "cannot write %s: %s: %s", path, dir, strerror(errno));
    if (!S_ISDIR(ds.st_mode)) return err_set(e, ST_CANTCREAT, "cannot write %s: %s is not a directory", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return err_set(e, ST_CANTCREAT, "cannot write %s: cannot create files in %s: %s", path, dir, strerror(errno));
    return ST_OK;
}

int path_same_file(const char *a, const char *b)
{
    if (is_stdout(a) || is_stdout(b)) return 0;
    char ta[PATH_CAP], tb[PATH_CAP], da[PATH_CAP], db[PATH_CAP];
    struct stat sa, sb;
    int ea, eb;
    if (resolve(a, ta, &sa, &ea, NULL) || resolve(b, tb, &sb, &eb, NULL)) return 0;
    if (ea && eb) return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb) return 0; /* one exists, the other does not */
    dir_of(ta, da, sizeof da);
    dir_of(tb, db, sizeof db);
    if (strcmp(base_of(ta), base_of(tb)) || stat(da, &sa) || stat(db, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- temporary files removed on a fatal signal ----------------------------------------------------------- */

static OutSink *volatile live[MAX_LIVE];

/* The group's phase, shared with the signal handlers of every thread: IDLE, RENAMING (outfile_group_end
 * puts the set in place; a fatal signal waits for it) or DYING (a handler removes the temporary files:
 * nothing may be renamed any more). */
enum { PH_IDLE, PH_RENAMING, PH_DYING };
static atomic_int phase = PH_IDLE;
static volatile sig_atomic_t deferred_sig; /* a fatal signal that came while the set was renamed */

void outfile_die_of_signal(int sig)
{
    int idle = PH_IDLE;
    if (!atomic_compare_exchange_strong(&phase, &idle, PH_DYING)) {
        if (atomic_load(&phase) == PH_RENAMING) {
            deferred_sig = sig; /* outfile_group_end ends the process once the set is whole */
            return;
        }
    } else {
        for (int i = 0; i < MAX_LIVE; i++)
            if (live[i] && live[i]->tmp[0]) unlink(live[i]->tmp);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void track(OutSink *s, int on)
{
    static int installed;
    if (on && !installed) { /* only where nobody else handles the signal */
        const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction old, sa;
            if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL) continue;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = outfile_die_of_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, NULL);
        }
        installed = 1;
    }
    for (int i = 0; i < MAX_LIVE; i++)
        if (on ? !live[i] : live[i] == s) {
            live[i] = on ? s : NULL;
            return;
        }
}

/* ---- the stream: a FILE over our descriptor that remembers the first write error ---------------------------- */

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    OutSink *s = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(s->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (!s->err) s->err = k < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

/* A name beside the target that does not exist yet: "<target>.tmp.XXXXXX" (the base name cut to keep it
 * within NAME_MAX). */
static int open_temp(OutFile *o, mode_t mode)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static unsigned counter;
    char dir[PATH_CAP];
    dir_of(o->target, dir, sizeof dir);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int tries = 0; tries < 100; tries++) {
        uint64_t r = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)++counter * 0x9E3779B97F4A7C15ull);
        char suf[7];
        for (int i = 0; i < 6; i++, r /= 62) suf[i] = digits[r % 62];
        suf[6] = '\0';
        int n = snprintf(o->tmp, sizeof o->tmp, "%s/%.200s.tmp.%s", dir, base_of(o->target), suf);
        if (n >= (int)sizeof o->tmp) return errno = ENAMETOOLONG, -1;
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return errno = EEXIST, -1;
}

Status outfile_open_flags(OutFile *o, const char *path, unsigned flags, Err *e)
{
    memset(o, 0, sizeof *o);
    o->flags = flags;
    if (is_stdout(path)) {
        o->f = stdout;
        o->kind = OUT_STDOUT;
        snprintf(o->path, sizeof o->path, "-");
        return ST_OK;
    }
    struct stat st;
    int exists, fd;
    Status s = plan_write(o, path, &st, &exists, e);
    if (s) return s;
    if (o->kind == OUT_INPLACE) {
        /* a FIFO: wait a while for its reader (`fp8plan -o p & cat p` races), never forever; OUT_NOWAIT
         * (the TUI) not at all */
        const int limit = flags & OUT_NOWAIT ? 0 : FIFO_WAIT_MS;
        const double start = file_clock_ms(); /* by the clock, not the polls (util/fileio.h) */
        while ((fd = open(o->target, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)) < 0 && errno == ENXIO &&
               file_clock_ms() - start < limit) {
            nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
        }
        if (fd < 0 && errno == ENXIO)
            return err_set(e, ST_CANTCREAT, "cannot write %s: no process is reading this FIFO%s", path,
                           limit ? " (waited 10 s)" : "");
        if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); /* writes block as usual */
        struct stat now;
        if (fd >= 0 && (fstat(fd, &now) || !(S_ISCHR(now.st_mode) || S_ISFIFO(now.st_mode)))) {
            close(fd);
            return err_set(e, ST_CANTCREAT, "cannot write %s: it changed while being opened", path);
        }
    } else {
        fd = open_temp(o, exists ? st.st_mode & 0777 : 0666); /* 0666 & ~umask for a new file */
        if (fd >= 0 && exists) { /* keep the owner where allowed, then the mode (chown clears set-id bits) */
            mode_t mode = st.st_mode & 07777;
            if ((st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, st.st_uid, st.st_gid) != 0)
                mode &= 0777;
            if (fchmod(fd, mode) != 0) { /* best effort, as for the mode bits of a new file */
            }
        }
    }
    if (fd < 0) {
        int err = errno;
        o->tmp[0] = '\0';
        if (o->kind == OUT_RENAME) {
            char dir[PATH_CAP];
            dir_of(o->target, dir, sizeof dir);
            return err_set(e, ST_CANTCREAT, "cannot write %s: cannot create a file in %s: %s", path, dir,
                           strerror(err));
        }
        return err_set(e, ST_CANTCREAT, "cannot write %s: %s", path, strerror(err));
    }
    o->sink = calloc(1, sizeof *o->sink);
    if (o->sink) {
        o->sink->fd = fd;
        snprintf(o->sink->tmp, sizeof o->sink->tmp, "%s", o->tmp);
        o->f = fopencookie(o->sink, "w", (cookie_io_functions_t){.write = sink_write});
    }
    if (!o->f) {
        if (o->tmp[0]) unlink(o->tmp);
        close(fd);
        free(o->sink);
        memset(o, 0, sizeof *o);
        return err_set(e, ST_NOMEM, "out of memory opening %s", path);
    }
    if (o->tmp[0]) track(o->sink, 1);
    return ST_OK;
}

Status outfile_open(OutFile *o, const char *path, Err *e) { return outfile_open_flags(o, path, 0, e); }

/* fsync the directory holding path, so the rename itself survives a crash. */
static int sync_dir(const char *path)
{
    char dir[PATH_CAP];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Close f and the descriptor; returns the first error (errno value) or 0. */
static int close_sink(OutFile *o, int flush_ok)
{
    OutSink *s = o->sink;
    int err = 0;
    if (!flush_ok || ferror(o->f)) err = s->err ? s->err : EIO;
    fclose(o->f);
    if (!err && s->err) err = s->err;
    if (!err && o->kind == OUT_RENAME && (o->flags & OUT_DURABLE) && fsync(s->fd) != 0) err = errno;
    if (close(s->fd) != 0 && !err && errno != EINTR) err = errno;
    o->f = NULL;
    return err;
}

static void release(OutFile *o)
{
    if (o->sink) track(o->sink, 0);
    free(o->sink);
    o->sink = NULL;
    o->f = NULL;
    o->tmp[0] = '\0';
}

/* ---- a group of outputs put in place together ---------------------------------------------------------- */

typedef struct {
    OutSink *sink; /* still tracked: its temporary file is removed if a signal ends the process */
    unsigned flags;
    char target[PATH_CAP], path[PATH_CAP];
} Pending;

static struct {
    int open, n;
    Pending p[MAX_LIVE];
} group;

void outfile_group_begin(void) { group.open = 1, group.n = 0; }

/* Keep o's finished temporary file for outfile_group_end. */
static Status group_defer(OutFile *o, Err *e)
{
    if (group.n == MAX_LIVE) {
        unlink(o->tmp);
        release(o);
        return err_set(e, ST_SOFTWARE, "cannot write %s: more than %d files in one group", o->path, MAX_LIVE);
    }
    Pending *p = &group.p[group.n++];
    p->sink = o->sink, p->flags = o->flags;
    snprintf(p->target, sizeof p->target, "%s", o->target);
    snprintf(p->path, sizeof p->path, "%s", o->path);
    o->sink = NULL, o->f = NULL, o->tmp[0] = '\0';
    return ST_OK;
}

Status outfile_group_end(int commit, Err *e)
{
    int err = 0, k = 0, idle = PH_IDLE;
    group.open = 0;
    if (commit && !atomic_compare_exchange_strong(&phase, &idle, PH_RENAMING))
        commit = 0; /* a signal is ending the process: its handler removes the temporary files */
    for (; commit && !err && k < group.n; k++)
        if (rename(group.p[k].sink->tmp, group.p[k].target) != 0) err = errno;
    if (commit) {
        for (int i = 0; i < k; i++) group.p[i].sink->tmp[0] = '\0'; /* in place: not a temporary any more */
        atomic_store(&phase, PH_IDLE);
        if (deferred_sig) outfile_die_of_signal(deferred_sig); /* the set is whole; the rest removed there */
    }
    for (int i = 0; i < group.n; i++) {
        Pending *p = &group.p[i];
        if (p->sink->tmp[0])
            unlink(p->sink->tmp);
        else if ((p->flags & OUT_DURABLE) && sync_dir(p->target) != 0 && !err)
            err = errno;
        track(p->sink, 0);
        free(p->sink);
    }
    Status st = err ? err_set(e, ST_IO, "cannot write %s: %s", group.p[k ? k - 1 : 0].path, strerror(err)) : ST_OK;
    group.n = 0;
    return st;
}

Status outfile_commit(OutFile *o, Err *e)
{
    if (!o->f) return err_set(e, ST_SOFTWARE, "outfile_commit on a closed file");
    if (o->kind == OUT_STDOUT) {
        o->f = NULL;
        return stdout_close_check(e);
    }
    int err = close_sink(o, fflush(o->f) == 0);
    if (o->kind == OUT_RENAME && !err && group.open) return group_defer(o, e);
    if (o->kind == OUT_RENAME) {
        if (!err && rename(o->tmp, o->target) != 0) err = errno;
        if (err) unlink(o->tmp);
        if (!err && (o->flags & OUT_DURABLE) && sync_dir(o->target) != 0) err = errno;
    }
    release(o);
    if (err) return err_set(e, ST_IO, "cannot write %s: %s", o->path, strerror(err));
    return ST_OK;
}

void outfile_abort(OutFile *o)
{
    if (o->f && o->kind == OUT_STDOUT) {
        fflush(o->f);
    } else if (o->f) {
        close_sink(o, 1);
        if (o->kind == OUT_RENAME) unlink(o->tmp);
    }
    release(o);
}

Status outfile_finish(OutFile *o, Status st, Err *e)
{
    if (!st) return outfile_commit(o, e);
    if (st == ST_IO && o->kind == OUT_STDOUT) {
        if (!stdout_close_check(e)) err_set(e, ST_IO, "cannot write standard output: write error");
    } else if (st == ST_IO && o->sink && o->sink->err) {
        err_set(e, ST_IO, "cannot write %s: %s", o->path, strerror(o->sink->err));
    }
    outfile_abort(o);
    return st;
}

Status stdout_close_check(Err *e)
{
    errno = 0;
    int bad = fflush(stdout) != 0, err = errno;
    if (!bad && !ferror(stdout)) return ST_OK;
    clearerr(stdout);
    return err_set(e, ST_IO, "cannot write standard output: %s", err ? strerror(err) : "write error");
}
