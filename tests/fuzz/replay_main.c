/* tests/fuzz/replay_main.c — a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput over the files
 * named on the command line (a seed corpus), so `make test`, and its ASan/UBSan build, exercise every
 * target on every CI run (tests/cli/fuzz_replay.sh). Prints "N inputs" on the original stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int main(int argc, char **argv)
{
    FILE *out = fdopen(dup(STDOUT_FILENO), "w"); /* a target may send stdout to /dev/null */
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(out, "cannot open %s\n", argv[i]);
            return 2;
        }
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees reads past the end */
        for (size_t k = 0; k < len; k++) copy[k] = buf[k];
        LLVMFuzzerTestOneInput(copy, len);
        free(copy);
        n++;
    }
    fprintf(out, "%d inputs\n", n);
    fclose(out);
    return 0;
}
