/*  fq_test_msgs.h — typed messages of the runtime tests. */
#ifndef FQ_TEST_MSGS_H
#define FQ_TEST_MSGS_H

#define FQ_SCHEMA_FILE "fq_test_msgs.def"
#include "fq_schema_declare.h"
#undef FQ_SCHEMA_FILE

#endif
