/*  fq_bench_msgs.h — typed messages of the runtime benchmark. */
#ifndef FQ_BENCH_MSGS_H
#define FQ_BENCH_MSGS_H

#define FQ_SCHEMA_FILE "fq_bench_msgs.def"
#include "fq_schema_declare.h"
#undef FQ_SCHEMA_FILE

#endif
