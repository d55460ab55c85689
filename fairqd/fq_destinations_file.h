/*  fq_destinations_file.h — fairqd's destinations_file: destinations an
    operator keeps in a file rather than through the API.

        # NAME [rate=COUNT/UNIT|none] [burst=N] [max_inflight=N|none]
        #      [domains=DOMAIN,DOMAIN,...]
        google   rate=100/s burst=200 max_inflight=50 domains=gmail.com,googlemail.com
        yahoo    rate=5/min domains=yahoo.com
        default  rate=1000/h

    One destination a line: its name, then fields as KEY=VALUE, in any
    order, separated by spaces or tabs; every field but the name is
    optional, and one left out is none (no rate, the rate's default burst,
    no most in flight, no domains): a line says the whole destination, as
    a PUT does. '#' starts a comment, to the end of the line; blank lines
    are skipped. fairqd writes the file's destinations to the database at
    start and at each SIGHUP, all in one transaction (the store's
    fq_store_destination_put_all): those of the file replace what the API
    set for the same names, and those not in it are left alone.

    The parse is a pure function of the text; each fault is said as
    "PATH:LINE: ..." and nothing of a faulty file is used.
*/
#ifndef FQ_DESTINATIONS_FILE_H
#define FQ_DESTINATIONS_FILE_H

#include "fq_store_destinations.h"
#include <stddef.h>

//  Largest file read: some thousands of destinations with a thousand
//  domains each; a larger one is a mistake (a wrong path).
#define FQ_DESTINATIONS_FILE_MAX (16 * 1024 * 1024)

typedef struct {
    fq_destination_spec_t *specs; //  count of them, in the file's order
    int *lines;                   //  The line of each
    size_t count;
    char *text;           //  What their names and domains point into
    const char **domains; //  Every spec's domains, one after the other
} fq_destinations_file_t;

//  Parses the size bytes of text, the content of the file named path (for
//  the messages), into out (the caller frees it with
//  fq_destinations_file_free, also after a failure). Returns 0; FQ_EINVAL
//  with "PATH:LINE: why" in error (a bad name, field, rate, burst, most
//  in flight or domain, a name or a domain given twice, a burst without a
//  rate, domains for "default", more than FQ_DESTINATION_DOMAINS_MAX
//  domains); or FQ_ENOMEM.
int fq_destinations_file_parse(const char *text, size_t size, const char *path,
                               fq_destinations_file_t *out, char *error, size_t error_size);

//  Reads the file at path (at most FQ_DESTINATIONS_FILE_MAX bytes) and
//  parses it as fq_destinations_file_parse does. Returns its codes, or
//  FQ_EIO with "PATH: why" in error when it cannot be read.
int fq_destinations_file_read(const char *path, fq_destinations_file_t *out, char *error,
                              size_t error_size);

void fq_destinations_file_free(fq_destinations_file_t *file);

#endif
