/*  fq_bench_msgs.c — generated codecs of the benchmark messages. */
#include "fq_bench_msgs.h"

#define FQ_SCHEMA_FILE "fq_bench_msgs.def"
#include "fq_schema_define.h"
