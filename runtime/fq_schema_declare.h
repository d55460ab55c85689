/*  fq_schema_declare.h — declares the types of the schema named by
    FQ_SCHEMA_FILE (see fq_schema.h). No include guard: included once per
    schema. */
#include "fq_schema.h"

#ifndef FQ_SCHEMA_FILE
#error "define FQ_SCHEMA_FILE before including fq_schema_declare.h"
#endif

#define FQ_U64(n)     uint64_t n;
#define FQ_I64(n)     int64_t n;
#define FQ_U32(n)     uint32_t n;
#define FQ_BOOL(n)    bool n;
#define FQ_DOUBLE(n)  double n;
#define FQ_STR(n)     const char *n;
#define FQ_STR_OPT(n) const char *n;
#define FQ_U32_OPT(n) uint32_t n;
#define FQ_BIN(n)     fq_bin_t n;
#define FQ_STRMAP(n)  fq_strmap_t n;
#define FQ_U64LIST(n) fq_u64list_t n;
#define FQ_LIST(n, low)                                                                            \
    struct {                                                                                       \
        uint32_t count;                                                                            \
        const fq_##low##_t *items;                                                                 \
    } n;
//  fq_unused_ keeps field-less messages valid C.
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    enum { FQ_MSG_##UP = (id) };                                                                   \
    typedef struct {                                                                               \
        char fq_unused_;                                                                           \
        fields                                                                                     \
    } fq_##low##_t;                                                                                \
    extern const fq_msgdesc_t fq_##low##_desc;                                                     \
    int fq_##low##_encode(const fq_##low##_t *msg, msgpack_packer *pk);                            \
    int fq_##low##_decode(const msgpack_object *obj, fq_##low##_t *msg, msgpack_zone *zone);
#include FQ_SCHEMA_FILE
#include "fq_schema_undef.h"
