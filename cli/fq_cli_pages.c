/*  fq_cli_pages.c — paged lists of the API. */
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Room for a page cursor: a 63-bit id in decimal and its NUL
#define S_CURSOR_SIZE 24

char *fq_cli_query_path(const char *path, const fq_cli_query_t *query)
{
    char *out = strdup(path);
    for (size_t i = 0; out && query && query[i].key; i++)
        if (query[i].value && fq_cli_url_add_query(&out, query[i].key, query[i].value) != 0) {
            free(out);
            out = NULL;
        }
    return out;
}

//  One page: GET path with query and param=cursor (when cursor is set).
static int s_page(fq_cli_t *cli, const char *path, const fq_cli_query_t *query, const char *param,
                  const char *cursor, const char *array_key, json_t **page)
{
    char *full = fq_cli_query_path(path, query);
    if (full && cursor && fq_cli_url_add_query(&full, param, cursor) != 0) {
        free(full);
        full = NULL;
    }
    if (!full) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", full, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && !json_is_array(json_object_get(answer.json, array_key))) {
        fq_cli_error("the server answered GET %s without a \"%s\" array", full, array_key);
        rc = FQ_CLI_EXIT_SERVER;
    }
    if (rc == FQ_CLI_EXIT_OK)
        *page = json_incref(answer.json);
    fq_cli_answer_reset(&answer);
    free(full);
    return rc;
}

int fq_cli_pages(fq_cli_t *cli, const char *path, const fq_cli_query_t *query,
                 const char *array_key, const char *next_key, const char *param, bool all,
                 json_t **document)
{
    *document = NULL;
    json_t *first = NULL;
    int rc = s_page(cli, path, query, param, NULL, array_key, &first);
    if (rc != FQ_CLI_EXIT_OK || !all) {
        *document = first;
        return rc;
    }
    //  A cursor given in the query is replaced by each next page's
    fq_cli_query_t rest[FQ_CLI_QUERY_MAX + 1];
    size_t n = 0;
    for (size_t i = 0; query && query[i].key && n < FQ_CLI_QUERY_MAX; i++)
        if (strcmp(query[i].key, param) != 0)
            rest[n++] = query[i];
    rest[n] = (fq_cli_query_t){0};
    json_t *items = json_object_get(first, array_key);
    json_t *next = json_object_get(first, next_key);
    json_int_t previous = -1;
    while (json_is_integer(next)) {
        //  A server that gives the same cursor twice would loop forever
        if (json_integer_value(next) == previous) {
            fq_cli_error("the server gave the same %s twice (%lld)", next_key, (long long)previous);
            rc = FQ_CLI_EXIT_SERVER;
            break;
        }
        previous = json_integer_value(next);
        char cursor[S_CURSOR_SIZE];
        snprintf(cursor, sizeof cursor, "%lld", (long long)previous);
        json_t *page = NULL;
        rc = s_page(cli, path, rest, param, cursor, array_key, &page);
        if (rc != FQ_CLI_EXIT_OK)
            break;
        json_array_extend(items, json_object_get(page, array_key));
        json_t *cursor_next = json_object_get(page, next_key);
        json_object_set_new(first, next_key, cursor_next ? json_incref(cursor_next) : json_null());
        json_decref(page);
        next = json_object_get(first, next_key);
    }
    if (rc != FQ_CLI_EXIT_OK) {
        json_decref(first);
        return rc;
    }
    *document = first;
    return rc;
}

int fq_cli_pages_print(fq_cli_t *cli, json_t *document, const fq_cli_page_view_t *view)
{
    if (cli->json) {
        fq_cli_print_json(document);
        json_decref(document);
        return FQ_CLI_EXIT_OK;
    }
    fq_cli_table_t *table = fq_cli_table_new(view->headers, view->align);
    if (!table) {
        json_decref(document);
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(document, view->array_key), i, item)
    {
        for (size_t k = 0; k < view->columns; k++)
            fq_cli_table_add_json(table, json_object_get(item, view->keys[k]));
    }
    fq_cli_table_print(table, stdout, SIZE_MAX, "\n");
    json_t *next = json_object_get(document, view->next_key);
    if (json_is_integer(next)) {
        fprintf(stderr, view->more, (long long)json_integer_value(next));
        fputc('\n', stderr);
    }
    fq_cli_table_destroy(&table);
    json_decref(document);
    return FQ_CLI_EXIT_OK;
}
