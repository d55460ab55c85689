/*  fq_test_msgs.c — generated codecs of the test messages. */
#include "fq_test_msgs.h"

#define FQ_SCHEMA_FILE "fq_test_msgs.def"
#include "fq_schema_define.h"
