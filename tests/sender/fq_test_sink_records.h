/*  fq_test_sink_records.h — what a sink of the sender tests received: the
    JSON lines it appends to its output file (tests/e2e/smtp_sink.py and
    http_sink.py write one record per message or request). Include after
    <cmocka.h>. */
#ifndef FQ_TEST_SINK_RECORDS_H
#define FQ_TEST_SINK_RECORDS_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

//  The records in path so far, as a JSON array (empty before the first).
static inline json_t *fq_test_sink_records(const char *path)
{
    json_t *records = json_array();
    FILE *file = fopen(path, "r");
    if (!file)
        return records; //  Nothing accepted yet
    char *line = NULL;
    size_t size = 0;
    while (getline(&line, &size, file) > 0) {
        json_error_t error;
        json_t *record = json_loads(line, 0, &error);
        if (!record)
            fail_msg("sink wrote bad JSON: %s", error.text);
        json_array_append_new(records, record);
    }
    free(line);
    fclose(file);
    return records;
}

//  The string field name of record; the test fails without one.
static inline const char *fq_test_record_field(json_t *record, const char *name)
{
    const char *value = json_string_value(json_object_get(record, name));
    if (!value)
        fail_msg("record has no string \"%s\"", name);
    return value;
}

#endif
