/*  fq_envelope.c — envelope codec and the pre-decode size guard. */
#include "fq_envelope.h"
#include "fq_error.h"
#include <string.h>

enum { S_ENV_FIELDS = 6 };

int fq_envelope_encode(msgpack_sbuffer *buf, uint32_t type, uint32_t flags, uint64_t corr,
                       const char *sender, const char *to, const fq_msgdesc_t *desc,
                       const void *msg, const fq_raw_body_t *raw_body)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    int rc = msgpack_pack_array(&pk, S_ENV_FIELDS);
    rc |= msgpack_pack_uint32(&pk, type);
    rc |= msgpack_pack_uint32(&pk, flags);
    rc |= msgpack_pack_uint64(&pk, corr);
    rc |= fq_field_encode_str(&pk, sender);
    rc |= to && *to ? fq_field_encode_str(&pk, to) : msgpack_pack_nil(&pk);
    if (rc)
        return FQ_ENOMEM;
    if (desc)
        return desc->encode(msg, &pk);
    if (raw_body)
        return msgpack_sbuffer_write(buf, raw_body->data, raw_body->size) ? FQ_ENOMEM : 0;
    return msgpack_pack_nil(&pk) ? FQ_ENOMEM : 0;
}

//  Reads a big-endian unsigned integer of width bytes at p.
static uint64_t s_read_be(const uint8_t *p, int width)
{
    uint64_t value = 0;
    for (int i = 0; i < width; i++)
        value = (value << 8) | p[i];
    return value;
}

//  Walks one msgpack object from p without building it, and sets *after
//  to the byte that follows it. Each declared array or map element must
//  be at least one byte, so a count larger than the bytes left is a lie
//  and the frame is refused before msgpack_unpack allocates room for it.
static int s_walk(const uint8_t *p, const uint8_t *end, const uint8_t **after)
{
    uint64_t pending = 1; //  Items still to read
    uint64_t total = 1;   //  Items seen or announced
    while (pending) {
        if (p >= end)
            return FQ_EDECODE;
        pending--;
        uint8_t tag = *p++;
        uint64_t skip = 0;  //  Payload bytes after the header
        uint64_t items = 0; //  Nested items this header announces
        int width = 0;      //  Width of a length field that follows
        int kind = 0;       //  0 scalar, 1 str/bin, 2 array, 3 map, 4 ext
        if (tag <= 0x7f || tag >= 0xe0 || tag == 0xc0 || tag == 0xc2 || tag == 0xc3)
            ;
        else if (tag >= 0x80 && tag <= 0x8f)
            items = 2u * (tag & 0x0f);
        else if (tag >= 0x90 && tag <= 0x9f)
            items = tag & 0x0f;
        else if (tag >= 0xa0 && tag <= 0xbf)
            skip = tag & 0x1f;
        else {
            switch (tag) {
            case 0xcc:
            case 0xd0:
                skip = 1;
                break;
            case 0xcd:
            case 0xd1:
                skip = 2;
                break;
            case 0xca:
            case 0xce:
            case 0xd2:
                skip = 4;
                break;
            case 0xcb:
            case 0xcf:
            case 0xd3:
                skip = 8;
                break;
            case 0xd4:
                skip = 2;
                break;
            case 0xd5:
                skip = 3;
                break;
            case 0xd6:
                skip = 5;
                break;
            case 0xd7:
                skip = 9;
                break;
            case 0xd8:
                skip = 17;
                break;
            case 0xc4:
            case 0xd9:
                width = 1;
                kind = 1;
                break;
            case 0xc5:
            case 0xda:
                width = 2;
                kind = 1;
                break;
            case 0xc6:
            case 0xdb:
                width = 4;
                kind = 1;
                break;
            case 0xc7:
                width = 1;
                kind = 4;
                break;
            case 0xc8:
                width = 2;
                kind = 4;
                break;
            case 0xc9:
                width = 4;
                kind = 4;
                break;
            case 0xdc:
                width = 2;
                kind = 2;
                break;
            case 0xdd:
                width = 4;
                kind = 2;
                break;
            case 0xde:
                width = 2;
                kind = 3;
                break;
            case 0xdf:
                width = 4;
                kind = 3;
                break;
            default:
                return FQ_EDECODE; //  0xc1 is never used
            }
        }
        if (width) {
            if ((size_t)(end - p) < (size_t)width)
                return FQ_EDECODE;
            uint64_t n = s_read_be(p, width);
            p += width;
            if (kind == 1)
                skip = n;
            else if (kind == 4)
                skip = n + 1; //  The ext type byte
            else if (kind == 2)
                items = n;
            else
                items = 2 * n;
        }
        if (skip > (uint64_t)(end - p))
            return FQ_EDECODE;
        p += skip;
        if (pending + items > (uint64_t)(end - p))
            return FQ_EDECODE;
        total += items;
        if (total > FQ_MSGPACK_MAX_ITEMS)
            return FQ_EDECODE;
        pending += items;
    }
    *after = p;
    return 0;
}

int fq_msgpack_check(const void *data, size_t size)
{
    const uint8_t *after;
    return s_walk(data, (const uint8_t *)data + size, &after) == 0 &&
                   after == (const uint8_t *)data + size
               ? 0
               : FQ_EDECODE;
}

//  The root array's header at p: its element count and size in bytes.
//  Returns 0, or FQ_EDECODE when the root is not an array.
static int s_array_header(const uint8_t *p, const uint8_t *end, uint64_t *count, size_t *size)
{
    if (p < end && *p >= 0x90 && *p <= 0x9f) {
        *count = *p & 0x0f;
        *size = 1;
    } else if (end - p >= 3 && *p == 0xdc) {
        *count = s_read_be(p + 1, 2);
        *size = 3;
    } else if (end - p >= 5 && *p == 0xdd) {
        *count = s_read_be(p + 1, 4);
        *size = 5;
    } else
        return FQ_EDECODE;
    return 0;
}

int fq_envelope_decode_head(const void *data, size_t size, msgpack_zone *zone, fq_envelope_t *env)
{
    if (size == 0 || size > FQ_ENVELOPE_MAX_SIZE || fq_msgpack_check(data, size))
        return FQ_EDECODE;
    const uint8_t *bytes = data, *end = bytes + size;
    uint64_t count;
    size_t off;
    if (s_array_header(bytes, end, &count, &off) || count < S_ENV_FIELDS)
        return FQ_EDECODE;
    //  The five fields before the body, one object each (the check above
    //  walked them all, so each is whole)
    msgpack_object f[S_ENV_FIELDS - 1];
    for (int i = 0; i < S_ENV_FIELDS - 1; i++) {
        msgpack_unpack_return got = msgpack_unpack(data, size, &off, zone, &f[i]);
        if (got != MSGPACK_UNPACK_SUCCESS && got != MSGPACK_UNPACK_EXTRA_BYTES)
            return FQ_EDECODE;
    }
    memset(env, 0, sizeof *env);
    if (fq_field_decode_u32(&f[0], &env->type) || fq_field_decode_u32(&f[1], &env->flags) ||
        fq_field_decode_u64(&f[2], &env->corr) || fq_field_decode_str(&f[3], &env->sender, zone))
        return FQ_EDECODE;
    if (f[4].type == MSGPACK_OBJECT_NIL)
        env->to = "";
    else if (fq_field_decode_str(&f[4], &env->to, zone))
        return FQ_EDECODE;
    //  The body is the root's last element when there are six (the check
    //  found the root ending where the frame does); a newer peer's frame
    //  with more is walked to the body's end
    const uint8_t *after = end;
    if (off >= size || (count > S_ENV_FIELDS && s_walk(bytes + off, end, &after)))
        return FQ_EDECODE;
    env->raw = (fq_raw_body_t){(const char *)bytes + off, (size_t)(after - (bytes + off))};
    return 0;
}

int fq_envelope_decode_body(msgpack_zone *zone, fq_envelope_t *env)
{
    msgpack_object *body = msgpack_zone_malloc(zone, sizeof *body);
    size_t off = 0;
    if (!body || !env->raw.data ||
        msgpack_unpack(env->raw.data, env->raw.size, &off, zone, body) != MSGPACK_UNPACK_SUCCESS)
        return FQ_EDECODE;
    env->body = body;
    return 0;
}

int fq_envelope_decode(const void *data, size_t size, msgpack_zone *zone, fq_envelope_t *env)
{
    int rc = fq_envelope_decode_head(data, size, zone, env);
    return rc ? rc : fq_envelope_decode_body(zone, env);
}
