/*  fq_schema.h — typed messages generated from one schema file.

    A schema file (*.def) lists message types, one FQ_MESSAGE per type:

        FQ_MESSAGE(PING, ping, 100, FQ_U64(seq) FQ_STR(text))

    Including fq_schema_declare.h with FQ_SCHEMA_FILE set to the .def file
    declares, for each message: the id FQ_MSG_PING, the struct fq_ping_t,
    fq_ping_encode / fq_ping_decode and the descriptor fq_ping_desc.
    Including fq_schema_define.h in one .c file generates their bodies.
    Encode and decode therefore exist exactly once, derived from the table.

    On the wire a message body is a msgpack array of its fields in order.
    Decoding never asserts: any type mismatch, missing field, string with
    an embedded NUL or bad map returns FQ_EDECODE. Extra trailing fields
    are ignored, so a newer peer may append fields.

    A body must hold every field but the optional ones: a message that
    gains a field its peers' older builds do not send declares it with an
    optional kind (FQ_STR_OPT, FQ_U32_OPT), after all its other fields, and a body
    that ends before it decodes with the field empty. So a newer receiver
    takes an older sender's message, and an older receiver a newer one's
    (the field is one of its trailing extras), alone or in an FQ_LIST.

    Field kinds: FQ_U64, FQ_I64, FQ_U32, FQ_BOOL, FQ_DOUBLE, FQ_STR
    (NUL-terminated, never NULL after decode), FQ_STR_OPT (an FQ_STR a
    body may end before: "" then), FQ_U32_OPT (an FQ_U32 likewise: 0
    then), FQ_BIN (bytes), FQ_STRMAP
    (string to string map), FQ_U64LIST, FQ_LIST(name, type): a list of
    messages of a type declared earlier in the same schema (a batch), each
    encoded as that type's body; the struct holds count and items.
*/
#ifndef FQ_SCHEMA_H
#define FQ_SCHEMA_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const void *data; //  Borrowed: valid as long as the decoded message
    size_t size;
} fq_bin_t;

typedef struct {
    uint32_t count;
    const char **keys; //  Arrays of count NUL-terminated strings
    const char **values;
} fq_strmap_t;

typedef struct {
    uint32_t count;
    const uint64_t *items;
} fq_u64list_t;

//  Describes one message type; generated for each FQ_MESSAGE.
typedef struct fq_msgdesc {
    uint32_t id;
    const char *name;
    size_t size; //  sizeof the generated struct
    int (*encode)(const void *msg, msgpack_packer *pk);
    int (*decode)(const msgpack_object *obj, void *msg, msgpack_zone *zone);
    uint32_t nfields; //  Fields a body must have at least (its optional ones not)
} fq_msgdesc_t;

//  Field codecs used by the generated code. Each decoder returns 0 or
//  FQ_EDECODE; strings, maps and lists are copied into zone, which the
//  caller owns (the runtime resets it after each message).
int fq_field_decode_u64(const msgpack_object *o, uint64_t *out);
int fq_field_decode_i64(const msgpack_object *o, int64_t *out);
int fq_field_decode_u32(const msgpack_object *o, uint32_t *out);
int fq_field_decode_bool(const msgpack_object *o, bool *out);
int fq_field_decode_double(const msgpack_object *o, double *out);
int fq_field_decode_str(const msgpack_object *o, const char **out, msgpack_zone *zone);
int fq_field_decode_bin(const msgpack_object *o, fq_bin_t *out);
int fq_field_decode_strmap(const msgpack_object *o, fq_strmap_t *out, msgpack_zone *zone);
int fq_field_decode_u64list(const msgpack_object *o, fq_u64list_t *out, msgpack_zone *zone);
int fq_field_decode_list(const msgpack_object *o, const fq_msgdesc_t *desc, const void **items,
                         uint32_t *count, msgpack_zone *zone);

int fq_field_encode_str(msgpack_packer *pk, const char *s);
int fq_field_encode_bin(msgpack_packer *pk, fq_bin_t bin);
int fq_field_encode_strmap(msgpack_packer *pk, fq_strmap_t map);
int fq_field_encode_u64list(msgpack_packer *pk, fq_u64list_t list);
int fq_field_encode_list(msgpack_packer *pk, const fq_msgdesc_t *desc, const void *items,
                         uint32_t count);

//  True unless o is an array of at least nfields items.
static inline bool fq_field_array_too_short(const msgpack_object *o, uint32_t nfields)
{
    return !o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < nfields;
}

//  Copies size bytes plus a NUL into zone; NULL when out of memory.
char *fq_zone_strndup(msgpack_zone *zone, const char *s, size_t size);

#endif
