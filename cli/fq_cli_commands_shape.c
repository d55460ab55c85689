/*  fq_cli_commands_shape.c — fairq shape: the waiting messages per tenant
    (or tenant and destination) by how long they have waited, one line
    each and a total line first, as Postfix's qshape prints a queue. */
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <stdlib.h>

//  API.md: edges of the age buckets in minutes, then one bucket over the
//  last; the columns are read from the answer, these bound them
#define S_BUCKETS_MAX 16
#define S_HEADER_SIZE 16

static const fq_cli_option_t s_options[] = {
    {"tenant", "NAME", "only this tenant's messages"},
    {"by-destination", NULL, "a line per tenant and destination"},
    {NULL, NULL, NULL}};

//  Prints answer as the table: TENANT [DESTINATION] TOTAL LATER and a
//  column per bucket, the sums on a first line named TOTAL.
static int s_print(const json_t *answer, bool by_destination)
{
    const json_t *edges = json_object_get(answer, "edges_minutes");
    const json_t *shape = json_object_get(answer, "shape");
    size_t buckets = json_array_size(edges) + 1;
    if (buckets > S_BUCKETS_MAX) {
        fq_cli_error("fairqd answered %zu age buckets, more than %d", buckets, S_BUCKETS_MAX);
        return FQ_CLI_EXIT_FAILED;
    }
    //  Headers: the names, then each bucket's upper edge ("5" = under 5
    //  minutes), the last one over the largest ("1280+")
    char names[S_BUCKETS_MAX][S_HEADER_SIZE];
    const char *headers[S_BUCKETS_MAX + 4];
    char align[S_BUCKETS_MAX + 5];
    size_t columns = 0;
    headers[columns] = "TENANT", align[columns++] = 'l';
    if (by_destination)
        headers[columns] = "DESTINATION", align[columns++] = 'l';
    headers[columns] = "TOTAL", align[columns++] = 'r';
    headers[columns] = "LATER", align[columns++] = 'r';
    for (size_t b = 0; b < buckets; b++) {
        json_int_t edge = json_integer_value(json_array_get(edges, b < buckets - 1 ? b : b - 1));
        snprintf(names[b], sizeof names[b], "%lld%s", (long long)edge, b < buckets - 1 ? "" : "+");
        headers[columns] = names[b], align[columns++] = 'r';
    }
    align[columns] = 0;
    fq_cli_table_t *table = fq_cli_table_new(headers, align);
    if (!table) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    json_int_t sums[S_BUCKETS_MAX + 2] = {0};
    size_t i;
    json_t *row;
    json_array_foreach(shape, i, row)
    {
        sums[0] += json_integer_value(json_object_get(row, "total"));
        sums[1] += json_integer_value(json_object_get(row, "later"));
        for (size_t b = 0; b < buckets; b++)
            sums[b + 2] += json_integer_value(json_array_get(json_object_get(row, "ages"), b));
    }
    fq_cli_table_add(table, "TOTAL");
    if (by_destination)
        fq_cli_table_add(table, "");
    for (size_t c = 0; c < buckets + 2; c++) {
        char n[S_HEADER_SIZE * 2];
        snprintf(n, sizeof n, "%lld", (long long)sums[c]);
        fq_cli_table_add(table, n);
    }
    json_array_foreach(shape, i, row)
    {
        fq_cli_table_add_json(table, json_object_get(row, "tenant"));
        if (by_destination)
            fq_cli_table_add_json(table, json_object_get(row, "destination"));
        fq_cli_table_add_json(table, json_object_get(row, "total"));
        fq_cli_table_add_json(table, json_object_get(row, "later"));
        for (size_t b = 0; b < buckets; b++)
            fq_cli_table_add_json(table, json_array_get(json_object_get(row, "ages"), b));
    }
    fq_cli_table_print(table, stdout, SIZE_MAX, "\n");
    fq_cli_table_destroy(&table);
    return FQ_CLI_EXIT_OK;
}

static int s_shape(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant = fq_cli_arg(args, "tenant");
    bool by_destination = fq_cli_flag(args, "by-destination");
    if (tenant && fq_cli_parse_tenant(tenant, "tenant"))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {
        {"tenant", tenant}, {"by", by_destination ? "destination" : NULL}, {NULL, NULL}};
    char *path = fq_cli_query_path("/v1/shape", query);
    if (!path) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    free(path);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK)
        rc = s_print(answer.json, by_destination);
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_shape = {
    .name = "shape",
    .usage = "[--tenant NAME] [--by-destination]",
    .summary = "the waiting messages by how long they have waited, as qshape shows a queue",
    .description =
        "A line per tenant (with --by-destination, per tenant and destination), most first,\n"
        "after a TOTAL line: the pending and failed messages of the unfinished requests,\n"
        "TOTAL of them, LATER not due yet (their request's send_at is ahead), then by the\n"
        "minutes they have waited since their request could first send: under 5, under 10,\n"
        "... and over 1280 (about 21 hours).",
    .options = s_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_shape};
