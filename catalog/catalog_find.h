/* catalog/catalog_find.h — where models/ is, and loading its four core files into a Catalog.
 *
 * The search: the directory given (--catalog DIR), else $FP8PLAN_CATALOG, else ./models when it holds
 * models.csv, else models/ beside the directory holding the running binary (build/fp8plan -> models/). */
#ifndef FP8PLAN_CATALOG_CATALOG_FIND_H
#define FP8PLAN_CATALOG_CATALOG_FIND_H

#include <stddef.h>

#include "catalog/catalog.h"
#include "util/status.h"

/* The catalog directory into found. ST_USAGE for an empty dir, ST_NOINPUT when the search finds none. */
Status catalog_find(const char *dir, char *found, size_t size, Err *e);

/* models.csv, gpus.csv, recipes.csv, stacks.csv and (when present) links.csv of the directory catalog_find
 * finds, into a calloc'd catalog (*out, the caller frees it). catalog_find's errors, ST_NOINPUT for a file
 * that does not open, the parsers' ST_DATA naming the file's path, ST_NOMEM. */
Status catalog_load(const char *dir, Catalog **out, Err *e);

#endif
