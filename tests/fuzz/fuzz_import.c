/* tests/fuzz/fuzz_import.c — users' own files on arbitrary bytes: the first byte picks a Megatron-LM
 * argument list, a Megatron-LM model_config.yaml, a Megatron-Bridge YAML, a torchtitan TOML (each read
 * and mapped to plan flags and a model, import/import.h) or a training log / golden values file
 * (import/runlog.h, then its median step after a warm-up of 1). Nothing may crash, leak or read past the
 * text; an accepted model has non-zero dimensions and whole heads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"
#include "import/runlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t len = size - 1;
    char *text = malloc(len + 1); /* NUL-terminated, as a file read gives it */
    if (!text) return 0;
    memcpy(text, data + 1, len);
    text[len] = '\0';
    static const struct {
        const char *name;
        ImportFormat fmt;
    } kinds[] = {
        {"f.sh", IMPORT_AUTO}, {"f.yaml", IMPORT_MEGATRON}, {"f.yaml", IMPORT_BRIDGE}, {"f.toml", IMPORT_AUTO}};
    Err e;
    unsigned k = data[0] % 5;
    if (k < 4) {
        static ImportResult r;
        if (import_parse(kinds[k].name, text, len, kinds[k].fmt, &r, &e) == ST_OK) {
            if (r.have_model && (!r.model.layers || !r.model.hidden || !r.model.heads || !r.model.head_dim ||
                                 !r.model.vocab || r.model.heads % r.model.kv_heads))
                abort();
            if (r.argc > IMPORT_MAX_FLAGS) abort();
            import_free(&r);
        }
    } else {
        RunLog l;
        if (runlog_parse("f.log", text, len, &l, &e) == ST_OK) {
            double med;
            size_t used;
            if (runlog_median_step(&l, 1, &med, &used, &e) == ST_OK && !(med >= 0)) abort();
            runlog_free(&l);
        }
    }
    free(text);
    return 0;
}
