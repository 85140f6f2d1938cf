/* catalog/catalog.h — models/, GPUs and recipes parsed from CSV text.
 *
 * The planner never opens files: the caller reads models/models.csv (etc.)
 * and hands the text and the file name (used only in error messages) to the
 * parse functions below. Parsing is strict (libcsv in strict mode): the header
 * must name every required column exactly once and nothing else, each row must
 * have as many fields as the header, numbers are parsed by util/num.h (no
 * "-1", "1e400", "nan", trailing junk), names are unique. Every error names the
 * file, the row (the header is row 1) and the column, and quotes the value. */
#ifndef FP8PLAN_CATALOG_CATALOG_H
#define FP8PLAN_CATALOG_CATALOG_H

#include <stddef.h>

#include "planner/recipe.h"
#include "planner/spec.h"
#include "planner/stack.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CATALOG_MAX_ROWS = 256, CATALOG_MAX_STACKS = 32 };

/* Caller-owned; about 2.2 MB, so allocate it (calloc) rather than put it on the stack. */
typedef struct {
    ModelSpec models[CATALOG_MAX_ROWS];
    int nmodels;
    GpuSpec gpus[CATALOG_MAX_ROWS];
    int ngpus;
    Recipe recipes[CATALOG_MAX_ROWS];
    int nrecipes;
    StackSpec stacks[CATALOG_MAX_STACKS];
    int nstacks;
} Catalog;

/* Column lists, comma-separated, in the order the shipped files use. */
extern const char *const catalog_model_columns;
extern const char *const catalog_gpu_columns;
extern const char *const catalog_recipe_columns;
extern const char *const catalog_stack_columns;
extern const char *const catalog_link_columns;

/* Parse `len` bytes of CSV text into the catalog (replacing what the same
 * kind held before). ST_DATA with a message naming fname:row and the column on
 * any bad cell; ST_OVERFLOW past 2^64. Recipes resolve `other_params` against
 * the recipes of the same text. */
Status catalog_parse_models(Catalog *c, const char *text, size_t len, const char *fname, Err *e);
Status catalog_parse_gpus(Catalog *c, const char *text, size_t len, const char *fname, Err *e);
Status catalog_parse_recipes(Catalog *c, const char *text, size_t len, const char *fname, Err *e);
/* models/stacks.csv (catalog/catalog_stack.c). */
Status catalog_parse_stacks(Catalog *c, const char *text, size_t len, const char *fname, Err *e);
/* links.csv (catalog/catalog_links.c; optional): a host profile's collective fits, attached to the gpus.csv
 * rows they name (parse gpus.csv first). ST_DATA naming the row and column for a format version other than 1,
 * a device that is not a host row of gpus.csv, a range that overlaps another of the same op and path. */
Status catalog_parse_links(Catalog *c, const char *text, size_t len, const char *fname, Err *e);

/* Lookup by exact (case-insensitive) name; NULL when absent. */
const ModelSpec *catalog_model(const Catalog *c, const char *name);
const GpuSpec *catalog_gpu(const Catalog *c, const char *name);
const Recipe *catalog_recipe(const Catalog *c, const char *name);
const StackSpec *catalog_stack(const Catalog *c, const char *name); /* by name or alias */

/* "name1, name2, ..." of one kind into buf (for "unknown model 'x'; known: ..."). */
void catalog_model_names(const Catalog *c, char *buf, size_t size);
void catalog_gpu_names(const Catalog *c, char *buf, size_t size);
void catalog_recipe_names(const Catalog *c, char *buf, size_t size);
void catalog_stack_names(const Catalog *c, char *buf, size_t size);

/* The stack plan, compare, sweep and report use when none is named. */
#define CATALOG_DEFAULT_STACK "megatron-core"

#ifdef __cplusplus
}
#endif
#endif
