/*  fq_cli_commands_token.c — token create: a bearer token straight into
    PostgreSQL, through the store (sql/fq_store.h), to bootstrap: the
    first admin token cannot come from the API, which needs one.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_error.h"
#include "fq_store.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Room for the store's error text
#define S_ERROR_SIZE 512

//  The environment variable that may hold --database
#define S_DATABASE_ENV "FAIRQ_DATABASE"

static const fq_cli_option_t s_token_options[] = {
    {"admin", NULL, "an admin token: sees and changes everything"},
    {"tenant", "NAME", "a token of this tenant only (instead of --admin)"},
    {"database", "CONNINFO",
     "libpq connection string (default $FAIRQ_DATABASE, else the PG* environment)"},
    {NULL, NULL, NULL}};

//  The exit code for a store error (fq_cli.h's table).
static int s_exit_for(int err)
{
    switch (err) {
    case FQ_ENOTFOUND:
        return FQ_CLI_EXIT_NOT_FOUND;
    case FQ_EINVAL:
        return FQ_CLI_EXIT_FAILED;
    default:
        //  FQ_EDB: the database is away or refused us
        return FQ_CLI_EXIT_SERVER;
    }
}

static int s_token_create(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant = fq_cli_arg(args, "tenant");
    bool admin = fq_cli_flag(args, "admin");
    if (admin == (tenant != NULL)) {
        fq_cli_error("token create needs --admin or --tenant NAME (one of them)");
        return FQ_CLI_EXIT_USAGE;
    }
    if (tenant && fq_cli_parse_tenant(tenant, "tenant"))
        return FQ_CLI_EXIT_USAGE;
    const char *database = fq_cli_arg(args, "database");
    if (!database)
        database = getenv(S_DATABASE_ENV);
    char error[S_ERROR_SIZE];
    fq_store_t *store = fq_store_new(database ? database : "", error, sizeof error);
    if (!store) {
        fq_cli_error("%s", error);
        return FQ_CLI_EXIT_SERVER;
    }
    //  A fresh database gets its schema, as fairqd would give it at start
    //  (under the same lock); a schema newer than this program is fine,
    //  the tokens table is in it
    int rc = fq_store_migrate(store);
    if (rc < 0 && rc != FQ_ESCHEMA) {
        fq_cli_error("%s", fq_store_error(store));
        fq_store_destroy(&store);
        return s_exit_for(rc);
    }
    char token[FQ_STORE_TOKEN_SIZE];
    rc = fq_store_token_create(store, tenant, token, sizeof token, NULL);
    if (rc != 0) {
        if (rc == FQ_ENOTFOUND)
            fq_cli_error("no tenant \"%s\" (create it first: fairq tenants set %s)", tenant,
                         tenant);
        else
            fq_cli_error("%s", fq_store_error(store));
        fq_store_destroy(&store);
        return s_exit_for(rc);
    }
    fq_store_destroy(&store);
    if (cli->json) {
        json_t *answer = json_pack("{s:o, s:s}", "tenant",
                                   tenant ? json_string(tenant) : json_null(), "token", token);
        if (answer)
            fq_cli_print_json(answer);
        json_decref(answer);
    } else
        //  The token alone, so that TOKEN=$(fairq token create --admin) works
        puts(token);
    memset(token, 0, sizeof token);
    return FQ_CLI_EXIT_OK;
}

const fq_cli_command_t fq_cli_cmd_token_create = {
    .name = "token create",
    .usage = "--admin | --tenant NAME [--database CONNINFO]",
    .summary = "make a token straight in the database (bootstrap); shown once",
    .description = "Needs no fairqd and no token: it writes to PostgreSQL itself (applying the\n"
                   "schema to a fresh database first). Prints the token alone on a line.",
    .options = s_token_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_token_create};
