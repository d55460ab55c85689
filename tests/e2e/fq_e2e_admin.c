/*  fq_e2e_admin.c — the request lifecycle calls the end-to-end tests need.

        fq_e2e_admin [--database CONNINFO] cancel|pause|resume REQUEST_ID

    There is no SQL function for these yet: this calls the store's
    fq_store_request_cancel / _pause / _resume, as fairqd's HTTP API will.
    The connection comes from --database, else the PG* environment. Prints
    the call's result (messages cancelled, or 1/0 for pause and resume) and
    exits 0; exits 1 with the store's message on failure, 2 on bad usage. */
#include "fq_store.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_usage(void)
{
    fprintf(stderr, "Usage: fq_e2e_admin [--database CONNINFO] cancel|pause|resume REQUEST_ID\n");
    return 2;
}

int main(int argc, char *argv[])
{
    const char *conninfo = "";
    int arg = 1;
    if (arg < argc && strncmp(argv[arg], "--database=", 11) == 0)
        conninfo = argv[arg++] + 11;
    else if (arg + 1 < argc && strcmp(argv[arg], "--database") == 0) {
        conninfo = argv[arg + 1];
        arg += 2;
    }
    if (argc - arg != 2)
        return s_usage();
    const char *command = argv[arg];
    char *end;
    errno = 0;
    long long id = strtoll(argv[arg + 1], &end, 10);
    if (errno || *end || end == argv[arg + 1] || id <= 0)
        return s_usage();

    char error[512];
    fq_store_t *store = fq_store_new(conninfo, error, sizeof error);
    if (!store) {
        fprintf(stderr, "fq_e2e_admin: %s\n", error);
        return 1;
    }
    int rc;
    if (strcmp(command, "cancel") == 0)
        rc = fq_store_request_cancel(store, id);
    else if (strcmp(command, "pause") == 0)
        rc = fq_store_request_pause(store, id);
    else if (strcmp(command, "resume") == 0)
        rc = fq_store_request_resume(store, id);
    else {
        fq_store_destroy(&store);
        return s_usage();
    }
    if (rc < 0)
        fprintf(stderr, "fq_e2e_admin: %s\n", fq_store_error(store));
    else
        printf("%d\n", rc);
    fq_store_destroy(&store);
    return rc < 0 ? 1 : 0;
}
