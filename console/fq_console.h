/*  fq_console.h — the web console's static files, as built into fairqd
    (console/CMakeLists.txt; what the console is: docs/console.md).

    The files are what a browser loads from GET /console: the page, its
    style and its scripts. They hold no data; every figure they show they
    fetch from the HTTP API with the token the user pasted. */
#ifndef FQ_CONSOLE_H
#define FQ_CONSOLE_H

#include <stddef.h>

typedef struct {
    const char *name; //  As in the path: "console.js" is GET /console/console.js
    const char *type; //  Its Content-Type
    const char *data; //  size bytes, then a NUL
    size_t size;
} fq_console_file_t;

//  The page the console starts from.
#define FQ_CONSOLE_INDEX "index.html"

//  Every file, ended by an entry whose name is NULL (written at build time
//  by fq_console_embed.cmake; look one up with fq_console_find).
extern const fq_console_file_t fq_console_files[];

//  The file of that name, or NULL when there is none.
const fq_console_file_t *fq_console_find(const char *name);

#endif
