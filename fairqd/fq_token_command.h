/*  fq_token_command.h — "fairqd token create": a bearer token of the HTTP
    API made straight in the database, to bootstrap. The first admin token
    cannot come from the API, which needs one; so it comes from the program
    that has the database, on the host that reaches it. Every later token
    is better made through the API (fairq tenants token).

        fairqd token create --admin | --tenant NAME [--json]
                            [--config PATH] [--KEY=VALUE ...]

    The database is found as fairqd finds it (fq_fairqd.h: defaults <
    config file < environment < flags; --database, FAIRQ_DATABASE, or the
    PG* environment). Like fairqd's start, the command applies the
    migrations the database lacks, and refuses a schema newer than this
    program. It connects once: an unreachable database is an error, not
    waited for.

    The token goes to stdout alone on a line (TOKEN=$(fairqd token create
    --admin) works), or with --json as {"tenant": NAME or null, "token":
    "fq_..."}; it is shown this once, only its hash is kept. Errors go to
    stderr as "fairqd token create: ...". Exit codes are fairqd's
    (fq_fairqd.h): 0 made; 1 the database could not be reached or refused
    (no such tenant among others); 2 a usage or configuration error; 3 the
    database's schema is newer than this program.
*/
#ifndef FQ_TOKEN_COMMAND_H
#define FQ_TOKEN_COMMAND_H

#include <stdio.h>

//  The first argument that makes fairqd this command rather than the daemon.
#define FQ_TOKEN_COMMAND "token"

//  Runs the command: argv[0] is FQ_TOKEN_COMMAND, argv[1] the subcommand
//  ("create"), then its options. Borrows argv. Returns the exit code.
int fq_token_command(int argc, char *argv[]);

//  Writes the lines fairqd's --help adds about the command.
void fq_token_command_summary(FILE *out);

#endif
