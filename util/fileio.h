/* util/fileio.h — reading whole inputs, and the one output writer.
 *
 * Every report, CSV export, trace, screen dump and checkpoint goes through
 * OutFile, which writes the way Unix tools do:
 *   - "-" (or NULL) is standard output;
 *   - a regular file (or a path that does not exist yet) gets a temporary file
 *     beside it, renamed over it only when complete, so a failed or
 *     interrupted run never leaves a half-written file; an existing file keeps
 *     its permission bits (and owner, where allowed), a new one is created
 *     0666 & ~umask;
 *   - a symbolic link is followed: its final target is replaced, never the link
 *     (a kernel link that names no file but opens, /proc/self/fd/1 -> "pipe:[N]"
 *     behind /dev/stdout, is the object it opens);
 *   - a character device, FIFO or pipe (-o /dev/null, -o /dev/stdout on a
 *     terminal or a pipe, a named pipe) is written in place, never replaced (a
 *     FIFO waits up to 10 s for a reader, then fails: never a hang);
 *   - a directory, block device or socket is refused with the reason.
 * Every write error is reported when the file is committed ("cannot write
 * /dev/full: No space left on device"). OUT_DURABLE (checkpoints) also fsyncs
 * the data before the rename and the directory after it. A temporary file is
 * removed on error, on outfile_abort and when SIGINT, SIGTERM or SIGHUP ends
 * the process while it is open (unless the program handles those itself: its
 * handler then calls outfile_die_of_signal when it gives up). */
#ifndef FP8PLAN_UTIL_FILEIO_H
#define FP8PLAN_UTIL_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    OUT_STDOUT,  /* "-": standard output */
    OUT_RENAME,  /* regular or new file: temporary file + rename */
    OUT_INPLACE, /* character device or FIFO: written directly */
} OutKind;

enum {
    OUT_DURABLE = 1 << 0, /* fsync data and directory (checkpoints) */
    OUT_NOWAIT = 1 << 1,  /* a FIFO without a reader is an error at once, without the 10 s wait (the TUI) */
};

typedef struct OutSink OutSink;

typedef struct {
    FILE *f;           /* write here */
    OutKind kind;      /* how the data reaches the target */
    unsigned flags;    /* OUT_DURABLE */
    char path[4096];   /* the path as given ("-" for stdout), for messages */
    char target[4096]; /* the file written: path with symbolic links followed */
    char tmp[4096];    /* temporary path (OUT_RENAME while open), else empty */
    OutSink *sink;     /* the descriptor behind f and its first write error */
} OutFile;

/* Open path for writing (stdout for "-" or NULL). ST_USAGE for an empty path,
 * ST_CANTCREAT (naming the path and the reason) when it cannot be written. */
Status outfile_open(OutFile *o, const char *path, Err *e);
Status outfile_open_flags(OutFile *o, const char *path, unsigned flags, Err *e);

/* Flush (and for OUT_DURABLE fsync) and put the data in place. On any failure
 * (ST_IO with the system's reason) the temporary file is removed and the
 * target left untouched. Always closes o. */
Status outfile_commit(OutFile *o, Err *e);

/* A set of outputs that lands whole (a run's loss log, trace, checkpoint and
 * report). After outfile_group_begin, outfile_commit of a file that is renamed
 * into place writes, flushes (and syncs) it but keeps its temporary file;
 * outfile_group_end(1, e) renames them all, in the order committed, while a
 * fatal signal waits (the handler ends the process once the last is in place),
 * and outfile_group_end(0, e) removes them. A signal before the renames
 * removes every temporary file, as for any open file: the targets are all old
 * or all new. A file written in place (stdout, a device, a FIFO) is not held
 * back. At most 16 files; not nested. */
void outfile_group_begin(void);
Status outfile_group_end(int commit, Err *e);

/* Close and remove the temporary file without touching the target. */
void outfile_abort(OutFile *o);

/* For a program's own SIGINT/SIGTERM handler when it gives up (async-signal
 * safe): remove every open temporary file, then end the process with sig's
 * default action. */
void outfile_die_of_signal(int sig);

/* End a write whose rendering returned st: commit when st is ST_OK, else
 * abort. A renderer's ST_IO ("write error") becomes the writer's own message
 * with the path and the system's reason. Returns the final status. */
Status outfile_finish(OutFile *o, Status st, Err *e);

/* Would outfile_open(path) succeed? Checks everything it can without creating
 * or opening anything (so a FIFO is not opened): the path is not empty, not a
 * directory, block device or socket, its directory exists and is writable,
 * an existing file or device is writable. For checks before long work. */
Status outfile_check(const char *path, Err *e);

/* 1 when paths a and b would write to or read from the same regular file
 * (after following symbolic links; a path that does not exist yet is compared
 * by its directory and name), else 0. Devices and FIFOs never collide. */
int path_same_file(const char *a, const char *b);

/* The most a whole-file read takes in (1 GiB): `--trace /dev/zero` fails with ST_DATA
 * after reading that much instead of filling the memory. */
#define FILE_READ_MAX ((size_t)1 << 30)

/* Milliseconds on the monotonic clock. A FIFO's wait for its other end (here and util/outfile.c) is timed by
 * it, not by counting its polls: each poll's sleep overruns on a busy machine (at a load of 10-15 on 2 cores
 * the 1,000 sleeps of 10 ms of a wait stated as 10 s took 10.9 to 25.4 s in 6 tries; by the clock 10.0 s). */
double file_clock_ms(void);

/* Open path for reading. A FIFO waits up to 10 s for a writer (then ST_NOINPUT "no process is writing to
 * this FIFO"), never forever; a pipe that already has one (`--trace <(cmd)`) reads at once. ST_NOINPUT
 * naming the path and the reason when it cannot be opened. */
Status file_open_read(const char *path, FILE **f, Err *e);

/* Read a whole file ("-" = stdin) into a NUL-terminated malloc'd buffer.
 * *len excludes the terminator. Caller frees *buf. ST_DATA past FILE_READ_MAX
 * (file_read_max: past max bytes), naming the file. */
Status file_read_all(const char *path, char **buf, size_t *len, Err *e);
Status file_read_max(const char *path, size_t max, char **buf, size_t *len, Err *e);

/* Read all of an open stream (the same limits). */
Status stream_read_all(FILE *f, const char *name, char **buf, size_t *len, Err *e);
Status stream_read_max(FILE *f, const char *name, size_t max, char **buf, size_t *len, Err *e);

/* The same for text (a CSV file, numbers on stdin): ST_DATA "name:LINE: NUL
 * byte" as soon as a NUL byte is read. */
Status file_read_text(const char *path, size_t max, char **buf, size_t *len, Err *e);
Status stream_read_text(FILE *f, const char *name, char **buf, size_t *len, Err *e);

/* Flush and check standard output at the end of a command: ST_IO with the
 * reason when anything written to it was lost (a full disk, a closed pipe). */
Status stdout_close_check(Err *e);

#ifdef __cplusplus
}
#endif
#endif
