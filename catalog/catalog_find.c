/* catalog/catalog_find.c — finding models/ and loading its core files (see catalog_find.h). */
#include "catalog/catalog_find.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"

static int readable(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/models.csv", dir);
    return access(path, R_OK) == 0;
}

/* models/ beside the directory holding the binary: build/fp8plan -> ./models. */
static int exe_catalog(char *dir, size_t size)
{
    char exe[3072];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    snprintf(dir, size, "%.3000s/models", exe);
    return readable(dir);
}

Status catalog_find(const char *dir, char *found, size_t size, Err *e)
{
    const char *env = getenv("FP8PLAN_CATALOG");
    if (dir && !*dir) return err_set(e, ST_USAGE, "--catalog: empty (give a directory holding models.csv)");
    if (dir) {
        snprintf(found, size, "%s", dir);
    } else if (env && *env) {
        snprintf(found, size, "%s", env);
    } else if (readable("models")) {
        snprintf(found, size, "models");
    } else if (!exe_catalog(found, size)) {
        return err_set(e, ST_NOINPUT,
                       "cannot find the catalog (models/models.csv); pass --catalog DIR or set FP8PLAN_CATALOG");
    }
    return ST_OK;
}

enum { CATALOG_FILE_MAX = 16 << 20 }; /* bytes of one catalog file: 256 rows are a few hundred KB */

static Status load_one(Catalog *c, const char *dir, const char *file,
                       Status (*parse)(Catalog *, const char *, size_t, const char *, Err *), Err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *buf;
    size_t len;
    Status st = file_read_max(path, CATALOG_FILE_MAX, &buf, &len, e);
    if (st) return st;
    st = parse(c, buf, len, path, e);
    free(buf);
    return st;
}

Status catalog_load(const char *dir, Catalog **out, Err *e)
{
    char found[4096];
    Status st = catalog_find(dir, found, sizeof found, e);
    if (st) return st;
    Catalog *c = calloc(1, sizeof *c);
    if (!c) return err_set(e, ST_NOMEM, "out of memory");
    st = load_one(c, found, "models.csv", catalog_parse_models, e);
    if (!st) st = load_one(c, found, "gpus.csv", catalog_parse_gpus, e);
    if (!st) st = load_one(c, found, "recipes.csv", catalog_parse_recipes, e);
    if (!st) st = load_one(c, found, "stacks.csv", catalog_parse_stacks, e);
    char links[4200]; /* optional: a host profile's collective fits (fp8plan calibrate under mpirun) */
    snprintf(links, sizeof links, "%s/links.csv", found);
    if (!st && access(links, F_OK) == 0) st = load_one(c, found, "links.csv", catalog_parse_links, e);
    if (st) {
        free(c);
        return st;
    }
    *out = c;
    return ST_OK;
}
