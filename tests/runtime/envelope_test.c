/*  envelope_test.c — the frame every actor message travels in.

    A sender wraps a typed message with fq_envelope_encode; the receiver
    gets the bytes from a mailbox or from a tcp peer and calls
    fq_envelope_decode, then the message's own decoder on env.body. The
    bytes may come from anyone, so most of this file feeds the decoder
    garbage: truncations, random bytes, mutated frames and frames that
    claim to be far bigger than they are.
*/
#include "fq_envelope.h"
#include "fq_error.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

//  Zone the decoded strings and body live in; msgpack's usual chunk size.
enum { S_ZONE_CHUNK = 8192 };

//  Seed of the random-frame tests, fixed so a failure can be replayed.
#define S_SEED 0x5eed5eedf00dULL

//  Heap growth a refused hostile frame may cause: a few zone chunks, far
//  below what its size claims would need.
#define S_HOSTILE_HEAP_LIMIT (1024u * 1024u)

#if defined(__SANITIZE_ADDRESS__)
//  From AddressSanitizer's allocator interface (not shipped as a header by
//  every compiler): bytes currently allocated through malloc.
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t s_heap_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t s_heap_bytes(void)
{
    return 0; //  Without ASan the allocation bound is not measured
}
#endif

typedef struct {
    msgpack_zone *zone;
    msgpack_sbuffer buf;
} s_fixture_t;

static int s_setup(void **state)
{
    s_fixture_t *self = calloc(1, sizeof *self);
    if (!self)
        return -1;
    self->zone = msgpack_zone_new(S_ZONE_CHUNK);
    msgpack_sbuffer_init(&self->buf);
    *state = self;
    return self->zone ? 0 : -1;
}

static int s_teardown(void **state)
{
    s_fixture_t *self = *state;
    msgpack_zone_free(self->zone);
    msgpack_sbuffer_destroy(&self->buf);
    free(self);
    return 0;
}

//  Decodes a private heap copy of exactly size bytes, so AddressSanitizer
//  reports any read past the end of the frame.
static int s_decode_exact(const void *data, size_t size, msgpack_zone *zone, fq_envelope_t *env,
                          void **copy_p)
{
    void *copy = malloc(size ? size : 1);
    assert_non_null(copy);
    if (size)
        memcpy(copy, data, size);
    *copy_p = copy;
    return fq_envelope_decode(copy, size, zone, env);
}

//  Same as above for fq_msgpack_check.
static int s_check_exact(const void *data, size_t size)
{
    void *copy = malloc(size ? size : 1);
    assert_non_null(copy);
    if (size)
        memcpy(copy, data, size);
    int rc = fq_msgpack_check(copy, size);
    free(copy);
    return rc;
}

//  A decoded envelope is internally consistent: its strings and body are
//  there, and re-encoding it (as a gateway forwarding the frame does)
//  decodes to the same fields and re-encodes to the same bytes.
static void s_assert_consistent(const fq_envelope_t *env)
{
    assert_non_null(env->sender);
    assert_non_null(env->to);
    assert_non_null(env->body);

    msgpack_sbuffer buf, again_buf;
    msgpack_sbuffer_init(&buf);
    msgpack_sbuffer_init(&again_buf);
    assert_int_equal(fq_envelope_encode(&buf, env->type, env->flags, env->corr, env->sender,
                                        env->to, NULL, NULL, &env->raw),
                     0);
    msgpack_zone *zone = msgpack_zone_new(S_ZONE_CHUNK);
    fq_envelope_t again;
    assert_int_equal(fq_envelope_decode(buf.data, buf.size, zone, &again), 0);
    assert_int_equal(again.type, env->type);
    assert_int_equal(again.flags, env->flags);
    assert_int_equal(again.corr, env->corr);
    assert_string_equal(again.sender, env->sender);
    assert_string_equal(again.to, env->to);
    assert_int_equal(again.body->type, env->body->type);
    //  Bytes rather than msgpack_object_equal, which says NaN != NaN
    assert_int_equal(fq_envelope_encode(&again_buf, again.type, again.flags, again.corr,
                                        again.sender, again.to, NULL, NULL, &again.raw),
                     0);
    assert_int_equal(again_buf.size, buf.size);
    assert_memory_equal(again_buf.data, buf.data, buf.size);
    msgpack_zone_free(zone);
    msgpack_sbuffer_destroy(&buf);
    msgpack_sbuffer_destroy(&again_buf);
}

//  A small, seeded generator (xorshift64*), so runs are reproducible
//  without touching the process-wide rand() state.
static uint64_t s_random(uint64_t *seed)
{
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    return *seed * 0x2545f4914f6cdd1dULL;
}

//  Encodes a typical ask: ping from /user/client to a remote actor.
static void s_encode_sample(msgpack_sbuffer *buf)
{
    fq_ping_t ping = {.seq = 41, .text = "héllo"};
    assert_int_equal(fq_envelope_encode(buf, FQ_MSG_PING, FQ_ENV_ASK, 77, "/user/client",
                                        "fq://billing/user/ledger", &fq_ping_desc, &ping, NULL),
                     0);
}

// --------------------------------------------------------------------------
//  Round trips

//  A tell to a local mailbox: type, flags, corr and sender come back, "to"
//  is "" and the body decodes to the message sent.
static void test_local_tell_round_trip(void **state)
{
    s_fixture_t *self = *state;
    fq_ping_t ping = {.seq = 41, .text = "hi"};
    assert_int_equal(fq_envelope_encode(&self->buf, FQ_MSG_PING, 0, 0, "/user/a", NULL,
                                        &fq_ping_desc, &ping, NULL),
                     0);

    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);
    assert_int_equal(env.type, FQ_MSG_PING);
    assert_int_equal(env.flags, 0);
    assert_int_equal(env.corr, 0);
    assert_string_equal(env.sender, "/user/a");
    assert_string_equal(env.to, "");
    fq_ping_t got;
    assert_int_equal(fq_ping_decode(env.body, &got, self->zone), 0);
    assert_int_equal(got.seq, 41);
    assert_string_equal(got.text, "hi");
}

//  An ask through the gateway: flags, the full corr range, and a remote
//  "to" address all survive.
static void test_remote_ask_round_trip(void **state)
{
    s_fixture_t *self = *state;
    fq_alltypes_t msg = {.u = 5, .i = -5, .s = "x"};
    assert_int_equal(fq_envelope_encode(&self->buf, FQ_MSG_ALLTYPES, FQ_ENV_ASK | FQ_ENV_REMOTE,
                                        UINT64_MAX, "tcp://10.0.0.1:7000/user/client",
                                        "fq://billing/user/ledger", &fq_alltypes_desc, &msg, NULL),
                     0);

    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);
    assert_int_equal(env.type, FQ_MSG_ALLTYPES);
    assert_int_equal(env.flags, FQ_ENV_ASK | FQ_ENV_REMOTE);
    assert_int_equal(env.corr, UINT64_MAX);
    assert_string_equal(env.sender, "tcp://10.0.0.1:7000/user/client");
    assert_string_equal(env.to, "fq://billing/user/ledger");
    fq_alltypes_t got;
    assert_int_equal(fq_alltypes_decode(env.body, &got, self->zone), 0);
    assert_int_equal(got.u, 5);
    assert_int_equal(got.i, -5);
    assert_string_equal(got.s, "x");
}

//  An unknown sender (NULL) arrives as "", an empty "to" is the same as
//  none: both sides see plain C strings, never NULL.
static void test_missing_addresses_arrive_empty(void **state)
{
    s_fixture_t *self = *state;
    fq_count_t count = {0};
    assert_int_equal(
        fq_envelope_encode(&self->buf, FQ_MSG_COUNT, 0, 1, NULL, "", &fq_count_desc, &count, NULL),
        0);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);
    assert_string_equal(env.sender, "");
    assert_string_equal(env.to, "");
    assert_int_equal(env.body->type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal(env.body->via.array.size, 0);
}

//  A gateway forwards a body untouched with raw_body, the bytes that the
//  head's decoding left undecoded: the receiver decodes the same typed
//  message, with the new routing fields.
static void test_raw_body_forwarding(void **state)
{
    s_fixture_t *self = *state;
    s_encode_sample(&self->buf);
    fq_envelope_t in;
    assert_int_equal(fq_envelope_decode_head(self->buf.data, self->buf.size, self->zone, &in), 0);
    assert_null(in.body);
    assert_int_equal(in.type, FQ_MSG_PING);
    assert_string_equal(in.sender, "/user/client");
    //  The body is the frame's last object: its bytes end the frame
    assert_ptr_equal(in.raw.data + in.raw.size, self->buf.data + self->buf.size);

    msgpack_sbuffer out_buf;
    msgpack_sbuffer_init(&out_buf);
    assert_int_equal(fq_envelope_encode(&out_buf, in.type, in.flags | FQ_ENV_REMOTE, in.corr,
                                        "fq://front/user/client", NULL, NULL, NULL, &in.raw),
                     0);
    fq_envelope_t out;
    assert_int_equal(fq_envelope_decode(out_buf.data, out_buf.size, self->zone, &out), 0);
    assert_int_equal(out.type, FQ_MSG_PING);
    assert_int_equal(out.flags, FQ_ENV_ASK | FQ_ENV_REMOTE);
    assert_int_equal(out.corr, 77);
    assert_string_equal(out.sender, "fq://front/user/client");
    assert_string_equal(out.to, "");
    fq_ping_t got;
    assert_int_equal(fq_ping_decode(out.body, &got, self->zone), 0);
    assert_int_equal(got.seq, 41);
    assert_string_equal(got.text, "héllo");
    msgpack_sbuffer_destroy(&out_buf);
}

//  Without a typed or raw body the envelope carries nil, which no typed
//  decoder accepts.
static void test_no_body_is_nil(void **state)
{
    s_fixture_t *self = *state;
    assert_int_equal(fq_envelope_encode(&self->buf, FQ_MSG_TICK, FQ_ENV_REPLY, 3, "/user/a", NULL,
                                        NULL, NULL, NULL),
                     0);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);
    assert_int_equal(env.flags, FQ_ENV_REPLY);
    assert_int_equal(env.body->type, MSGPACK_OBJECT_NIL);
    fq_tick_t tick;
    assert_int_equal(fq_tick_decode(env.body, &tick, self->zone), FQ_EDECODE);
}

//  Several envelopes appended to one buffer are separate frames: each
//  decodes alone, and the concatenation is refused as one frame.
static void test_concatenated_frames_refused(void **state)
{
    s_fixture_t *self = *state;
    s_encode_sample(&self->buf);
    size_t first = self->buf.size;
    s_encode_sample(&self->buf);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(self->buf.data, first, self->zone, &env), 0);
    assert_int_equal(
        fq_envelope_decode(self->buf.data + first, self->buf.size - first, self->zone, &env), 0);
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env),
                     FQ_EDECODE);
}

// --------------------------------------------------------------------------
//  Envelope fields of the wrong type

//  The six envelope fields of a valid tell, as msgpack objects.
static void s_valid_fields(msgpack_object fields[6])
{
    memset(fields, 0, 6 * sizeof fields[0]);
    fields[0].type = MSGPACK_OBJECT_POSITIVE_INTEGER; //  type
    fields[0].via.u64 = FQ_MSG_TICK;
    fields[1].type = MSGPACK_OBJECT_POSITIVE_INTEGER; //  flags
    fields[2].type = MSGPACK_OBJECT_POSITIVE_INTEGER; //  corr
    fields[3].type = MSGPACK_OBJECT_STR;              //  sender
    fields[3].via.str.ptr = "/user/a";
    fields[3].via.str.size = 7;
    fields[4].type = MSGPACK_OBJECT_NIL; //  to
    fields[5].type = MSGPACK_OBJECT_NIL; //  body
}

//  Packs [fields...] (count of them) as one frame into buf.
static void s_pack_fields(msgpack_sbuffer *buf, msgpack_object *fields, uint32_t count)
{
    msgpack_sbuffer_clear(buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    msgpack_object root = {.type = MSGPACK_OBJECT_ARRAY};
    root.via.array.size = count;
    root.via.array.ptr = fields;
    assert_int_equal(msgpack_pack_object(&pk, root), 0);
}

//  An envelope field of the wrong type or range is refused: type or flags
//  as a string, negative or above 32 bits; corr negative or a string;
//  sender missing, an int or holding a NUL; "to" an int, a bool or holding
//  a NUL.
static void test_field_type_errors_refused(void **state)
{
    s_fixture_t *self = *state;
    const struct {
        int field;
        msgpack_object_type type;
        int64_t number; //  For integers
        const char *text;
        uint32_t text_size;
    } cases[] = {
        {0, MSGPACK_OBJECT_STR, 0, "100", 3},
        {0, MSGPACK_OBJECT_NEGATIVE_INTEGER, -1, NULL, 0},
        {0, MSGPACK_OBJECT_POSITIVE_INTEGER, (int64_t)UINT32_MAX + 1, NULL, 0},
        {0, MSGPACK_OBJECT_NIL, 0, NULL, 0},
        {0, MSGPACK_OBJECT_FLOAT64, 0, NULL, 0},
        {1, MSGPACK_OBJECT_STR, 0, "ask", 3},
        {1, MSGPACK_OBJECT_NEGATIVE_INTEGER, -4, NULL, 0},
        {1, MSGPACK_OBJECT_POSITIVE_INTEGER, (int64_t)UINT32_MAX + 1, NULL, 0},
        {2, MSGPACK_OBJECT_NEGATIVE_INTEGER, -1, NULL, 0},
        {2, MSGPACK_OBJECT_NEGATIVE_INTEGER, INT64_MIN, NULL, 0},
        {2, MSGPACK_OBJECT_STR, 0, "77", 2},
        {2, MSGPACK_OBJECT_NIL, 0, NULL, 0},
        {3, MSGPACK_OBJECT_POSITIVE_INTEGER, 5, NULL, 0},
        {3, MSGPACK_OBJECT_NIL, 0, NULL, 0},
        {3, MSGPACK_OBJECT_BIN, 0, "/user/a", 7},
        {3, MSGPACK_OBJECT_STR, 0, "/user\0/a", 8},
        {4, MSGPACK_OBJECT_POSITIVE_INTEGER, 5, NULL, 0},
        {4, MSGPACK_OBJECT_BOOLEAN, 1, NULL, 0},
        {4, MSGPACK_OBJECT_ARRAY, 0, NULL, 0},
        {4, MSGPACK_OBJECT_STR, 0, "fq://a\0/x", 9},
    };
    msgpack_object fields[6];
    fq_envelope_t env;

    s_valid_fields(fields);
    s_pack_fields(&self->buf, fields, 6);
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        s_valid_fields(fields);
        msgpack_object *f = &fields[cases[c].field];
        f->type = cases[c].type;
        if (cases[c].type == MSGPACK_OBJECT_STR || cases[c].type == MSGPACK_OBJECT_BIN) {
            f->via.str.ptr = cases[c].text;
            f->via.str.size = cases[c].text_size;
        } else if (cases[c].type == MSGPACK_OBJECT_BOOLEAN)
            f->via.boolean = cases[c].number != 0;
        else if (cases[c].type == MSGPACK_OBJECT_FLOAT64)
            f->via.f64 = 1.0;
        else
            f->via.i64 = cases[c].number;
        s_pack_fields(&self->buf, fields, 6);
        int rc = fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env);
        if (rc != FQ_EDECODE)
            fail_msg("case %zu (field %d): got %s", c, cases[c].field, fq_err_name(rc));
    }
}

//  A frame with fewer than six fields is refused; one with more is a newer
//  peer and is accepted.
static void test_field_count(void **state)
{
    s_fixture_t *self = *state;
    msgpack_object fields[8];
    fq_envelope_t env;
    for (uint32_t count = 0; count < 6; count++) {
        s_valid_fields(fields);
        s_pack_fields(&self->buf, fields, count);
        assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env),
                         FQ_EDECODE);
    }
    s_valid_fields(fields);
    fields[6] = fields[3];
    fields[7] = fields[0];
    s_pack_fields(&self->buf, fields, 8);
    assert_int_equal(fq_envelope_decode(self->buf.data, self->buf.size, self->zone, &env), 0);
    assert_int_equal(env.type, FQ_MSG_TICK);
    assert_string_equal(env.sender, "/user/a");
    //  Its body is the sixth field alone (a nil), and forwarded it makes a
    //  frame of six
    assert_int_equal(env.raw.size, 1);
    assert_int_equal((uint8_t)env.raw.data[0], 0xc0);
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    assert_int_equal(fq_envelope_encode(&out, env.type, env.flags, env.corr, env.sender, NULL, NULL,
                                        NULL, &env.raw),
                     0);
    assert_int_equal(fq_envelope_decode(out.data, out.size, self->zone, &env), 0);
    assert_int_equal(env.body->type, MSGPACK_OBJECT_NIL);
    msgpack_sbuffer_destroy(&out);
}

//  The head of a frame whose root array has a 16- or 32-bit count (another
//  encoder's choice for six fields) decodes as the short form's does, and
//  its body is the same bytes; a frame cut inside its body is refused.
static void test_head_of_each_array_form(void **state)
{
    s_fixture_t *self = *state;
    s_encode_sample(&self->buf);
    assert_int_equal((uint8_t)self->buf.data[0], 0x96);
    const uint8_t headers[][5] = {{0xdc, 0x00, 0x06}, {0xdd, 0x00, 0x00, 0x00, 0x06}};
    const size_t header_sizes[] = {3, 5};
    for (int h = 0; h < 2; h++) {
        size_t size = header_sizes[h] + self->buf.size - 1;
        char *frame = malloc(size);
        assert_non_null(frame);
        memcpy(frame, headers[h], header_sizes[h]);
        memcpy(frame + header_sizes[h], self->buf.data + 1, self->buf.size - 1);
        fq_envelope_t env;
        assert_int_equal(fq_envelope_decode_head(frame, size, self->zone, &env), 0);
        assert_null(env.body);
        assert_int_equal(env.type, FQ_MSG_PING);
        assert_int_equal(env.corr, 77);
        assert_string_equal(env.to, "fq://billing/user/ledger");
        assert_ptr_equal(env.raw.data + env.raw.size, frame + size);
        assert_int_equal(fq_envelope_decode_body(self->zone, &env), 0);
        fq_ping_t got;
        assert_int_equal(fq_ping_decode(env.body, &got, self->zone), 0);
        assert_int_equal(got.seq, 41);
        //  Cut short, inside the body: the head alone is refused too
        assert_int_equal(fq_envelope_decode_head(frame, size - 1, self->zone, &env), FQ_EDECODE);
        free(frame);
    }
}

//  A frame whose root is not an array is refused.
static void test_non_array_root_refused(void **state)
{
    s_fixture_t *self = *state;
    const unsigned char frames[][8] = {
        {0xc0},                               //  nil
        {0x06},                               //  6
        {0xa6, 'a', 'b', 'c', 'd', 'e', 'f'}, //  "abcdef"
        {0x81, 0x00, 0x01},                   //  {0: 1}
        {0xd4, 0x01, 0x00},                   //  fixext 1
    };
    const size_t sizes[] = {1, 1, 7, 3, 3};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        fq_envelope_t env;
        void *copy;
        assert_int_equal(s_decode_exact(frames[k], sizes[k], self->zone, &env, &copy), FQ_EDECODE);
        free(copy);
    }
}

// --------------------------------------------------------------------------
//  Garbage

//  Every proper prefix of a valid frame (a connection cut mid-frame) is
//  refused, and none is read past its end.
static void test_every_truncation_refused(void **state)
{
    s_fixture_t *self = *state;
    fq_alltypes_t msg = {.s = "truncate me", .u = UINT64_MAX, .d = 2.5};
    const char *keys[] = {"k"}, *values[] = {"v"};
    const uint64_t ids[] = {1, 300, 70000, UINT64_MAX};
    msg.fields = (fq_strmap_t){1, keys, values};
    msg.ids = (fq_u64list_t){4, ids};
    msg.bytes = (fq_bin_t){"\0\1\2", 3};
    assert_int_equal(fq_envelope_encode(&self->buf, FQ_MSG_ALLTYPES, FQ_ENV_ASK, 1ull << 40,
                                        "/user/a", "tcp://h:1/user/b", &fq_alltypes_desc, &msg,
                                        NULL),
                     0);
    for (size_t len = 0; len < self->buf.size; len++) {
        fq_envelope_t env;
        void *copy;
        int rc = s_decode_exact(self->buf.data, len, self->zone, &env, &copy);
        if (rc != FQ_EDECODE)
            fail_msg("prefix of %zu of %zu bytes: got %s", len, self->buf.size, fq_err_name(rc));
        free(copy);
        msgpack_zone_clear(self->zone);
    }
    void *copy;
    fq_envelope_t env;
    assert_int_equal(s_decode_exact(self->buf.data, self->buf.size, self->zone, &env, &copy), 0);
    free(copy);
}

//  Random bytes never crash the decoder; the rare frame that decodes is a
//  genuinely valid, self-consistent envelope.
static void test_random_frames(void **state)
{
    s_fixture_t *self = *state;
    enum { S_FRAMES = 20000, S_MAX_LEN = 256 };
    uint64_t seed = S_SEED;
    unsigned char frame[S_MAX_LEN];
    for (int n = 0; n < S_FRAMES; n++) {
        size_t len = s_random(&seed) % (S_MAX_LEN + 1);
        for (size_t k = 0; k < len; k++)
            frame[k] = (unsigned char)s_random(&seed);
        //  Half the frames start like an envelope, so decoding gets past
        //  the first byte more often
        if (len && n % 2)
            frame[0] = 0x96;
        fq_envelope_t env;
        void *copy;
        int rc = s_decode_exact(frame, len, self->zone, &env, &copy);
        assert_true(rc == 0 || rc == FQ_EDECODE);
        if (rc == 0) {
            assert_int_equal(fq_msgpack_check(copy, len), 0);
            s_assert_consistent(&env);
        }
        free(copy);
        msgpack_zone_clear(self->zone);
    }
}

//  A valid frame with a few bytes flipped, dropped or appended never
//  crashes the decoder, and whatever it accepts is consistent.
static void test_mutated_frames(void **state)
{
    s_fixture_t *self = *state;
    enum { S_MUTANTS = 20000, S_MAX_FLIPS = 4, S_SLACK = 8 };
    s_encode_sample(&self->buf);
    size_t size = self->buf.size;
    unsigned char *frame = malloc(size + S_SLACK);
    assert_non_null(frame);
    uint64_t seed = S_SEED;
    int accepted = 0;
    for (int n = 0; n < S_MUTANTS; n++) {
        memcpy(frame, self->buf.data, size);
        size_t len = size;
        int flips = 1 + (int)(s_random(&seed) % S_MAX_FLIPS);
        for (int k = 0; k < flips; k++)
            frame[s_random(&seed) % size] = (unsigned char)s_random(&seed);
        uint64_t resize = s_random(&seed) % 4;
        if (resize == 1)
            len -= s_random(&seed) % len;
        else if (resize == 2)
            for (int k = 0; k < S_SLACK; k++)
                frame[len++] = (unsigned char)s_random(&seed);
        fq_envelope_t env;
        void *copy;
        int rc = s_decode_exact(frame, len, self->zone, &env, &copy);
        assert_true(rc == 0 || rc == FQ_EDECODE);
        if (rc == 0) {
            accepted++;
            s_assert_consistent(&env);
            fq_ping_t ping;
            int ping_rc = fq_ping_decode(env.body, &ping, self->zone);
            assert_true(ping_rc == 0 || ping_rc == FQ_EDECODE);
            if (ping_rc == 0)
                assert_non_null(ping.text);
        }
        free(copy);
        msgpack_zone_clear(self->zone);
    }
    //  Flipping a byte inside a string keeps the frame valid: some must pass
    assert_true(accepted > 0);
    free(frame);
}

// --------------------------------------------------------------------------
//  Hostile size claims

//  Decodes a frame that claims far more than it holds; it must be refused
//  without the heap growing toward what the claim would need.
static void s_assert_hostile_refused(const void *frame, size_t size, msgpack_zone *zone)
{
    size_t before = s_heap_bytes();
    fq_envelope_t env;
    void *copy;
    assert_int_equal(s_decode_exact(frame, size, zone, &env, &copy), FQ_EDECODE);
    size_t after = s_heap_bytes();
    assert_true(after < before + S_HOSTILE_HEAP_LIMIT);
    free(copy);
    msgpack_zone_clear(zone);
}

//  Five-byte frames claiming a 4-billion-element array or map, or a 4 GB
//  string, binary or extension, are refused at once, as is a 4-billion
//  array claim in the body of an otherwise valid envelope.
static void test_huge_claims_refused(void **state)
{
    s_fixture_t *self = *state;
    const unsigned char claims[][7] = {
        {0xdd, 0xff, 0xff, 0xff, 0xff},           //  array32 of 2^32 - 1
        {0xdf, 0xff, 0xff, 0xff, 0xff},           //  map32 of 2^32 - 1 pairs
        {0xdb, 0xff, 0xff, 0xff, 0xff, 'a', 'b'}, //  str32 of 4 GB
        {0xc6, 0xff, 0xff, 0xff, 0xff, 0x00},     //  bin32 of 4 GB
        {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},     //  ext32 of 4 GB
        {0xdd, 0x00, 0x98, 0x96, 0x80},           //  array32 of 10 million
        {0xdf, 0x00, 0x98, 0x96, 0x80},           //  map32 of 10 million pairs
        {0xdc, 0xff, 0xff, 0x00},                 //  array16 of 65535
        {0xde, 0xff, 0xff, 0x00},                 //  map16 of 65535 pairs
    };
    const size_t sizes[] = {5, 5, 7, 6, 6, 5, 5, 4, 4};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        s_assert_hostile_refused(claims[k], sizes[k], self->zone);
        assert_int_equal(s_check_exact(claims[k], sizes[k]), FQ_EDECODE);
    }

    //  [1, 0, 0, "", nil, array32(10 million)] with nothing after the claim
    const unsigned char in_body[] = {0x96, 0x01, 0x00, 0x00, 0xa0, 0xc0,
                                     0xdd, 0x00, 0x98, 0x96, 0x80};
    s_assert_hostile_refused(in_body, sizeof in_body, self->zone);
}

//  Arrays nested 10,000 deep (in a bare frame or as an envelope body) are
//  refused without exhausting the stack.
static void test_deep_nesting_refused(void **state)
{
    s_fixture_t *self = *state;
    enum { S_DEPTH = 10000, S_HEADER = 6 };
    const unsigned char header[S_HEADER] = {0x96, 0x01, 0x00, 0x00, 0xa0, 0xc0};
    unsigned char *frame = malloc(S_HEADER + S_DEPTH + 1);
    assert_non_null(frame);
    memcpy(frame, header, S_HEADER);
    memset(frame + S_HEADER, 0x91, S_DEPTH); //  [[[[...
    frame[S_HEADER + S_DEPTH] = 0xc0;        //  ...nil]]]]

    s_assert_hostile_refused(frame + S_HEADER, S_DEPTH + 1, self->zone);
    s_assert_hostile_refused(frame, S_HEADER + S_DEPTH + 1, self->zone);
    //  The size guard walks iteratively: any depth is checked without recursion
    int rc = s_check_exact(frame, S_HEADER + S_DEPTH + 1);
    assert_true(rc == 0 || rc == FQ_EDECODE);
    free(frame);
}

//  Builds, in a lazily-mapped region, a frame of exactly size bytes: an
//  envelope whose body is one big binary. Only the header page is touched,
//  so the frame costs no real memory whatever its size.
static unsigned char *s_map_big_frame(size_t size)
{
    msgpack_sbuffer header;
    msgpack_sbuffer_init(&header);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &header, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 6);
    msgpack_pack_uint32(&pk, FQ_MSG_TICK);
    msgpack_pack_uint32(&pk, 0);
    msgpack_pack_uint64(&pk, 0);
    msgpack_pack_str_with_body(&pk, "", 0);
    msgpack_pack_nil(&pk);
    size_t bin_header = 5; //  bin32: tag and 4-byte length
    size_t body = size - header.size - bin_header;
    msgpack_pack_bin(&pk, body);
    assert_int_equal(header.size + body, size);

    unsigned char *frame = mmap(NULL, size, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(frame != MAP_FAILED);
    memcpy(frame, header.data, header.size);
    msgpack_sbuffer_destroy(&header);
    return frame;
}

//  A frame of FQ_ENVELOPE_MAX_SIZE bytes is accepted; one byte more and
//  it is refused, even though it is otherwise well formed.
static void test_frame_size_limit(void **state)
{
    s_fixture_t *self = *state;
    size_t size = FQ_ENVELOPE_MAX_SIZE + 1;
    unsigned char *frame = s_map_big_frame(size);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(frame, size, self->zone, &env), FQ_EDECODE);
    munmap(frame, size);

    size = FQ_ENVELOPE_MAX_SIZE;
    frame = s_map_big_frame(size);
    assert_int_equal(fq_envelope_decode(frame, size, self->zone, &env), 0);
    assert_int_equal(env.type, FQ_MSG_TICK);
    assert_int_equal(env.body->type, MSGPACK_OBJECT_BIN);
    assert_true(env.body->via.bin.size > FQ_ENVELOPE_MAX_SIZE - 16);
    munmap(frame, size);
}

// --------------------------------------------------------------------------
//  fq_msgpack_check on its own

//  Appends one packed object of each msgpack encoding to buf, recording
//  where each starts in offsets (count + 1 entries, the last is the end).
//  The 32-bit length forms need over 64 KB each; wide says whether to add
//  them.
static size_t s_pack_every_encoding(msgpack_sbuffer *buf, size_t offsets[], size_t max, bool wide)
{
    enum { S_WIDE = 70000 }; //  Just past 16-bit lengths
    static char blob[S_WIDE];
    msgpack_packer pk;
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    size_t count = 0;
#define S_ADD(call)                                                                                \
    do {                                                                                           \
        assert_true(count < max);                                                                  \
        offsets[count++] = buf->size;                                                              \
        call;                                                                                      \
    } while (0)
    S_ADD(msgpack_pack_nil(&pk));
    S_ADD(msgpack_pack_true(&pk));
    S_ADD(msgpack_pack_false(&pk));
    S_ADD(msgpack_pack_uint64(&pk, 5));          //  positive fixint
    S_ADD(msgpack_pack_int64(&pk, -5));          //  negative fixint
    S_ADD(msgpack_pack_uint64(&pk, 200));        //  uint8
    S_ADD(msgpack_pack_uint64(&pk, 60000));      //  uint16
    S_ADD(msgpack_pack_uint64(&pk, 1u << 31));   //  uint32
    S_ADD(msgpack_pack_uint64(&pk, UINT64_MAX)); //  uint64
    S_ADD(msgpack_pack_int64(&pk, -100));        //  int8
    S_ADD(msgpack_pack_int64(&pk, -30000));      //  int16
    S_ADD(msgpack_pack_int64(&pk, INT32_MIN));   //  int32
    S_ADD(msgpack_pack_int64(&pk, INT64_MIN));   //  int64
    S_ADD(msgpack_pack_float(&pk, 1.5f));
    S_ADD(msgpack_pack_double(&pk, 1.5));
    S_ADD(msgpack_pack_str_with_body(&pk, blob, 3));   //  fixstr
    S_ADD(msgpack_pack_str_with_body(&pk, blob, 200)); //  str8
    S_ADD(msgpack_pack_str_with_body(&pk, blob, 300)); //  str16
    S_ADD(msgpack_pack_bin_with_body(&pk, blob, 3));   //  bin8
    S_ADD(msgpack_pack_bin_with_body(&pk, blob, 300)); //  bin16
    for (size_t n = 1; n <= 16; n *= 2)                //  fixext 1, 2, 4, 8, 16
        S_ADD(msgpack_pack_ext_with_body(&pk, blob, n, 7));
    S_ADD(msgpack_pack_ext_with_body(&pk, blob, 3, 7));   //  ext8
    S_ADD(msgpack_pack_ext_with_body(&pk, blob, 300, 7)); //  ext16
    S_ADD(msgpack_pack_array(&pk, 0));                    //  fixarray
    S_ADD({                                               //  array16
        msgpack_pack_array(&pk, 20);
        for (int k = 0; k < 20; k++)
            msgpack_pack_nil(&pk);
    });
    S_ADD({ //  fixmap
        msgpack_pack_map(&pk, 1);
        msgpack_pack_nil(&pk);
        msgpack_pack_array(&pk, 0);
    });
    S_ADD({ //  map16
        msgpack_pack_map(&pk, 20);
        for (int k = 0; k < 40; k++)
            msgpack_pack_int64(&pk, -k);
    });
    if (wide) {
        S_ADD(msgpack_pack_str_with_body(&pk, blob, S_WIDE));    //  str32
        S_ADD(msgpack_pack_bin_with_body(&pk, blob, S_WIDE));    //  bin32
        S_ADD(msgpack_pack_ext_with_body(&pk, blob, S_WIDE, 7)); //  ext32
        S_ADD({                                                  //  array32
            msgpack_pack_array(&pk, S_WIDE);
            for (int k = 0; k < S_WIDE; k++)
                msgpack_pack_uint64(&pk, (uint64_t)k);
        });
        S_ADD({ //  map32
            msgpack_pack_map(&pk, S_WIDE);
            for (int k = 0; k < 2 * S_WIDE; k++)
                msgpack_pack_true(&pk);
        });
    }
#undef S_ADD
    offsets[count] = buf->size;
    return count;
}

//  Every msgpack encoding passes the check alone; with one trailing byte,
//  or cut short by one byte, it is refused.
static void test_check_every_encoding(void **state)
{
    s_fixture_t *self = *state;
    size_t offsets[64];
    size_t count = s_pack_every_encoding(&self->buf, offsets, 63, true);
    for (size_t k = 0; k < count; k++) {
        const char *object = self->buf.data + offsets[k];
        size_t size = offsets[k + 1] - offsets[k];
        if (s_check_exact(object, size) != 0)
            fail_msg("encoding %zu (tag 0x%02x) refused", k, (unsigned char)object[0]);
        assert_int_equal(s_check_exact(object, size - 1), FQ_EDECODE);
        char *longer = malloc(size + 1);
        assert_non_null(longer);
        memcpy(longer, object, size);
        longer[size] = 0;
        assert_int_equal(fq_msgpack_check(longer, size + 1), FQ_EDECODE);
        free(longer);
    }
}

//  Every encoding inside one array passes, and every prefix of that array
//  is refused (the 16-bit forms only: each prefix is walked, so the frame
//  is kept small).
static void test_check_nested_and_truncated(void **state)
{
    s_fixture_t *self = *state;
    size_t offsets[64];
    msgpack_sbuffer items;
    msgpack_sbuffer_init(&items);
    size_t count = s_pack_every_encoding(&items, offsets, 63, false);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &self->buf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, (uint32_t)count);
    msgpack_sbuffer_write(&self->buf, items.data, items.size);
    msgpack_sbuffer_destroy(&items);

    assert_int_equal(fq_msgpack_check(self->buf.data, self->buf.size), 0);
    for (size_t len = 0; len < self->buf.size; len++)
        if (fq_msgpack_check(self->buf.data, len) != FQ_EDECODE)
            fail_msg("prefix of %zu of %zu bytes accepted", len, self->buf.size);
}

//  The check refuses nothing at all, the never-used tag 0xc1 anywhere, and
//  a valid object followed by trailing bytes or a second object.
//  A frame announcing more than FQ_MSGPACK_MAX_ITEMS items is refused even
//  when every item is really there (a megabyte of nils must not cost 50 MB).
static void test_check_item_cap(void **unused)
{
    (void)unused;
    size_t count = FQ_MSGPACK_MAX_ITEMS + 1;
    unsigned char *frame = malloc(5 + count);
    assert_non_null(frame);
    frame[0] = 0xdd;
    frame[1] = (unsigned char)(count >> 24);
    frame[2] = (unsigned char)(count >> 16);
    frame[3] = (unsigned char)(count >> 8);
    frame[4] = (unsigned char)count;
    memset(frame + 5, 0xc0, count);
    assert_int_equal(s_check_exact(frame, 5 + count), FQ_EDECODE);
    //  One item fewer (the array itself counts) is within the cap
    count -= 2;
    frame[1] = (unsigned char)(count >> 24);
    frame[2] = (unsigned char)(count >> 16);
    frame[3] = (unsigned char)(count >> 8);
    frame[4] = (unsigned char)count;
    assert_int_equal(s_check_exact(frame, 5 + count), 0);
    free(frame);
}

static void test_check_refusals(void **unused)
{
    (void)unused;
    const unsigned char frames[][4] = {
        {0xc1},             //  reserved tag
        {0x92, 0x01, 0xc1}, //  reserved tag inside an array
        {0x81, 0xc1, 0x01}, //  reserved tag as a map key
        {0xc0, 0x00},       //  nil then a trailing byte
        {0x90, 0x90},       //  two objects
        {0x92, 0x01},       //  array of two holding one
        {0x82, 0x01, 0x02}, //  map of two pairs holding one
        {0xcd, 0x01},       //  uint16 cut short
        {0xd9},             //  str8 without its length
        {0xd9, 0x03, 'a'},  //  str8 of 3 holding 1
        {0xc7, 0x01, 0x05}, //  ext8 of 1 without its data
    };
    const size_t sizes[] = {1, 3, 3, 2, 2, 2, 3, 2, 1, 3, 3};
    assert_int_equal(s_check_exact(NULL, 0), FQ_EDECODE);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (s_check_exact(frames[k], sizes[k]) != FQ_EDECODE)
            fail_msg("frame %zu accepted", k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_local_tell_round_trip, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_remote_ask_round_trip, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_missing_addresses_arrive_empty, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_raw_body_forwarding, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_head_of_each_array_form, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_no_body_is_nil, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_concatenated_frames_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_field_type_errors_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_field_count, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_non_array_root_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_every_truncation_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_random_frames, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_mutated_frames, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_huge_claims_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_deep_nesting_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_frame_size_limit, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_check_every_encoding, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_check_nested_and_truncated, s_setup, s_teardown),
        cmocka_unit_test(test_check_item_cap),
        cmocka_unit_test(test_check_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
