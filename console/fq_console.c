/*  fq_console.c — finds a console file by name (fq_console.h). */
#include "fq_console.h"
#include <string.h>

const fq_console_file_t *fq_console_find(const char *name)
{
    for (const fq_console_file_t *file = fq_console_files; file->name; file++)
        if (strcmp(file->name, name) == 0)
            return file;
    return NULL;
}
