/*  fq_fairqd_keys.c — fairqd's schema: its key table and the checks
    between its keys (see fq_fairqd_keys.h). */
#include "fq_fairqd_keys.h"
#include "fq_address.h"
#include "fq_error.h"
#include "fq_fairqd.h"
#include "fq_recipients.h"
#include "fq_store.h"
#include <ctype.h>
#include <string.h>
#include <strings.h>

//  What an unsubscribe_url may start with: https, or http for a host that
//  is this machine (a development setup, where no link leaves it). A link
//  in mail is followed by mail clients and link scanners across the
//  internet: in clear, its token could be read and replayed on the way.
static const char *const s_unsubscribe_schemes[] = {
    "https://",          "http://localhost:", "http://localhost/", "http://127.0.0.1:",
    "http://127.0.0.1/", "http://[::1]:",     "http://[::1]/"};
#define S_UNSUBSCRIBE_SCHEMES (sizeof s_unsubscribe_schemes / sizeof *s_unsubscribe_schemes)

//  Longest unsubscribe_url: with "/u/" and the longest token the link
//  stays well within one List-Unsubscribe line (998 characters).
#define S_UNSUBSCRIBE_URL_MAX 256

//  Why url is no unsubscribe_url, or NULL: one of the schemes above, a
//  host, printable ASCII without spaces, quotes, angle brackets, '?' or
//  '#' (a token is appended to its path, and it goes between <> in a
//  header and into an HTML attribute).
static const char *s_unsubscribe_url_problem(const char *url)
{
    size_t len = strlen(url);
    bool scheme = false;
    for (size_t i = 0; i < S_UNSUBSCRIBE_SCHEMES; i++)
        scheme |= strncasecmp(url, s_unsubscribe_schemes[i], strlen(s_unsubscribe_schemes[i])) == 0;
    if (!scheme)
        return "it must start with https:// (http:// only for localhost, 127.0.0.1 or [::1])";
    if (len > S_UNSUBSCRIBE_URL_MAX)
        return "it is longer than 256 characters";
    if (len <= strlen("https://"))
        return "it names no host";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)url[i];
        if (!isascii(c) || !isgraph(c) || strchr("\"'<>?#\\`", c))
            return "it holds a space, a quote, <, >, ?, # or a byte that is not printable ASCII";
    }
    return NULL;
}

//  A heartbeat timeout covers at least this many heartbeats, so that one
//  late heartbeat does not make a live sender worker dead.
#define S_HEARTBEAT_TIMEOUT_FACTOR 2

static const fq_config_key_t s_keys[] = {
#define X(...) FQ_CONFIG_KEY("FAIRQ_", __VA_ARGS__)
    FQ_FAIRQD_KEYS(X)
#undef X
};

//  One-click unsubscribe's keys go together: a listener serves links that
//  name it (its URL), a link is sealed by the secret, and a mailto goes
//  beside a link. The secret file itself is read when fairqd starts.
static int s_check_unsubscribe(fq_config_t *config, char *error, size_t size)
{
    char quoted[FQ_CONFIG_QUOTED_SIZE];
    const char *listen = fq_config_str(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_LISTEN);
    const char *url = fq_config_str(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_URL);
    const char *secret = fq_config_str(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_SECRET_FILE);
    const char *mailto = fq_config_str(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_MAILTO);
    if (*listen && !*url)
        return fq_config_error(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_LISTEN, error, size,
                               "unsubscribe_listen needs unsubscribe_url, the public https:// "
                               "URL recipients reach the listener by");
    const char *problem = *url ? s_unsubscribe_url_problem(url) : NULL;
    if (problem)
        return fq_config_error(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_URL, error, size,
                               "invalid value for \"unsubscribe_url\": %s: %s",
                               fq_config_quote(quoted, url), problem);
    if (*url && !*secret)
        return fq_config_error(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_URL, error, size,
                               "unsubscribe_url needs unsubscribe_secret_file, the secret that "
                               "seals its links");
    if (*mailto && !*url)
        return fq_config_error(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_MAILTO, error, size,
                               "unsubscribe_mailto needs unsubscribe_url: the mailto goes "
                               "beside a one-click link, not alone");
    problem = *mailto ? fq_recipient_address_problem(mailto, strlen(mailto)) : NULL;
    if (problem)
        return fq_config_error(config, FQ_FAIRQD_KEY_UNSUBSCRIBE_MAILTO, error, size,
                               "invalid value for \"unsubscribe_mailto\": %s: %s",
                               fq_config_quote(quoted, mailto), problem);
    return 0;
}

static int s_check(fq_config_t *config, char *error, size_t size)
{
    char quoted[FQ_CONFIG_QUOTED_SIZE];
    const char *name = fq_config_str(config, FQ_FAIRQD_KEY_NAME);
    if (!fq_name_valid(name))
        return fq_config_error(config, FQ_FAIRQD_KEY_NAME, error, size,
                               "invalid value for \"name\": %s is not a valid system name (1 to "
                               "%d letters, digits, '.', '_' or '-')",
                               fq_config_quote(quoted, name), FQ_NAME_MAX);
    int rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_DATABASE_RETRY_MAX_MS,
                                      FQ_FAIRQD_KEY_DATABASE_RETRY_MIN_MS, 1, error, size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HEARTBEAT_TIMEOUT_MS,
                                      FQ_FAIRQD_KEY_HEARTBEAT_MS, S_HEARTBEAT_TIMEOUT_FACTOR, error,
                                      size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_RETRY_CAP_MS,
                                      FQ_FAIRQD_KEY_RETRY_BASE_MS, 1, error, size);
    //  The HTTP server shares its connections among its threads, each
    //  taking at least one; one address may not be allowed more than all
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX,
                                      FQ_FAIRQD_KEY_HTTP_THREADS, 1, error, size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX,
                                      FQ_FAIRQD_KEY_HTTP_CONNECTIONS_PER_IP, 1, error, size);
    if (rc)
        return rc;
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE], problem[256];
    if (fq_store_bounce_pattern(fq_config_str(config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES), pattern,
                                problem, sizeof problem) != 0)
        return fq_config_error(config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES, error, size,
                               "invalid value for \"suppress_bounces\": %s", problem);
    rc = s_check_unsubscribe(config, error, size);
    if (rc)
        return rc;
    if (*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_BIND) &&
        !fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE)) {
        if (!*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_CERT))
            return fq_config_error(config, FQ_FAIRQD_KEY_GATEWAY_BIND, error, size,
                                   "gateway_bind needs gateway_cert, the gateway's CURVE "
                                   "certificate (or gateway_insecure = true, for development "
                                   "only)");
        if (!*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_ALLOW_DIR))
            return fq_config_error(config, FQ_FAIRQD_KEY_GATEWAY_BIND, error, size,
                                   "gateway_bind needs gateway_allow_dir, the directory of the "
                                   "sender workers' public certificates (or gateway_insecure = "
                                   "true, for development only)");
    }
    return 0;
}

static const fq_config_command_t s_commands[] = {
    [FQ_FAIRQD_COMMAND_MAKE_CERT] = {"make_cert", "PATH",
                                     "write a new CURVE certificate for gateway_cert to PATH "
                                     "(public) and PATH_secret, then exit"},
};

const fq_config_schema_t fq_fairqd_schema = {
    .program = FQ_FAIRQD_PROGRAM,
    .synopsis = "[--config PATH] [--KEY=VALUE ...]",
    .env_prefix = "FAIRQ_",
    .env_file = "FAIRQ_CONFIG",
    .keys = s_keys,
    .key_count = FQ_FAIRQD_KEY_COUNT,
    .commands = s_commands,
    .command_count = sizeof s_commands / sizeof s_commands[0],
    .check = s_check,
};
