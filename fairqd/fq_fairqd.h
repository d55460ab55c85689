/*  fq_fairqd.h — what fairqd's start (fairqd.c) and its subcommand
    (fq_token_command.c) share: the exit codes, and the configuration read
    the same way by both, so that "fairqd token create" finds the database
    exactly where the daemon does.
*/
#ifndef FQ_FAIRQD_H
#define FQ_FAIRQD_H

#include "fq_fairqd_keys.h"
#include <stddef.h>

#define FQ_FAIRQD_PROGRAM "fairqd"

//  The version, passed by CMake from project(fairq VERSION ...), the one
//  place it is written; what --version prints and the log says at start.
#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

//  The exit codes of every fairqd command line. Under systemd,
//  RestartPreventExitStatus=2 3: restarting does not mend a configuration
//  or an old binary.
typedef enum {
    FQ_FAIRQD_EXIT_OK = 0,      //  Stopped by SIGTERM or SIGINT; --help, --print-config; done
    FQ_FAIRQD_EXIT_FAILURE = 1, //  Could not start or finish (the database), or a failure escalated
    FQ_FAIRQD_EXIT_CONFIG = 2,  //  The configuration or the command line is wrong
    FQ_FAIRQD_EXIT_SCHEMA = 3,  //  The database's schema is newer than this program
    FQ_FAIRQD_EXIT_DEPOSED = 4, //  It led, and another fairqd took over: start again as a standby
} fq_fairqd_exit_t;

//  Room for an error message from the configuration or the store.
#define FQ_FAIRQD_ERROR_MAX 1024

//  Loads config (of fq_fairqd_schema) from argv (argv[0] is the program)
//  and the environment, as fq_config_load does, then, when the settings
//  were read (not for --help or --version), checks that libpq can read
//  the database keys (database, database_listen): a connection string it
//  cannot read is a mistake of the configuration, never retried.
//  fairqd's start and its reload on SIGHUP both use it. Returns 0,
//  FQ_EINVAL with the reason in error ("ORIGIN: ..."; a password in it
//  masked), or FQ_ENOMEM.
int fq_fairqd_config_load(fq_config_t *config, int argc, char *const argv[], char *error,
                          size_t size);

//  Bounds how long one attempt to connect to PostgreSQL may take, unless
//  the environment (PGCONNECT_TIMEOUT) or the connection string says:
//  libpq otherwise waits for an unreachable host as long as TCP does
//  (minutes). Call before any thread starts (setenv is not thread-safe).
void fq_fairqd_connect_timeout(void);

#endif
