/*  gateway_fuzz_replay.c — runs the gateway fuzz target without libFuzzer,
    so that the normal test suite (gcc, sanitizers) runs it too: every file
    of the seed corpus, then a fixed number of pseudo-random mutations of
    them, from a fixed seed, so that a failure replays. A finding aborts,
    as under libFuzzer; the input that caused it is written first (see
    --crash-dir), and replays with this program or the libFuzzer binary.

    Usage:
        gateway_fuzz_replay [options] PATH...     files, or directories of them
        gateway_fuzz_replay --write-seeds DIR     writes the seed corpus

    Options:
        --mutations N      mutated inputs to run after the files (default 0)
        --seed N           the mutations' seed (default S_DEFAULT_SEED)
        --max-seconds N    stop the mutations after N seconds, passing
        --expect-reach     fail unless the files reached every fairqd actor
                           that may be reached from a peer (with fairqd's
                           admission table, only the dispatcher)
        --crash-dir DIR    where each input is written before it runs
                           (default the current directory), as
                           gateway-fuzz-last-input
*/
#include "gateway_fuzz.h"
#include "fq_pipeline.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

//  The mutations' default seed: any fixed number replays the same inputs.
#define S_DEFAULT_SEED 0x5eed2024u

//  The longest input, as libFuzzer's default -max_len.
#define S_INPUT_MAX 4096

//  Mutations applied to one input, at most.
#define S_MUTATIONS_PER_INPUT 4

//  The name the input about to run is saved under.
#define S_LAST_INPUT "gateway-fuzz-last-input"

typedef struct {
    uint8_t *data;
    size_t size;
} s_input_t;

typedef struct {
    s_input_t *items;
    size_t count, capacity;
} s_inputs_t;

//  xorshift64: small, and the same sequence on every machine.
static uint64_t s_next(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int s_add_file(s_inputs_t *inputs, const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "gateway_fuzz_replay: could not open %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *data = malloc(S_INPUT_MAX);
    size_t size = data ? fread(data, 1, S_INPUT_MAX, file) : 0;
    fclose(file);
    if (!data)
        return -1;
    if (inputs->count == inputs->capacity) {
        size_t capacity = inputs->capacity ? inputs->capacity * 2 : 256;
        s_input_t *items = realloc(inputs->items, capacity * sizeof *items);
        if (!items) {
            free(data);
            return -1;
        }
        inputs->items = items;
        inputs->capacity = capacity;
    }
    inputs->items[inputs->count++] = (s_input_t){data, size};
    return 0;
}

//  A file, or every file of a directory in name order.
static int s_add_path(s_inputs_t *inputs, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "gateway_fuzz_replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return s_add_file(inputs, path);
    struct dirent **entries;
    int n = scandir(path, &entries, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "gateway_fuzz_replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char file[PATH_MAX];
        snprintf(file, sizeof file, "%s/%s", path, entries[i]->d_name);
        if (rc == 0 && entries[i]->d_name[0] != '.' && stat(file, &st) == 0 && S_ISREG(st.st_mode))
            rc = s_add_file(inputs, file);
        free(entries[i]);
    }
    free(entries);
    return rc;
}

//  Bytes that mean something in msgpack and in the frame prefix: nil,
//  false, true, the empty and the largest fixarray, fixmap and fixstr,
//  the 32-bit array, map and string heads, the largest positive and the
//  smallest negative fixint, and 0x80/0xff as a prefix's first byte.
static const uint8_t s_interesting[] = {0xc0, 0xc2, 0xc3, 0x90, 0x9f, 0x80, 0x8f, 0xa0, 0xbf,
                                        0xdd, 0xdf, 0xdb, 0x7f, 0xe0, 0xff, 0x00, 0x01};

//  Mutates data (size bytes, room for S_INPUT_MAX) in place, the way
//  libFuzzer's simplest mutators do; returns the new size.
static size_t s_mutate(uint8_t *data, size_t size, const s_inputs_t *inputs, uint64_t *state)
{
    int count = 1 + (int)(s_next(state) % S_MUTATIONS_PER_INPUT);
    for (int m = 0; m < count; m++) {
        size_t at = size ? s_next(state) % size : 0;
        switch (s_next(state) % 7) {
        case 0: //  Flip a bit
            if (size)
                data[at] ^= (uint8_t)(1u << (s_next(state) % 8));
            break;
        case 1: //  An interesting byte
            if (size)
                data[at] = s_interesting[s_next(state) % sizeof s_interesting];
            break;
        case 2: //  Insert a random byte
            if (size < S_INPUT_MAX) {
                memmove(data + at + 1, data + at, size - at);
                data[at] = (uint8_t)s_next(state);
                size++;
            }
            break;
        case 3: { //  Erase a few bytes
            size_t len = size ? 1 + s_next(state) % 8 : 0;
            if (at + len > size)
                len = size - at;
            memmove(data + at, data + at + len, size - at - len);
            size -= len;
            break;
        }
        case 4: { //  Append another input: its frames follow these
            const s_input_t *other = &inputs->items[s_next(state) % inputs->count];
            size_t len = other->size < S_INPUT_MAX - size ? other->size : S_INPUT_MAX - size;
            memcpy(data + size, other->data, len);
            size += len;
            break;
        }
        case 5: { //  Overwrite with a piece of another input
            const s_input_t *other = &inputs->items[s_next(state) % inputs->count];
            if (!other->size || !size)
                break;
            size_t from = s_next(state) % other->size;
            size_t len = 1 + s_next(state) % 16;
            if (from + len > other->size)
                len = other->size - from;
            if (at + len > size)
                len = size - at;
            memcpy(data + at, other->data + from, len);
            break;
        }
        default: { //  Eight bytes of 0x00 or 0xff (a u64 at its extremes)
            uint8_t fill = s_next(state) % 2 ? 0xff : 0x00;
            for (size_t i = at; i < size && i < at + 8; i++)
                data[i] = fill;
            break;
        }
        }
    }
    return size;
}

//  Saves the input about to run, so that a crash leaves it behind.
static void s_save(const char *dir, const uint8_t *data, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, S_LAST_INPUT);
    FILE *file = fopen(path, "wb");
    if (file) {
        fwrite(data, 1, size, file);
        fclose(file);
    }
}

//  The path a peer's messages must have reached after the seed corpus: the
//  dispatcher, the one actor fairqd's admission table lets them reach.
static bool s_reached_all(void)
{
    fq_gateway_fuzz_count_t counts[FQ_SPLITTERS_MAX + 8];
    size_t n = fq_gateway_fuzz_counts(counts, sizeof counts / sizeof counts[0]);
    const char *const expected[] = {FQ_PATH_DISPATCHER};
    bool ok = true;
    for (size_t e = 0; e < sizeof expected / sizeof expected[0]; e++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(counts[i].path, expected[e]) == 0 && counts[i].remote == 0) {
                fprintf(stderr, "gateway_fuzz_replay: nothing from the peer reached %s\n",
                        expected[e]);
                ok = false;
            }
    return ok;
}

static int s_usage(void)
{
    fprintf(stderr, "usage: gateway_fuzz_replay [--mutations N] [--seed N] [--max-seconds N] "
                    "[--expect-reach] [--crash-dir DIR] PATH...\n"
                    "       gateway_fuzz_replay --write-seeds DIR\n");
    return 2;
}

int main(int argc, char *argv[])
{
    long mutations = 0;
    uint64_t seed = S_DEFAULT_SEED;
    double max_seconds = 0;
    bool expect_reach = false;
    const char *crash_dir = ".";
    const char *seeds_dir = NULL;
    s_inputs_t inputs = {0};
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--expect-reach") == 0) {
            expect_reach = true;
            continue;
        }
        const char *option = argv[i];
        const char *value = ++i < argc ? argv[i] : NULL;
        if (!value)
            return s_usage();
        if (strcmp(option, "--mutations") == 0)
            mutations = strtol(value, NULL, 10);
        else if (strcmp(option, "--seed") == 0)
            seed = strtoull(value, NULL, 0);
        else if (strcmp(option, "--max-seconds") == 0)
            max_seconds = strtod(value, NULL);
        else if (strcmp(option, "--crash-dir") == 0)
            crash_dir = value;
        else if (strcmp(option, "--write-seeds") == 0)
            seeds_dir = value;
        else
            return s_usage();
    }
    if (seeds_dir ? i != argc : i == argc || mutations < 0 || seed == 0)
        return s_usage();
    for (; i < argc; i++)
        if (s_add_path(&inputs, argv[i]) != 0)
            return 1;
    if (!seeds_dir && inputs.count == 0) {
        fprintf(stderr, "gateway_fuzz_replay: no inputs\n");
        return 1;
    }

    LLVMFuzzerInitialize(&argc, &argv);
    if (seeds_dir) {
        int written = fq_gateway_fuzz_write_seeds(seeds_dir);
        if (written < 0)
            return 1;
        printf("gateway_fuzz_replay: wrote %d seeds in %s\n", written, seeds_dir);
        return 0;
    }
    double started = s_now();
    for (size_t k = 0; k < inputs.count; k++) {
        s_save(crash_dir, inputs.items[k].data, inputs.items[k].size);
        LLVMFuzzerTestOneInput(inputs.items[k].data, inputs.items[k].size);
    }
    double files_done = s_now();
    printf("gateway_fuzz_replay: %zu files in %.1f s\n", inputs.count, files_done - started);
    bool reached = !expect_reach || s_reached_all();

    uint8_t *data = malloc(S_INPUT_MAX);
    long ran = 0;
    for (; data && ran < mutations; ran++) {
        if (max_seconds > 0 && s_now() - files_done > max_seconds)
            break;
        const s_input_t *base = &inputs.items[s_next(&seed) % inputs.count];
        memcpy(data, base->data, base->size);
        size_t size = s_mutate(data, base->size, &inputs, &seed);
        s_save(crash_dir, data, size);
        LLVMFuzzerTestOneInput(data, size);
    }
    printf("gateway_fuzz_replay: %ld of %ld mutations in %.1f s\n", ran, mutations,
           s_now() - files_done);
    fq_gateway_fuzz_report(stdout);
    free(data);
    for (size_t k = 0; k < inputs.count; k++)
        free(inputs.items[k].data);
    free(inputs.items);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", crash_dir, S_LAST_INPUT);
    remove(path);
    return reached ? 0 : 1;
}
