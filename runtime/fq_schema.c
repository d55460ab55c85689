/*  fq_schema.c — field codecs shared by every generated message type.

    These run on untrusted bytes (frames from remote peers), so each one
    checks the msgpack type and range and reports FQ_EDECODE rather than
    trusting the sender.
*/
#include "fq_schema.h"
#include "fq_error.h"
#include <string.h>

char *fq_zone_strndup(msgpack_zone *zone, const char *s, size_t size)
{
    char *copy = msgpack_zone_malloc(zone, size + 1);
    if (copy) {
        if (size)
            memcpy(copy, s, size);
        copy[size] = 0;
    }
    return copy;
}

int fq_field_decode_u64(const msgpack_object *o, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return FQ_EDECODE;
    *out = o->via.u64;
    return 0;
}

int fq_field_decode_i64(const msgpack_object *o, int64_t *out)
{
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t)o->via.u64;
    else
        return FQ_EDECODE;
    return 0;
}

int fq_field_decode_u32(const msgpack_object *o, uint32_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX)
        return FQ_EDECODE;
    *out = (uint32_t)o->via.u64;
    return 0;
}

int fq_field_decode_bool(const msgpack_object *o, bool *out)
{
    if (o->type != MSGPACK_OBJECT_BOOLEAN)
        return FQ_EDECODE;
    *out = o->via.boolean;
    return 0;
}

int fq_field_decode_double(const msgpack_object *o, double *out)
{
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = o->via.f64;
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)o->via.u64;
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)o->via.i64;
        return 0;
    default:
        return FQ_EDECODE;
    }
}

//  A string is copied so it can be NUL-terminated; an embedded NUL would
//  silently truncate it for C code, so it is refused instead.
int fq_field_decode_str(const msgpack_object *o, const char **out, msgpack_zone *zone)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return FQ_EDECODE;
    if (o->via.str.size && memchr(o->via.str.ptr, 0, o->via.str.size))
        return FQ_EDECODE;
    char *copy = fq_zone_strndup(zone, o->via.str.ptr, o->via.str.size);
    if (!copy)
        return FQ_EDECODE;
    *out = copy;
    return 0;
}

int fq_field_decode_bin(const msgpack_object *o, fq_bin_t *out)
{
    if (o->type != MSGPACK_OBJECT_BIN)
        return FQ_EDECODE;
    out->data = o->via.bin.ptr;
    out->size = o->via.bin.size;
    return 0;
}

int fq_field_decode_strmap(const msgpack_object *o, fq_strmap_t *out, msgpack_zone *zone)
{
    if (o->type != MSGPACK_OBJECT_MAP)
        return FQ_EDECODE;
    uint32_t count = o->via.map.size;
    out->count = count;
    out->keys = NULL;
    out->values = NULL;
    if (count == 0)
        return 0;
    out->keys = msgpack_zone_malloc(zone, count * sizeof(char *));
    out->values = msgpack_zone_malloc(zone, count * sizeof(char *));
    if (!out->keys || !out->values)
        return FQ_EDECODE;
    for (uint32_t i = 0; i < count; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        if (fq_field_decode_str(&kv->key, &out->keys[i], zone) ||
            fq_field_decode_str(&kv->val, &out->values[i], zone))
            return FQ_EDECODE;
    }
    return 0;
}

int fq_field_decode_u64list(const msgpack_object *o, fq_u64list_t *out, msgpack_zone *zone)
{
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return FQ_EDECODE;
    uint32_t count = o->via.array.size;
    out->count = count;
    out->items = NULL;
    if (count == 0)
        return 0;
    uint64_t *items = msgpack_zone_malloc(zone, count * sizeof(uint64_t));
    if (!items)
        return FQ_EDECODE;
    for (uint32_t i = 0; i < count; i++)
        if (fq_field_decode_u64(&o->via.array.ptr[i], &items[i]))
            return FQ_EDECODE;
    out->items = items;
    return 0;
}

//  Each item is decoded by desc into an array in zone. Every item is first
//  checked to be a body of desc's field count at least, so each weighs at
//  least that many objects on the wire, which msgpack has already paid 24
//  bytes each for: the array costs less again than the frame's own decoding,
//  however the peer shapes its items.
int fq_field_decode_list(const msgpack_object *o, const fq_msgdesc_t *desc, const void **items,
                         uint32_t *count, msgpack_zone *zone)
{
    *items = NULL;
    *count = 0;
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return FQ_EDECODE;
    uint32_t n = o->via.array.size;
    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (fq_field_array_too_short(&o->via.array.ptr[i], desc->nfields))
            return FQ_EDECODE;
    char *array = msgpack_zone_malloc(zone, (size_t)n * desc->size);
    if (!array)
        return FQ_EDECODE;
    for (uint32_t i = 0; i < n; i++)
        if (desc->decode(&o->via.array.ptr[i], array + (size_t)i * desc->size, zone))
            return FQ_EDECODE;
    *items = array;
    *count = n;
    return 0;
}

int fq_field_encode_list(msgpack_packer *pk, const fq_msgdesc_t *desc, const void *items,
                         uint32_t count)
{
    int rc = msgpack_pack_array(pk, count);
    for (uint32_t i = 0; i < count && rc == 0; i++)
        rc = desc->encode((const char *)items + (size_t)i * desc->size, pk);
    return rc;
}

int fq_field_encode_str(msgpack_packer *pk, const char *s)
{
    size_t size = s ? strlen(s) : 0;
    return msgpack_pack_str_with_body(pk, s ? s : "", size);
}

int fq_field_encode_bin(msgpack_packer *pk, fq_bin_t bin)
{
    return msgpack_pack_bin_with_body(pk, bin.data, bin.size);
}

int fq_field_encode_strmap(msgpack_packer *pk, fq_strmap_t map)
{
    int rc = msgpack_pack_map(pk, map.count);
    for (uint32_t i = 0; i < map.count; i++) {
        rc |= fq_field_encode_str(pk, map.keys[i]);
        rc |= fq_field_encode_str(pk, map.values[i]);
    }
    return rc;
}

int fq_field_encode_u64list(msgpack_packer *pk, fq_u64list_t list)
{
    int rc = msgpack_pack_array(pk, list.count);
    for (uint32_t i = 0; i < list.count; i++)
        rc |= msgpack_pack_uint64(pk, list.items[i]);
    return rc;
}
