/*  envelope_fuzz.c — libFuzzer target: any bytes through the envelope
    decoder and every runtime message decoder must come back as a value or
    FQ_EDECODE, never a crash, a sanitizer report or an oversized
    allocation. Build with -DFQ_FUZZ=ON and CC=clang; run
    build/fuzz/tests/fuzz/envelope_fuzz -max_total_time=60. */
#include "fq_envelope.h"
#include "fq_sysmsg.h"
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    fq_envelope_t env;
    if (fq_envelope_decode(data, size, &zone, &env) == 0) {
        //  Try the body as every runtime type, as a receiver might
        union {
            fq_terminated_t terminated;
            fq_gw_hello_t hello;
            fq_gw_status_t status;
            char bytes[256];
        } out;
        for (const fq_msgdesc_t *const *desc = fq_sysmsg_schema; *desc; desc++)
            if ((*desc)->size <= sizeof out)
                (*desc)->decode(env.body, &out, &zone);
    }
    msgpack_zone_destroy(&zone);
    return 0;
}
