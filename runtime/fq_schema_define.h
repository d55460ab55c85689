/*  fq_schema_define.h — generates encode, decode and descriptors for the
    schema named by FQ_SCHEMA_FILE. Include in exactly one .c file per
    schema, after its declaring header. No include guard. */
#include "fq_error.h"
#include "fq_schema.h"
#include <string.h>

//  Pass 1: field counts, every field (what an encoder writes) and the
//  required ones (what a body must have at least: all but the _OPT ones).
#define FQ_STR_OPT(n)                   +1
#define FQ_U32_OPT(n)                   +1
#define FQ_U64(n)                       +1
#define FQ_I64(n)                       +1
#define FQ_U32(n)                       +1
#define FQ_BOOL(n)                      +1
#define FQ_DOUBLE(n)                    +1
#define FQ_STR(n)                       +1
#define FQ_BIN(n)                       +1
#define FQ_STRMAP(n)                    +1
#define FQ_U64LIST(n)                   +1
#define FQ_LIST(n, low)                 +1
#define FQ_MESSAGE(UP, low, id, fields) enum { s_##low##_nfields = 0 fields };
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"
#define FQ_U64(n)                       +1
#define FQ_I64(n)                       +1
#define FQ_U32(n)                       +1
#define FQ_BOOL(n)                      +1
#define FQ_DOUBLE(n)                    +1
#define FQ_STR(n)                       +1
#define FQ_STR_OPT(n)                   +0
#define FQ_U32_OPT(n)                   +0
#define FQ_BIN(n)                       +1
#define FQ_STRMAP(n)                    +1
#define FQ_U64LIST(n)                   +1
#define FQ_LIST(n, low)                 +1
#define FQ_MESSAGE(UP, low, id, fields) enum { s_##low##_nrequired = 0 fields };
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"

//  Pass 2: encoders. A packer only fails when its writer fails (memory).
#define FQ_U64(n)     rc |= msgpack_pack_uint64(pk, msg->n);
#define FQ_I64(n)     rc |= msgpack_pack_int64(pk, msg->n);
#define FQ_U32(n)     rc |= msgpack_pack_uint32(pk, msg->n);
#define FQ_BOOL(n)    rc |= msg->n ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
#define FQ_DOUBLE(n)  rc |= msgpack_pack_double(pk, msg->n);
#define FQ_STR(n)     rc |= fq_field_encode_str(pk, msg->n);
#define FQ_STR_OPT(n) rc |= fq_field_encode_str(pk, msg->n);
#define FQ_U32_OPT(n) rc |= msgpack_pack_uint32(pk, msg->n);
#define FQ_BIN(n)     rc |= fq_field_encode_bin(pk, msg->n);
#define FQ_STRMAP(n)  rc |= fq_field_encode_strmap(pk, msg->n);
#define FQ_U64LIST(n) rc |= fq_field_encode_u64list(pk, msg->n);
#define FQ_LIST(n, low)                                                                            \
    rc |= fq_field_encode_list(pk, &fq_##low##_desc, msg->n.items, msg->n.count);
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    int fq_##low##_encode(const fq_##low##_t *msg, msgpack_packer *pk)                             \
    {                                                                                              \
        (void)msg;                                                                                 \
        int rc = msgpack_pack_array(pk, s_##low##_nfields);                                        \
        fields return rc ? FQ_ENOMEM : 0;                                                          \
    }
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"

//  Pass 3: decoders, strict about types, tolerant of appended fields.
//  Every field is checked to be in the body before it is read: the check
//  of the required count up front covers the required fields only where
//  they come first, and this keeps a schema that puts an FQ_STR_OPT
//  before a required field from reading past a short body.
#define FQ_DECODE_FIELD_(call)                                                                     \
    if (field == end || (call))                                                                    \
        return FQ_EDECODE;                                                                         \
    field++;
//  A body that ends before an optional field (an older peer's) gives ""
//  or 0.
#define FQ_STR_OPT(n)                                                                              \
    if (field == end)                                                                              \
        msg->n = "";                                                                               \
    else {                                                                                         \
        FQ_DECODE_FIELD_(fq_field_decode_str(field, &msg->n, zone))                                \
    }
#define FQ_U32_OPT(n)                                                                              \
    if (field != end) {                                                                            \
        FQ_DECODE_FIELD_(fq_field_decode_u32(field, &msg->n))                                      \
    }
#define FQ_U64(n)     FQ_DECODE_FIELD_(fq_field_decode_u64(field, &msg->n))
#define FQ_I64(n)     FQ_DECODE_FIELD_(fq_field_decode_i64(field, &msg->n))
#define FQ_U32(n)     FQ_DECODE_FIELD_(fq_field_decode_u32(field, &msg->n))
#define FQ_BOOL(n)    FQ_DECODE_FIELD_(fq_field_decode_bool(field, &msg->n))
#define FQ_DOUBLE(n)  FQ_DECODE_FIELD_(fq_field_decode_double(field, &msg->n))
#define FQ_STR(n)     FQ_DECODE_FIELD_(fq_field_decode_str(field, &msg->n, zone))
#define FQ_BIN(n)     FQ_DECODE_FIELD_(fq_field_decode_bin(field, &msg->n))
#define FQ_STRMAP(n)  FQ_DECODE_FIELD_(fq_field_decode_strmap(field, &msg->n, zone))
#define FQ_U64LIST(n) FQ_DECODE_FIELD_(fq_field_decode_u64list(field, &msg->n, zone))
#define FQ_LIST(n, low)                                                                            \
    {                                                                                              \
        const void *items_;                                                                        \
        FQ_DECODE_FIELD_(                                                                          \
            fq_field_decode_list(field, &fq_##low##_desc, &items_, &msg->n.count, zone))           \
        msg->n.items = items_;                                                                     \
    }
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    int fq_##low##_decode(const msgpack_object *obj, fq_##low##_t *msg, msgpack_zone *zone)        \
    {                                                                                              \
        (void)zone;                                                                                \
        memset(msg, 0, sizeof *msg);                                                               \
        if (fq_field_array_too_short(obj, s_##low##_nrequired))                                    \
            return FQ_EDECODE;                                                                     \
        const msgpack_object *field = obj->via.array.ptr;                                          \
        const msgpack_object *end = field + obj->via.array.size;                                   \
        (void)field;                                                                               \
        (void)end;                                                                                 \
        fields return 0;                                                                           \
    }
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"
#undef FQ_DECODE_FIELD_

//  Pass 4: descriptors, with untyped adapters for the runtime.
#define FQ_U64(n)
#define FQ_I64(n)
#define FQ_U32(n)
#define FQ_BOOL(n)
#define FQ_DOUBLE(n)
#define FQ_STR(n)
#define FQ_STR_OPT(n)
#define FQ_U32_OPT(n)
#define FQ_BIN(n)
#define FQ_STRMAP(n)
#define FQ_U64LIST(n)
#define FQ_LIST(n, low)
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    static int s_##low##_encode_any(const void *msg, msgpack_packer *pk)                           \
    {                                                                                              \
        return fq_##low##_encode((const fq_##low##_t *)msg, pk);                                   \
    }                                                                                              \
    static int s_##low##_decode_any(const msgpack_object *obj, void *msg, msgpack_zone *zone)      \
    {                                                                                              \
        return fq_##low##_decode(obj, (fq_##low##_t *)msg, zone);                                  \
    }                                                                                              \
    const fq_msgdesc_t fq_##low##_desc = {(id),                                                    \
                                          #UP,                                                     \
                                          sizeof(fq_##low##_t),                                    \
                                          s_##low##_encode_any,                                    \
                                          s_##low##_decode_any,                                    \
                                          s_##low##_nrequired};
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"

//  Pass 5: a NULL-terminated table of the schema's descriptors, named by
//  FQ_SCHEMA_TABLE, for look-up by id (logs, fuzzing, introspection).
#ifdef FQ_SCHEMA_TABLE
#define FQ_U64(n)
#define FQ_I64(n)
#define FQ_U32(n)
#define FQ_BOOL(n)
#define FQ_DOUBLE(n)
#define FQ_STR(n)
#define FQ_STR_OPT(n)
#define FQ_U32_OPT(n)
#define FQ_BIN(n)
#define FQ_STRMAP(n)
#define FQ_U64LIST(n)
#define FQ_LIST(n, low)
#define FQ_MESSAGE(UP, low, id, fields) &fq_##low##_desc,
const fq_msgdesc_t *const FQ_SCHEMA_TABLE[] = {
#include FQ_SCHEMA_FILE
    NULL};
#include "fq_schema_undef.h"
#endif
