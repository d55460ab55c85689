/*  fq_fairqd.c — what fairqd's start and its subcommand share (see
    fq_fairqd.h).
*/
#include "fq_fairqd.h"
#include "fq_db.h"
#include "fq_error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  How long one attempt to connect to PostgreSQL may take by default: long
//  enough for a database across a slow link, short enough that fairqd
//  retries (and stays responsive) rather than hang on an unreachable host.
#define S_CONNECT_TIMEOUT_S "10"

//  Copies text into out (size bytes), every occurrence of secret replaced
//  by mask.
static void s_replace_all(char *out, size_t size, const char *text, const char *secret,
                          size_t secret_len, const char *mask)
{
    size_t len = 0;
    out[0] = 0;
    while (*text && len + 1 < size) {
        const char *found = secret_len ? strstr(text, secret) : NULL;
        size_t plain = found ? (size_t)(found - text) : strlen(text);
        len +=
            (size_t)snprintf(out + len, size - len, "%.*s%s", (int)plain, text, found ? mask : "");
        text += plain + (found ? secret_len : 0);
        if (len >= size)
            len = size - 1;
    }
}

//  Checks that libpq can read a connection string key (database,
//  database_listen). Returns 0, or FQ_EINVAL with "ORIGIN: invalid value
//  for "KEY": REASON" in error. libpq's
//  reason may quote the string back (a URI whole, one of its parts): what
//  the printed form masks (fq_config_shown) is masked in it too, found as
//  the span where the two differ.
static int s_check_conninfo(fq_config_t *config, fq_fairqd_key_t key, char *error, size_t size)
{
    const char *conninfo = fq_config_str(config, key);
    char reason[FQ_FAIRQD_ERROR_MAX], hidden[FQ_FAIRQD_ERROR_MAX];
    if (fq_db_conninfo_check(conninfo, reason, sizeof reason) == 0)
        return 0;
    char *shown = fq_config_shown(config, key);
    snprintf(hidden, sizeof hidden, "%s", reason);
    if (shown && strcmp(shown, conninfo) != 0) {
        size_t len = strlen(conninfo), shown_len = strlen(shown), head = 0, tail = 0;
        while (head < len && head < shown_len && conninfo[head] == shown[head])
            head++;
        while (tail < len - head && tail < shown_len - head &&
               conninfo[len - 1 - tail] == shown[shown_len - 1 - tail])
            tail++;
        char mask[FQ_FAIRQD_ERROR_MAX];
        snprintf(mask, sizeof mask, "%.*s", (int)(shown_len - head - tail), shown + head);
        char *secret = strndup(conninfo + head, len - head - tail);
        if (secret)
            s_replace_all(hidden, sizeof hidden, reason, secret, strlen(secret), mask);
        else
            snprintf(hidden, sizeof hidden, "%s", mask);
        free(secret);
    }
    free(shown);
    snprintf(error, size, "%s: invalid value for \"%s\": %s", fq_config_origin(config, key),
             fq_config_key_name(config, key), hidden);
    return FQ_EINVAL;
}

int fq_fairqd_config_load(fq_config_t *config, int argc, char *const argv[], char *error,
                          size_t size)
{
    int rc = fq_config_load(config, argc, argv, NULL, error, size);
    //  Help, the version and a command read no settings
    bool loaded =
        fq_config_action(config) == FQ_CONFIG_RUN || fq_config_action(config) == FQ_CONFIG_PRINT;
    if (rc == 0 && loaded)
        rc = s_check_conninfo(config, FQ_FAIRQD_KEY_DATABASE, error, size);
    if (rc == 0 && loaded)
        rc = s_check_conninfo(config, FQ_FAIRQD_KEY_DATABASE_LISTEN, error, size);
    return rc;
}

void fq_fairqd_connect_timeout(void)
{
    setenv("PGCONNECT_TIMEOUT", S_CONNECT_TIMEOUT_S, 0);
}
