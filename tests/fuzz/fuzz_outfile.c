/* tests/fuzz/fuzz_outfile.c — the one output writer under arbitrary sequences of targets and endings.
 * Each input is a list of steps (3 bytes each and some data): pick a target (a new file, an existing
 * file with some mode, a symbolic link to a file, a dangling link, /dev/null, a directory, a path in a
 * missing directory), write up to 255 bytes, then commit, abort, or finish with a renderer's write
 * error. After each step: a committed regular target holds exactly the bytes written (through its
 * link, which stays a link) and keeps its mode; an aborted or failed one is untouched; a refused
 * target reports ST_CANTCREAT or ST_USAGE; no temporary file is ever left in the directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return (size_t)-1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void no_temporaries(void)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    while ((ent = readdir(d)))
        if (strstr(ent->d_name, ".tmp.")) abort();
    closedir(d);
}

static void cleanup(void)
{
    static const char *const names[] = {"real.csv", "link.csv", "sub"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (unlink(p)) rmdir(p);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.30s/fp8plan-fuzz-outfile-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        if (mkdir(dir, 0700)) abort();
        atexit(cleanup);
    }
    char path[128], real[128], sub[128];
    snprintf(real, sizeof real, "%s/real.csv", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    for (size_t i = 0; i + 3 <= size;) {
        uint8_t kind = data[i] % 7, how = data[i + 1] % 3, n = data[i + 2];
        i += 3;
        size_t len = n < size - i ? n : size - i;
        const char *bytes = (const char *)data + i;
        i += len;
        unlink(real);
        snprintf(path, sizeof path, "%s/link.csv", dir);
        unlink(path);
        rmdir(sub);
        mode_t mode = 0600 | (kind & 1 ? 044 : 0);
        int regular = 1;
        switch (kind) {
        case 0: snprintf(path, sizeof path, "%s", real); break; /* new */
        case 1:
        case 2:
            put(real, "before", mode);
            snprintf(path, sizeof path, "%s", real);
            break;
        case 3:
            put(real, "before", mode);
            if (symlink("real.csv", path)) abort();
            break;
        case 4:
            if (symlink("real.csv", path)) abort(); /* dangling: creates real.csv */
            break;
        case 5:
            snprintf(path, sizeof path, "%s", n & 1 ? "/dev/null" : sub);
            regular = 0;
            if (!strcmp(path, sub)) mkdir(sub, 0700); /* a directory: refused */
            break;
        default: snprintf(path, sizeof path, "%s/missing/x.csv", dir), regular = 0; break;
        }
        int existed = kind >= 1 && kind <= 3;
        OutFile o;
        Err e;
        Status st = outfile_open(&o, path, &e);
        if (!regular && strcmp(path, "/dev/null")) {
            if (st != ST_CANTCREAT) abort();
            no_temporaries();
            continue;
        }
        if (st) abort();
        fwrite(bytes, 1, len, o.f);
        if (how == 0)
            st = outfile_commit(&o, &e);
        else if (how == 1)
            outfile_abort(&o);
        else if (outfile_finish(&o, ST_IO, &e) != ST_IO)
            abort();
        no_temporaries();
        if (!regular) continue;
        char got[300];
        size_t g = slurp(real, got, sizeof got);
        struct stat sb;
        if (how == 0) {
            if (st || g != len || memcmp(got, bytes, len)) abort();
            if (stat(real, &sb) || (existed && (sb.st_mode & 0777) != mode)) abort();
        } else if (existed) {
            if (g != 6 || memcmp(got, "before", 6)) abort();
        } else if (g != (size_t)-1) {
            abort(); /* nothing may appear */
        }
        if (kind == 3 || kind == 4) {
            if (lstat(path, &sb) || !S_ISLNK(sb.st_mode)) abort();
        }
    }
    return 0;
}
