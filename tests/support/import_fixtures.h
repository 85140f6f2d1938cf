/* tests/support/import_fixtures.h — what the import tests share: the flags an import made, as one string. */
#ifndef FP8PLAN_TESTS_SUPPORT_IMPORT_FIXTURES_H
#define FP8PLAN_TESTS_SUPPORT_IMPORT_FIXTURES_H

#include "import/import.h"

/* r's flags joined by single spaces ("--stack megatron-lm --tp 2 ..."), in a static buffer of 2,048 bytes that the
 * next call overwrites (a longer list is cut there). */
const char *fx_import_flags(const ImportResult *r);

#endif
