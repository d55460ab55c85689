/*  gateway_fuzz.h — the gateway fuzz target's entry points, shared by the
    libFuzzer build (gateway_fuzz) and the replay driver of the normal test
    suite (gateway_fuzz_replay.c), which has no libFuzzer. */
#ifndef FQ_GATEWAY_FUZZ_H
#define FQ_GATEWAY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

//  libFuzzer's entry points. Initialize starts the actor system, its
//  gateway and the peer; each input is then a series of frames from the
//  peer (see gateway_fuzz.c for their format). Both abort() on a finding.
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  The longest frame an input can carry: its length prefix holds 15 bits.
#define FQ_GATEWAY_FUZZ_FRAME_MAX 0x7fffu

//  Writes the seed corpus into dir (which must exist): for every message
//  type, one file per fairqd actor and kind (tell, ask, reply), each with
//  the correlation ids 0, 1 and the largest; one per place a peer should
//  not reach (the gateway, the guardians, a splitter, an absent actor, our
//  client), with each kind once; and a few multi-frame sessions (a
//  sender's life, watches, a rename and BYE, fairqd's inner messages).
//  Call after LLVMFuzzerInitialize. Returns how many files it wrote, or -1
//  (with a message on stderr).
int fq_gateway_fuzz_write_seeds(const char *dir);

//  What reached the actors so far: for each fairqd path, the messages
//  received from a peer (REMOTE) and from local actors.
typedef struct {
    const char *path;
    uint64_t remote;
    uint64_t local;
} fq_gateway_fuzz_count_t;

//  Fills counts (up to max) and returns how many paths there are.
size_t fq_gateway_fuzz_counts(fq_gateway_fuzz_count_t *counts, size_t max);

//  Prints the counts and the gateway's own counters.
void fq_gateway_fuzz_report(FILE *out);

#endif
