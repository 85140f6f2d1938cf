/* util/fileio.h — reading whole inputs and writing outputs atomically.
 *
 * Every report, CSV export and checkpoint goes through OutFile: data is written
 * to a temporary file in the target's directory and renamed over the target
 * only when complete, so a failed or interrupted run never leaves a
 * half-written file behind. The path "-" means stdout (no atomicity needed). */
#ifndef FP8PLAN_UTIL_FILEIO_H
#define FP8PLAN_UTIL_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    FILE *f;         /* write here */
    char path[4096]; /* final path ("-" for stdout) */
    char tmp[4096];  /* temporary path, empty for stdout */
} OutFile;

/* Open path for writing (or stdout for "-" or NULL). */
Status outfile_open(OutFile *o, const char *path, Err *e);

/* Flush, fsync and rename into place. On any failure the temporary file is
 * removed and the target is left untouched. Always closes o. */
Status outfile_commit(OutFile *o, Err *e);

/* Close and remove the temporary file without touching the target. */
void outfile_abort(OutFile *o);

/* Read a whole file ("-" = stdin) into a NUL-terminated malloc'd buffer.
 * *len excludes the terminator. Caller frees *buf. */
Status file_read_all(const char *path, char **buf, size_t *len, Err *e);

/* Read all of an open stream. */
Status stream_read_all(FILE *f, const char *name, char **buf, size_t *len, Err *e);

#ifdef __cplusplus
}
#endif
#endif
