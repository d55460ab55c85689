/*  schema_test.c — the generated message codecs, as an actor sees them.

    A message is encoded with its generated fq_<name>_encode, crosses the
    wire as msgpack bytes and is decoded on the other side with
    fq_<name>_decode. The decode half runs on bytes from remote peers, so
    every malformed body must come back as FQ_EDECODE, never an assert.
*/
#include "fq_error.h"
#include "fq_sysmsg.h"
#include "fq_test_msgs.h"
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Zone every decoded string, map and list lives in, as the runtime keeps
//  one per mailbox; the chunk size is msgpack's usual default.
enum { S_ZONE_CHUNK = 8192 };

static int s_zone_setup(void **state)
{
    msgpack_zone *zone = msgpack_zone_new(S_ZONE_CHUNK);
    *state = zone;
    return zone ? 0 : -1;
}

static int s_zone_teardown(void **state)
{
    msgpack_zone_free(*state);
    return 0;
}

//  Encodes msg as a sender would and unpacks the bytes as a receiver would.
//  The bytes are copied into zone, so the returned body lives exactly as
//  long as the zone does, like a mailbox frame.
static msgpack_object *s_over_wire(const fq_msgdesc_t *desc, const void *msg, msgpack_zone *zone)
{
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    assert_int_equal(desc->encode(msg, &pk), 0);

    char *bytes = msgpack_zone_malloc(zone, buf.size);
    msgpack_object *body = msgpack_zone_malloc(zone, sizeof *body);
    assert_non_null(bytes);
    assert_non_null(body);
    memcpy(bytes, buf.data, buf.size);
    size_t offset = 0;
    assert_int_equal(msgpack_unpack(bytes, buf.size, &offset, zone, body), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal(offset, buf.size);
    msgpack_sbuffer_destroy(&buf);
    return body;
}

//  A fully populated ALLTYPES message; the arrays are static so the message
//  can be returned by value.
static fq_alltypes_t s_sample_alltypes(void)
{
    static const char bytes[] = {'a', 0, 'b', 0, 0, (char)0xff};
    static const char *keys[] = {"subject", "x-tenant", "empty"};
    static const char *values[] = {"héllo wörld ✉", "42", ""};
    static const uint64_t ids[] = {1, 0, UINT64_MAX, 1u << 31};
    fq_alltypes_t msg = {
        .u = 1234567890123ull,
        .i = -42,
        .w = 65537,
        .b = true,
        .d = 3.25,
        .s = "grüße, 世界",
        .bytes = {bytes, sizeof bytes},
        .fields = {3, keys, values},
        .ids = {4, ids},
    };
    return msg;
}

//  Every field of the decoded message equals the one that was sent.
static void s_assert_alltypes_equal(const fq_alltypes_t *got, const fq_alltypes_t *want)
{
    assert_int_equal(got->u, want->u);
    assert_int_equal(got->i, want->i);
    assert_int_equal(got->w, want->w);
    assert_int_equal(got->b, want->b);
    if (isnan(want->d))
        assert_true(isnan(got->d));
    else
        assert_memory_equal(&got->d, &want->d, sizeof got->d); //  Exact, including -0.0
    assert_non_null(got->s);
    assert_string_equal(got->s, want->s ? want->s : "");
    assert_int_equal(got->bytes.size, want->bytes.size);
    if (want->bytes.size)
        assert_memory_equal(got->bytes.data, want->bytes.data, want->bytes.size);
    assert_int_equal(got->fields.count, want->fields.count);
    for (uint32_t k = 0; k < want->fields.count; k++) {
        assert_string_equal(got->fields.keys[k], want->fields.keys[k]);
        assert_string_equal(got->fields.values[k], want->fields.values[k]);
    }
    assert_int_equal(got->ids.count, want->ids.count);
    for (uint32_t k = 0; k < want->ids.count; k++)
        assert_int_equal(got->ids.items[k], want->ids.items[k]);
}

// --------------------------------------------------------------------------
//  Round trips

//  Every field kind comes back exactly as sent, including UTF-8 text and
//  binary with zero bytes inside.
static void test_alltypes_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);

    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), 0);
    s_assert_alltypes_equal(&got, &sent);
}

//  The descriptor's untyped decode (what the runtime calls) agrees with
//  the typed one.
static void test_descriptor_decodes_like_typed_function(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);

    assert_int_equal(fq_alltypes_desc.id, FQ_MSG_ALLTYPES);
    assert_string_equal(fq_alltypes_desc.name, "ALLTYPES");
    assert_int_equal(fq_alltypes_desc.size, sizeof(fq_alltypes_t));
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_desc.decode(body, &got, zone), 0);
    s_assert_alltypes_equal(&got, &sent);
}

//  Numeric extremes survive: full u64 and i64 ranges, u32 max, both
//  booleans, and doubles including -0.0, infinities, NaN and denormals.
static void test_numeric_extremes_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    const struct {
        uint64_t u;
        int64_t i;
        uint32_t w;
        bool b;
        double d;
    } cases[] = {
        {0, 0, 0, false, 0.0},
        {UINT64_MAX, INT64_MIN, UINT32_MAX, true, -0.0},
        {1, INT64_MAX, 1, false, DBL_MAX},
        {(uint64_t)INT64_MAX + 1, -1, UINT32_MAX - 1, true, -DBL_MAX},
        {127, -32, 255, false, DBL_MIN / 4},
        {128, -33, 256, true, INFINITY},
        {65536, INT32_MIN, 65535, false, -INFINITY},
        {UINT32_MAX, (int64_t)INT32_MIN - 1, 65536, true, NAN},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fq_alltypes_t sent = {
            .u = cases[c].u, .i = cases[c].i, .w = cases[c].w, .b = cases[c].b, .d = cases[c].d};
        fq_alltypes_t got;
        assert_int_equal(
            fq_alltypes_decode(s_over_wire(&fq_alltypes_desc, &sent, zone), &got, zone), 0);
        s_assert_alltypes_equal(&got, &sent);
    }
}

//  Empty values round trip: "" and a NULL string both arrive as "" (never
//  NULL), empty binary, empty map and empty list arrive with count 0.
static void test_empty_values_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = {.s = ""};
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(s_over_wire(&fq_alltypes_desc, &sent, zone), &got, zone),
                     0);
    s_assert_alltypes_equal(&got, &sent);
    assert_int_equal(got.fields.count, 0);
    assert_int_equal(got.ids.count, 0);
    assert_int_equal(got.bytes.size, 0);

    fq_ping_t ping = {.seq = 7, .text = NULL};
    fq_ping_t ping_got;
    assert_int_equal(fq_ping_decode(s_over_wire(&fq_ping_desc, &ping, zone), &ping_got, zone), 0);
    assert_int_equal(ping_got.seq, 7);
    assert_non_null(ping_got.text);
    assert_string_equal(ping_got.text, "");
}

//  A message without fields encodes as an empty array and decodes again.
static void test_fieldless_message_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    fq_count_t sent = {0};
    msgpack_object *body = s_over_wire(&fq_count_desc, &sent, zone);
    assert_int_equal(body->type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal(body->via.array.size, 0);
    fq_count_t got;
    assert_int_equal(fq_count_decode(body, &got, zone), 0);
}

//  A long string and a long list (beyond the small msgpack encodings)
//  round trip.
static void test_large_values_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    enum { S_LONG = 70000 }; //  Past str16 and array16: forces the 32-bit forms
    char *text = malloc(S_LONG + 1);
    uint64_t *ids = malloc(S_LONG * sizeof *ids);
    assert_non_null(text);
    assert_non_null(ids);
    for (size_t k = 0; k < S_LONG; k++) {
        text[k] = (char)('a' + k % 26);
        ids[k] = k * 1000003u;
    }
    text[S_LONG] = 0;
    fq_alltypes_t sent = {.s = text, .ids = {S_LONG, ids}};
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(s_over_wire(&fq_alltypes_desc, &sent, zone), &got, zone),
                     0);
    s_assert_alltypes_equal(&got, &sent);
    free(text);
    free(ids);
}

// --------------------------------------------------------------------------
//  Forward compatibility

//  A newer peer that appends fields is still understood.
static void test_extra_trailing_fields_accepted(void **state)
{
    msgpack_zone *zone = *state;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4); //  PING is [seq, text]; a v2 peer adds two
    msgpack_pack_uint64(&pk, 9);
    msgpack_pack_str_with_body(&pk, "hi", 2);
    msgpack_pack_str_with_body(&pk, "new field", 9);
    msgpack_pack_map(&pk, 0);

    msgpack_object body;
    size_t offset = 0;
    assert_int_equal(msgpack_unpack(buf.data, buf.size, &offset, zone, &body),
                     MSGPACK_UNPACK_SUCCESS);
    fq_ping_t got;
    assert_int_equal(fq_ping_decode(&body, &got, zone), 0);
    assert_int_equal(got.seq, 9);
    assert_string_equal(got.text, "hi");
    msgpack_sbuffer_destroy(&buf);
}

//  A peer that packs a whole-number double as an integer is understood.
static void test_integer_in_double_field_accepted(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    msgpack_object *d = &body->via.array.ptr[4];

    d->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    d->via.u64 = 3;
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), 0);
    assert_true(got.d == 3.0);

    d->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
    d->via.i64 = -5;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), 0);
    assert_true(got.d == -5.0);
}

// --------------------------------------------------------------------------
//  Malformed bodies: each is refused with FQ_EDECODE

//  "a", NUL, "b": three bytes that C would read as "a".
static const char s_nul_text[] = "a\0b";

//  One object of the given msgpack type (containers empty).
static msgpack_object s_specimen(msgpack_object_type type)
{
    msgpack_object o = {.type = type};
    switch (type) {
    case MSGPACK_OBJECT_BOOLEAN:
        o.via.boolean = true;
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        o.via.u64 = 1;
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        o.via.i64 = -1;
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        o.via.f64 = 1.5;
        break;
    case MSGPACK_OBJECT_STR:
        o.via.str.ptr = "x";
        o.via.str.size = 1;
        break;
    case MSGPACK_OBJECT_BIN:
        o.via.bin.ptr = "x";
        o.via.bin.size = 1;
        break;
    case MSGPACK_OBJECT_EXT:
        o.via.ext.type = 1;
        o.via.ext.ptr = "x";
        o.via.ext.size = 1;
        break;
    default: //  NIL, and empty ARRAY and MAP
        break;
    }
    return o;
}

//  Bit of a msgpack type in a mask of accepted types.
#define S_TYPE(t) (1u << MSGPACK_OBJECT_##t)

//  A field of any msgpack type its kind does not accept is refused, in
//  every position of the message.
static void test_wrong_type_in_each_field_refused(void **state)
{
    msgpack_zone *zone = *state;
    //  A double also takes integers (see test_integer_in_double_field_accepted)
    const unsigned number =
        S_TYPE(POSITIVE_INTEGER) | S_TYPE(NEGATIVE_INTEGER) | S_TYPE(FLOAT32) | S_TYPE(FLOAT64);
    //  The msgpack types each ALLTYPES field accepts, in field order
    const unsigned accepts[] = {
        S_TYPE(POSITIVE_INTEGER),                            //  u
        S_TYPE(POSITIVE_INTEGER) | S_TYPE(NEGATIVE_INTEGER), //  i
        S_TYPE(POSITIVE_INTEGER),                            //  w
        S_TYPE(BOOLEAN),                                     //  b
        number,                                              //  d
        S_TYPE(STR),                                         //  s
        S_TYPE(BIN),                                         //  bytes
        S_TYPE(MAP),                                         //  fields
        S_TYPE(ARRAY),                                       //  ids
    };
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL,
        MSGPACK_OBJECT_BOOLEAN,
        MSGPACK_OBJECT_POSITIVE_INTEGER,
        MSGPACK_OBJECT_NEGATIVE_INTEGER,
        MSGPACK_OBJECT_FLOAT32,
        MSGPACK_OBJECT_FLOAT64,
        MSGPACK_OBJECT_STR,
        MSGPACK_OBJECT_ARRAY,
        MSGPACK_OBJECT_MAP,
        MSGPACK_OBJECT_BIN,
        MSGPACK_OBJECT_EXT,
    };
    size_t nfields = sizeof accepts / sizeof accepts[0];
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    assert_int_equal(body->via.array.size, nfields);

    for (size_t f = 0; f < nfields; f++) {
        msgpack_object original = body->via.array.ptr[f];
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            body->via.array.ptr[f] = s_specimen(types[t]);
            bool accepted = accepts[f] & (1u << types[t]);
            fq_alltypes_t got;
            int rc = fq_alltypes_decode(body, &got, zone);
            if (rc != (accepted ? 0 : FQ_EDECODE))
                fail_msg("field %zu with msgpack type %d: got %s", f, (int)types[t],
                         fq_err_name(rc));
        }
        body->via.array.ptr[f] = original;
    }
}

//  A body with fewer fields than the message has is refused, down to an
//  empty array.
static void test_too_few_fields_refused(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    uint32_t nfields = body->via.array.size;
    for (uint32_t n = 0; n < nfields; n++) {
        body->via.array.size = n;
        fq_alltypes_t got;
        assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);
    }
}

//  A body that is not an array at all, or no body, is refused.
static void test_non_array_body_refused(void **state)
{
    msgpack_zone *zone = *state;
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL, MSGPACK_OBJECT_BOOLEAN, MSGPACK_OBJECT_POSITIVE_INTEGER,
        MSGPACK_OBJECT_STR, MSGPACK_OBJECT_MAP,     MSGPACK_OBJECT_BIN,
        MSGPACK_OBJECT_EXT,
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        msgpack_object body = s_specimen(types[t]);
        fq_alltypes_t alltypes;
        fq_count_t count;
        assert_int_equal(fq_alltypes_decode(&body, &alltypes, zone), FQ_EDECODE);
        assert_int_equal(fq_count_decode(&body, &count, zone), FQ_EDECODE);
    }
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(NULL, &got, zone), FQ_EDECODE);
    assert_int_equal(fq_alltypes_desc.decode(NULL, &got, zone), FQ_EDECODE);
}

//  A string with an embedded NUL is refused wherever strings appear: a str
//  field, a map key and a map value (C code would silently truncate it).
static void test_string_with_embedded_nul_refused(void **state)
{
    msgpack_zone *zone = *state;
    msgpack_object nul_str = {.type = MSGPACK_OBJECT_STR};
    nul_str.via.str.ptr = s_nul_text;
    nul_str.via.str.size = sizeof s_nul_text - 1;
    fq_alltypes_t got;

    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    body->via.array.ptr[5] = nul_str;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);

    body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    body->via.array.ptr[7].via.map.ptr[1].key = nul_str;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);

    body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    body->via.array.ptr[7].via.map.ptr[2].val = nul_str;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);

    //  A trailing NUL is still an embedded one: the sender's length says so
    nul_str.via.str.size = 2;
    nul_str.via.str.ptr = "a\0";
    body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    body->via.array.ptr[5] = nul_str;
    assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);
}

//  Integers outside a field's range are refused rather than wrapped: u32
//  above UINT32_MAX, i64 above INT64_MAX; the limits themselves pass.
static void test_integer_out_of_range_refused(void **state)
{
    msgpack_zone *zone = *state;
    const struct {
        size_t field;
        uint64_t value;
        int rc;
    } cases[] = {
        {2, UINT32_MAX, 0}, {2, (uint64_t)UINT32_MAX + 1, FQ_EDECODE}, {2, UINT64_MAX, FQ_EDECODE},
        {1, INT64_MAX, 0},  {1, (uint64_t)INT64_MAX + 1, FQ_EDECODE},  {1, UINT64_MAX, FQ_EDECODE},
        {0, UINT64_MAX, 0},
    };
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        msgpack_object *field = &body->via.array.ptr[cases[c].field];
        msgpack_object original = *field;
        field->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        field->via.u64 = cases[c].value;
        fq_alltypes_t got;
        assert_int_equal(fq_alltypes_decode(body, &got, zone), cases[c].rc);
        *field = original;
    }
}

//  A negative number in an unsigned field is refused.
static void test_negative_in_unsigned_field_refused(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t sent = s_sample_alltypes();
    msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
    const size_t unsigned_fields[] = {0, 2};
    for (size_t k = 0; k < 2; k++) {
        msgpack_object *field = &body->via.array.ptr[unsigned_fields[k]];
        msgpack_object original = *field;
        field->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
        field->via.i64 = INT64_MIN;
        fq_alltypes_t got;
        assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);
        *field = original;
    }
}

//  A string map with anything but strings for keys or values is refused.
static void test_strmap_with_non_string_entry_refused(void **state)
{
    msgpack_zone *zone = *state;
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL, MSGPACK_OBJECT_POSITIVE_INTEGER,
        MSGPACK_OBJECT_BIN, MSGPACK_OBJECT_ARRAY,
        MSGPACK_OBJECT_MAP, MSGPACK_OBJECT_BOOLEAN,
    };
    fq_alltypes_t sent = s_sample_alltypes();
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        fq_alltypes_t got;
        msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
        body->via.array.ptr[7].via.map.ptr[0].key = s_specimen(types[t]);
        assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);

        body = s_over_wire(&fq_alltypes_desc, &sent, zone);
        body->via.array.ptr[7].via.map.ptr[2].val = s_specimen(types[t]);
        assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);
    }
}

//  A u64 list holding anything but non-negative integers is refused,
//  wherever in the list the bad item sits.
static void test_u64list_with_non_integer_refused(void **state)
{
    msgpack_zone *zone = *state;
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL,     MSGPACK_OBJECT_NEGATIVE_INTEGER,
        MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_STR,
        MSGPACK_OBJECT_ARRAY,   MSGPACK_OBJECT_BOOLEAN,
        MSGPACK_OBJECT_FLOAT32,
    };
    fq_alltypes_t sent = s_sample_alltypes();
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (uint32_t at = 0; at < sent.ids.count; at++) {
            msgpack_object *body = s_over_wire(&fq_alltypes_desc, &sent, zone);
            body->via.array.ptr[8].via.array.ptr[at] = s_specimen(types[t]);
            fq_alltypes_t got;
            assert_int_equal(fq_alltypes_decode(body, &got, zone), FQ_EDECODE);
        }
    }
}

//  Refusals come from real bytes too, not only from hand-built objects: a
//  PING whose seq is a string, unpacked from the wire.
static void test_refusal_from_real_bytes(void **state)
{
    msgpack_zone *zone = *state;
    const char frame[] = {(char)0x92, (char)0xa1, '1', (char)0xa2, 'h', 'i'};
    msgpack_object body;
    size_t offset = 0;
    assert_int_equal(msgpack_unpack(frame, sizeof frame, &offset, zone, &body),
                     MSGPACK_UNPACK_SUCCESS);
    fq_ping_t got;
    assert_int_equal(fq_ping_decode(&body, &got, zone), FQ_EDECODE);
}

// --------------------------------------------------------------------------
//  Lists of messages (FQ_LIST): a batch travels as an array of item bodies

//  A BATCH of three ALLTYPES as a batch of MESSAGEs would be: a full item,
//  an empty one and one with other headers (its fields map). The arrays
//  are static so the message can be returned by value.
static fq_batch_t s_sample_batch(void)
{
    static const char *keys[] = {"x-campaign", "reply-to"};
    static const char *values[] = {"spring ✿", "noreply@example.com"};
    static const uint64_t ids[] = {UINT64_MAX, 7};
    static fq_alltypes_t items[3];
    items[0] = s_sample_alltypes();
    items[1] = (fq_alltypes_t){.s = ""};
    items[2] = (fq_alltypes_t){.u = 3,
                               .i = INT64_MIN,
                               .w = UINT32_MAX,
                               .d = -0.0,
                               .s = "third",
                               .fields = {2, keys, values},
                               .ids = {2, ids}};
    return (fq_batch_t){.seq = 77, .items = {3, items}, .note = "after the list"};
}

static void s_assert_batch_equal(const fq_batch_t *got, const fq_batch_t *want)
{
    assert_int_equal(got->seq, want->seq);
    assert_non_null(got->note);
    assert_string_equal(got->note, want->note);
    assert_int_equal(got->items.count, want->items.count);
    for (uint32_t k = 0; k < want->items.count; k++)
        s_assert_alltypes_equal(&got->items.items[k], &want->items.items[k]);
}

//  Every item comes back in order with every field as sent, the fields
//  after the list too; on the wire the list is an array of the items'
//  bodies, so a peer can read each item as its own message type.
static void test_list_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    fq_batch_t sent = s_sample_batch();
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);

    assert_int_equal(body->via.array.size, 3);
    const msgpack_object *list = &body->via.array.ptr[1];
    assert_int_equal(list->type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal(list->via.array.size, 3);
    for (uint32_t k = 0; k < 3; k++) {
        fq_alltypes_t item;
        assert_int_equal(fq_alltypes_decode(&list->via.array.ptr[k], &item, zone), 0);
        s_assert_alltypes_equal(&item, &sent.items.items[k]);
    }

    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), 0);
    s_assert_batch_equal(&got, &sent);
    assert_int_equal(fq_batch_desc.id, FQ_MSG_BATCH);
    assert_int_equal(fq_batch_desc.size, sizeof(fq_batch_t));
    assert_int_equal(fq_batch_desc.decode(body, &got, zone), 0);
    s_assert_batch_equal(&got, &sent);
}

//  An empty list (no items, NULL items) is an empty array, and comes back
//  with count 0.
static void test_empty_list_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    fq_batch_t sent = {.seq = 1, .note = "nothing"};
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
    assert_int_equal(body->via.array.ptr[1].type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal(body->via.array.ptr[1].via.array.size, 0);
    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), 0);
    s_assert_batch_equal(&got, &sent);
}

//  A list past array16 (the 32-bit msgpack form) keeps its items in order.
static void test_long_list_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    enum { S_ITEMS = 70000 };
    fq_alltypes_t *items = calloc(S_ITEMS, sizeof *items);
    assert_non_null(items);
    for (uint32_t k = 0; k < S_ITEMS; k++)
        items[k] = (fq_alltypes_t){.u = k, .w = S_ITEMS - k, .s = k % 2 ? "odd" : "even"};
    fq_batch_t sent = {.seq = 2, .items = {S_ITEMS, items}, .note = "long"};
    fq_batch_t got;
    assert_int_equal(fq_batch_decode(s_over_wire(&fq_batch_desc, &sent, zone), &got, zone), 0);
    s_assert_batch_equal(&got, &sent);
    free(items);
}

//  An item from a newer peer, with fields appended, is still understood,
//  as the same message alone would be.
static void test_list_item_with_extra_fields_accepted(void **state)
{
    msgpack_zone *zone = *state;
    fq_batch_t sent = s_sample_batch();
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
    msgpack_object *item = &body->via.array.ptr[1].via.array.ptr[2];
    uint32_t nfields = item->via.array.size;
    msgpack_object *longer = msgpack_zone_malloc(zone, (nfields + 2) * sizeof *longer);
    assert_non_null(longer);
    memcpy(longer, item->via.array.ptr, nfields * sizeof *longer);
    longer[nfields] = s_specimen(MSGPACK_OBJECT_STR);
    longer[nfields + 1] = s_specimen(MSGPACK_OBJECT_MAP);
    item->via.array.ptr = longer;
    item->via.array.size = nfields + 2;

    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), 0);
    s_assert_batch_equal(&got, &sent);
}

//  An item that is not a whole body of its type (any other msgpack type,
//  or an array too short) is refused, wherever in the list it sits.
static void test_list_item_not_a_body_refused(void **state)
{
    msgpack_zone *zone = *state;
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL,     MSGPACK_OBJECT_BOOLEAN, MSGPACK_OBJECT_POSITIVE_INTEGER,
        MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_STR,     MSGPACK_OBJECT_MAP,
        MSGPACK_OBJECT_BIN,     MSGPACK_OBJECT_EXT,     MSGPACK_OBJECT_ARRAY, //  Empty: too short
    };
    fq_batch_t sent = s_sample_batch();
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (uint32_t at = 0; at < sent.items.count; at++) {
            msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
            body->via.array.ptr[1].via.array.ptr[at] = s_specimen(types[t]);
            fq_batch_t got;
            int rc = fq_batch_decode(body, &got, zone);
            if (rc != FQ_EDECODE)
                fail_msg("item %u of msgpack type %d: got %s", at, (int)types[t], fq_err_name(rc));
        }

    //  One field short
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
    body->via.array.ptr[1].via.array.ptr[2].via.array.size--;
    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), FQ_EDECODE);
}

//  An item whose field has the wrong type is refused as the message alone
//  would be: in any field of any item, and deep in an item's map.
static void test_list_item_with_wrong_field_refused(void **state)
{
    msgpack_zone *zone = *state;
    fq_batch_t sent = s_sample_batch();
    //  No ALLTYPES field takes nil; a string is wrong for all but s
    const size_t nfields = 9, str_field = 5;
    for (uint32_t at = 0; at < sent.items.count; at++)
        for (size_t f = 0; f < nfields; f++) {
            msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
            msgpack_object *item = &body->via.array.ptr[1].via.array.ptr[at];
            assert_int_equal(item->via.array.size, nfields);
            item->via.array.ptr[f] =
                s_specimen(f == str_field ? MSGPACK_OBJECT_NIL : MSGPACK_OBJECT_STR);
            fq_batch_t got;
            int rc = fq_batch_decode(body, &got, zone);
            if (rc != FQ_EDECODE)
                fail_msg("item %u, field %zu: got %s", at, f, fq_err_name(rc));
        }

    //  A header value that is a number, and one with an embedded NUL
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
    body->via.array.ptr[1].via.array.ptr[2].via.array.ptr[7].via.map.ptr[1].val =
        s_specimen(MSGPACK_OBJECT_POSITIVE_INTEGER);
    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), FQ_EDECODE);
    msgpack_object nul_str = {.type = MSGPACK_OBJECT_STR};
    nul_str.via.str.ptr = s_nul_text;
    nul_str.via.str.size = sizeof s_nul_text - 1;
    body = s_over_wire(&fq_batch_desc, &sent, zone);
    body->via.array.ptr[1].via.array.ptr[0].via.array.ptr[7].via.map.ptr[0].val = nul_str;
    assert_int_equal(fq_batch_decode(body, &got, zone), FQ_EDECODE);
}

//  The list field itself must be an array: a map (a "list" of key/value
//  pairs) or any other type is refused; an empty array is an empty list.
static void test_list_field_of_wrong_type_refused(void **state)
{
    msgpack_zone *zone = *state;
    const msgpack_object_type types[] = {
        MSGPACK_OBJECT_NIL,     MSGPACK_OBJECT_BOOLEAN, MSGPACK_OBJECT_POSITIVE_INTEGER,
        MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_STR,     MSGPACK_OBJECT_MAP,
        MSGPACK_OBJECT_BIN,     MSGPACK_OBJECT_EXT,     MSGPACK_OBJECT_ARRAY,
    };
    fq_batch_t sent = s_sample_batch();
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
        body->via.array.ptr[1] = s_specimen(types[t]);
        fq_batch_t got;
        int rc = fq_batch_decode(body, &got, zone);
        int want = types[t] == MSGPACK_OBJECT_ARRAY ? 0 : FQ_EDECODE;
        if (rc != want)
            fail_msg("list of msgpack type %d: got %s", (int)types[t], fq_err_name(rc));
        if (rc == 0)
            assert_int_equal(got.items.count, 0);
    }

    //  A map whose pairs each look like an item body
    fq_alltypes_t item = s_sample_alltypes();
    msgpack_object *item_body = s_over_wire(&fq_alltypes_desc, &item, zone);
    msgpack_object_kv *pairs = msgpack_zone_malloc(zone, 2 * sizeof *pairs);
    assert_non_null(pairs);
    pairs[0] = pairs[1] = (msgpack_object_kv){*item_body, *item_body};
    msgpack_object *body = s_over_wire(&fq_batch_desc, &sent, zone);
    body->via.array.ptr[1] = (msgpack_object){.type = MSGPACK_OBJECT_MAP};
    body->via.array.ptr[1].via.map.ptr = pairs;
    body->via.array.ptr[1].via.map.size = 2;
    fq_batch_t got;
    assert_int_equal(fq_batch_decode(body, &got, zone), FQ_EDECODE);
}

//  Refusals from real bytes: BATCH bodies as a hostile peer would pack
//  them, unpacked from the wire before decoding.
static void test_list_refusal_from_real_bytes(void **state)
{
    msgpack_zone *zone = *state;
    fq_alltypes_t item = s_sample_alltypes();
    for (int c = 0; c < 4; c++) {
        msgpack_sbuffer buf;
        msgpack_sbuffer_init(&buf);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
        msgpack_pack_array(&pk, 3);
        msgpack_pack_uint64(&pk, 5);
        switch (c) {
        case 0: //  The list as a map
            msgpack_pack_map(&pk, 1);
            msgpack_pack_str_with_body(&pk, "a", 1);
            msgpack_pack_str_with_body(&pk, "b", 1);
            break;
        case 1: //  An item that is a number
            msgpack_pack_array(&pk, 1);
            msgpack_pack_uint64(&pk, 1);
            break;
        case 2: //  An item of one field
            msgpack_pack_array(&pk, 1);
            msgpack_pack_array(&pk, 1);
            msgpack_pack_uint64(&pk, 1);
            break;
        default: //  A valid item, then nil
            msgpack_pack_array(&pk, 2);
            assert_int_equal(fq_alltypes_encode(&item, &pk), 0);
            msgpack_pack_nil(&pk);
            break;
        }
        msgpack_pack_str_with_body(&pk, "n", 1);

        msgpack_object body;
        size_t offset = 0;
        assert_int_equal(msgpack_unpack(buf.data, buf.size, &offset, zone, &body),
                         MSGPACK_UNPACK_SUCCESS);
        fq_batch_t got;
        int rc = fq_batch_decode(&body, &got, zone);
        msgpack_sbuffer_destroy(&buf);
        if (rc != FQ_EDECODE)
            fail_msg("case %d: got %s", c, fq_err_name(rc));
    }
}

// --------------------------------------------------------------------------
//  A field appended to a message peers already speak (FQ_STR_OPT)

//  A letter as both layouts have it; the newer one's text_body on top.
static const char *s_letter_keys[] = {"List-Id"};
static const char *s_letter_values[] = {"<news.example.com>"};

static fq_letter_v1_t s_sample_letter_v1(uint64_t id)
{
    return (fq_letter_v1_t){.id = id,
                            .subject = "Hello",
                            .body = "<p>Hi</p>",
                            .body_is_html = true,
                            .headers = {1, s_letter_keys, s_letter_values}};
}

static fq_letter_v2_t s_sample_letter_v2(uint64_t id)
{
    return (fq_letter_v2_t){.id = id,
                            .subject = "Hello",
                            .body = "<p>Hi</p>",
                            .body_is_html = true,
                            .headers = {1, s_letter_keys, s_letter_values},
                            .text_body = "Hi, in plain text"};
}

static void s_assert_letter_v1(const fq_letter_v1_t *got, uint64_t id)
{
    assert_int_equal(got->id, id);
    assert_string_equal(got->subject, "Hello");
    assert_string_equal(got->body, "<p>Hi</p>");
    assert_true(got->body_is_html);
    assert_int_equal(got->headers.count, 1);
    assert_string_equal(got->headers.keys[0], "List-Id");
    assert_string_equal(got->headers.values[0], "<news.example.com>");
}

//  An older receiver takes the newer layout: the appended field is one of
//  the trailing extras it ignores.
static void test_older_receiver_takes_appended_field(void **state)
{
    msgpack_zone *zone = *state;
    fq_letter_v2_t sent = s_sample_letter_v2(7);
    msgpack_object *body = s_over_wire(&fq_letter_v2_desc, &sent, zone);
    assert_int_equal(body->via.array.size, 6);
    fq_letter_v1_t got;
    assert_int_equal(fq_letter_v1_decode(body, &got, zone), 0);
    s_assert_letter_v1(&got, 7);
}

//  A newer receiver takes the older layout, which ends before the field:
//  it decodes as "" (never NULL), the rest as sent; with it, as sent.
static void test_newer_receiver_takes_body_without_field(void **state)
{
    msgpack_zone *zone = *state;
    fq_letter_v1_t old = s_sample_letter_v1(8);
    msgpack_object *body = s_over_wire(&fq_letter_v1_desc, &old, zone);
    assert_int_equal(body->via.array.size, 5);
    fq_letter_v2_t got;
    assert_int_equal(fq_letter_v2_decode(body, &got, zone), 0);
    fq_letter_v1_t common = {.id = got.id,
                             .subject = got.subject,
                             .body = got.body,
                             .body_is_html = got.body_is_html,
                             .headers = got.headers};
    s_assert_letter_v1(&common, 8);
    assert_non_null(got.text_body);
    assert_string_equal(got.text_body, "");

    fq_letter_v2_t sent = s_sample_letter_v2(9);
    assert_int_equal(fq_letter_v2_decode(s_over_wire(&fq_letter_v2_desc, &sent, zone), &got, zone),
                     0);
    assert_string_equal(got.text_body, "Hi, in plain text");
    //  The descriptor asks a body (and a list item) for the required fields
    assert_int_equal(fq_letter_v2_desc.nfields, 5);
    assert_int_equal(fq_letter_v1_desc.nfields, 5);
}

//  The optional field is optional only at the end: a body short of a
//  required field is refused still, and the field, when there, is held
//  to its type like any other.
static void test_optional_field_still_checked(void **state)
{
    msgpack_zone *zone = *state;
    fq_letter_v2_t sent = s_sample_letter_v2(10);
    msgpack_object *body = s_over_wire(&fq_letter_v2_desc, &sent, zone);
    fq_letter_v2_t got;
    for (uint32_t n = 0; n < 5; n++) {
        body->via.array.size = n;
        assert_int_equal(fq_letter_v2_decode(body, &got, zone), FQ_EDECODE);
    }
    body->via.array.size = 6;
    body->via.array.ptr[5] = s_specimen(MSGPACK_OBJECT_POSITIVE_INTEGER);
    assert_int_equal(fq_letter_v2_decode(body, &got, zone), FQ_EDECODE);
}

//  The same both ways for the items of a list (MESSAGES of MSGs): items
//  are checked against the required count, so an older peer's items pass.
static void test_list_items_across_layouts(void **state)
{
    msgpack_zone *zone = *state;
    fq_letter_v2_t new_items[] = {s_sample_letter_v2(1), s_sample_letter_v2(2)};
    fq_letters_v2_t new_list = {.letters = {2, new_items}};
    fq_letters_v1_t got_v1;
    assert_int_equal(
        fq_letters_v1_decode(s_over_wire(&fq_letters_v2_desc, &new_list, zone), &got_v1, zone), 0);
    assert_int_equal(got_v1.letters.count, 2);
    for (uint32_t i = 0; i < 2; i++)
        s_assert_letter_v1(&got_v1.letters.items[i], i + 1);

    fq_letter_v1_t old_items[] = {s_sample_letter_v1(3), s_sample_letter_v1(4)};
    fq_letters_v1_t old_list = {.letters = {2, old_items}};
    fq_letters_v2_t got_v2;
    assert_int_equal(
        fq_letters_v2_decode(s_over_wire(&fq_letters_v1_desc, &old_list, zone), &got_v2, zone), 0);
    assert_int_equal(got_v2.letters.count, 2);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(got_v2.letters.items[i].id, i + 3);
        assert_string_equal(got_v2.letters.items[i].body, "<p>Hi</p>");
        assert_string_equal(got_v2.letters.items[i].text_body, "");
    }

    //  An item short of a required field is refused in a list too
    msgpack_object *body = s_over_wire(&fq_letters_v1_desc, &old_list, zone);
    body->via.array.ptr[0].via.array.ptr[1].via.array.size = 4;
    assert_int_equal(fq_letters_v2_decode(body, &got_v2, zone), FQ_EDECODE);
}

// --------------------------------------------------------------------------
//  A number appended to a message peers already speak (FQ_U32_OPT)

//  A newer receiver takes the older layout, which ends before the number:
//  it decodes as 0 (whatever the struct held), the rest as sent.
static void test_u32_opt_absent_decodes_zero(void **state)
{
    msgpack_zone *zone = *state;
    fq_refusal_v1_t old = {.id = 11, .permanent = false, .error = "451 try later"};
    msgpack_object *body = s_over_wire(&fq_refusal_v1_desc, &old, zone);
    assert_int_equal(body->via.array.size, 3);
    fq_refusal_v2_t got;
    memset(&got, 0xA5, sizeof got);
    assert_int_equal(fq_refusal_v2_decode(body, &got, zone), 0);
    assert_int_equal(got.id, 11);
    assert_false(got.permanent);
    assert_string_equal(got.error, "451 try later");
    assert_int_equal(got.retry_after_s, 0);
    //  Only the fields before it are required
    assert_int_equal(fq_refusal_v2_desc.nfields, 3);
}

//  With the number, it round-trips (0, a day, the largest); an older
//  receiver ignores it; present, it is held to its type.
static void test_u32_opt_round_trip(void **state)
{
    msgpack_zone *zone = *state;
    const uint32_t values[] = {0, 7, 86400, UINT32_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        fq_refusal_v2_t sent = {
            .id = 12 + i, .permanent = true, .error = "HTTP 429", .retry_after_s = values[i]};
        msgpack_object *body = s_over_wire(&fq_refusal_v2_desc, &sent, zone);
        assert_int_equal(body->via.array.size, 4);
        fq_refusal_v2_t got;
        assert_int_equal(fq_refusal_v2_decode(body, &got, zone), 0);
        assert_int_equal(got.id, 12 + i);
        assert_true(got.permanent);
        assert_string_equal(got.error, "HTTP 429");
        assert_int_equal(got.retry_after_s, values[i]);
        fq_refusal_v1_t older;
        assert_int_equal(fq_refusal_v1_decode(body, &older, zone), 0);
        assert_int_equal(older.id, 12 + i);
        assert_string_equal(older.error, "HTTP 429");
    }
    fq_refusal_v2_t sent = {.id = 20, .error = "x", .retry_after_s = 1};
    msgpack_object *body = s_over_wire(&fq_refusal_v2_desc, &sent, zone);
    fq_refusal_v2_t got;
    const msgpack_object wrong[] = {
        s_specimen(MSGPACK_OBJECT_STR),
        s_specimen(MSGPACK_OBJECT_NEGATIVE_INTEGER),
        s_specimen(MSGPACK_OBJECT_BOOLEAN),
        {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)UINT32_MAX + 1}};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        body->via.array.ptr[3] = wrong[i];
        if (fq_refusal_v2_decode(body, &got, zone) != FQ_EDECODE)
            fail_msg("wrong value %zu taken", i);
    }
    //  A body short of a required field is refused still
    body->via.array.size = 2;
    assert_int_equal(fq_refusal_v2_decode(body, &got, zone), FQ_EDECODE);
}

// --------------------------------------------------------------------------
//  Look-up by id

//  fq_schema_find returns the runtime descriptor for a known id, with its
//  name, and NULL for an id the table does not hold.
static void test_schema_find(void **unused)
{
    (void)unused;
    const fq_msgdesc_t *desc = fq_schema_find(fq_sysmsg_schema, FQ_MSG_TERMINATED);
    assert_ptr_equal(desc, &fq_terminated_desc);
    assert_string_equal(desc->name, "TERMINATED");
    assert_int_equal(desc->size, sizeof(fq_terminated_t));

    desc = fq_schema_find(fq_sysmsg_schema, FQ_MSG_GW_HELLO);
    assert_non_null(desc);
    assert_string_equal(desc->name, "GW_HELLO");

    const uint32_t absent[] = {0, 6, 99, FQ_MSG_USER_FIRST, FQ_MSG_PING, UINT32_MAX};
    for (size_t k = 0; k < sizeof absent / sizeof absent[0]; k++)
        assert_null(fq_schema_find(fq_sysmsg_schema, absent[k]));
}

//  Every runtime message is found by its own id, ids are unique and all
//  lie below the first application id.
static void test_sysmsg_table_is_consistent(void **unused)
{
    (void)unused;
    size_t count = 0;
    for (const fq_msgdesc_t *const *d = fq_sysmsg_schema; *d; d++, count++) {
        assert_ptr_equal(fq_schema_find(fq_sysmsg_schema, (*d)->id), *d);
        assert_in_range((*d)->id, 1, FQ_MSG_USER_FIRST - 1);
        assert_non_null((*d)->name);
        assert_non_null((*d)->encode);
        assert_non_null((*d)->decode);
    }
    assert_true(count > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alltypes_round_trip, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_descriptor_decodes_like_typed_function, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_numeric_extremes_round_trip, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_empty_values_round_trip, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_fieldless_message_round_trip, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_large_values_round_trip, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_extra_trailing_fields_accepted, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_integer_in_double_field_accepted, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type_in_each_field_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_too_few_fields_refused, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_non_array_body_refused, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_string_with_embedded_nul_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_integer_out_of_range_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_negative_in_unsigned_field_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_strmap_with_non_string_entry_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_u64list_with_non_integer_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_refusal_from_real_bytes, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_round_trip, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_empty_list_round_trip, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_long_list_round_trip, s_zone_setup, s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_item_with_extra_fields_accepted, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_item_not_a_body_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_item_with_wrong_field_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_field_of_wrong_type_refused, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_refusal_from_real_bytes, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_older_receiver_takes_appended_field, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_newer_receiver_takes_body_without_field, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_optional_field_still_checked, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_list_items_across_layouts, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_u32_opt_absent_decodes_zero, s_zone_setup,
                                        s_zone_teardown),
        cmocka_unit_test_setup_teardown(test_u32_opt_round_trip, s_zone_setup, s_zone_teardown),
        cmocka_unit_test(test_schema_find),
        cmocka_unit_test(test_sysmsg_table_is_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
