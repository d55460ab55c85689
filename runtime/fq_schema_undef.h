/*  fq_schema_undef.h — clears the field macros between schema passes. */
#undef FQ_U64
#undef FQ_I64
#undef FQ_U32
#undef FQ_BOOL
#undef FQ_DOUBLE
#undef FQ_STR
#undef FQ_STR_OPT
#undef FQ_U32_OPT
#undef FQ_BIN
#undef FQ_STRMAP
#undef FQ_U64LIST
#undef FQ_LIST
#undef FQ_MESSAGE
