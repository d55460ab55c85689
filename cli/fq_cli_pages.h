/*  fq_cli_pages.h — lists that the API answers a page at a time (requests,
    messages, rejects): the query that asks for one, and following the
    pages to the end (--all).
*/
#ifndef FQ_CLI_PAGES_H
#define FQ_CLI_PAGES_H

#include "fq_cli.h"
#include <stddef.h>
#include <jansson.h>
#include <stdbool.h>

//  Most parameters one query has
#define FQ_CLI_QUERY_MAX 16

//  A query parameter; a NULL value is left out. Arrays of them end with
//  {NULL, NULL}.
typedef struct {
    const char *key;
    const char *value;
} fq_cli_query_t;

//  path with the query's parameters (escaped), malloc'd; NULL when out of
//  memory.
char *fq_cli_query_path(const char *path, const fq_cli_query_t *query);

//  GETs path with query, a page of {array_key: [...], next_key: N|null}.
//  With all, asks again with param=N while next_key is a number, and
//  gathers the arrays. *document is then the first page with the array of
//  every page and next_key null (without all: the page as it came); the
//  caller decrefs it. Returns the exit code (errors printed).
int fq_cli_pages(fq_cli_t *cli, const char *path, const fq_cli_query_t *query,
                 const char *array_key, const char *next_key, const char *param, bool all,
                 json_t **document);

//  How a page is shown to people: a column per key of each item.
typedef struct {
    const char *array_key;      //  The items ("requests")
    const char *const *headers; //  One per column
    const char *const *keys;    //  The item's key of each column
    size_t columns;
    const char *align;    //  "l" or "r" per column
    const char *next_key; //  The page's cursor ("next_after")
    const char *more;     //  printf format of the hint, with %lld for the cursor
} fq_cli_page_view_t;

//  Prints document as the API gave it (--json), or its items as an aligned
//  table on stdout and, when the page has a next cursor, the view's hint
//  on stderr. Takes document. Returns the exit code.
int fq_cli_pages_print(fq_cli_t *cli, json_t *document, const fq_cli_page_view_t *view);

#endif
